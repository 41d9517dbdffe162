"""The NumPy front ends of the data-generation family: `fill_value_constant`,
`fill_value_sequence` (DirectML's FILL_VALUE_CONSTANT and FILL_VALUE_SEQUENCE over a shape)
and `one_hot` (ONE_HOT with TensorFlow's signature: a depth and an axis that may be
negative), each returning a NumPy array."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ..base.errors import InvalidArgumentError, UnsupportedError, shown
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType, data_type_for_numpy
from ..ops.generation import FillValueConstantOperatorDesc, FillValueSequenceOperatorDesc, OneHotOperatorDesc
from ..runtime.binding import MINIMUM_BUFFER_TENSOR_ALIGNMENT
from ..runtime.device import Device
from .arrays import as_array, as_device, whole_row_pieces
from .call_cache import run_bound


def _shape(shape, name: str = "shape") -> tuple[int, ...]:
    values = (shape,) if isinstance(shape, (int, np.integer)) else shape
    try:
        values = tuple(values)
    except TypeError:
        raise InvalidArgumentError(f"{name} {shown(shape)} must be an int or a tuple of ints", name) from None
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0 for n in values):
        raise InvalidArgumentError(f"{name} {shown(shape)} must be non-negative ints", name)
    return tuple(int(n) for n in values)


def _data_type(dtype: DTypeLike) -> tuple[np.dtype, TensorDataType]:
    try:
        numpy_dtype = np.dtype(dtype)
    except TypeError:
        raise InvalidArgumentError(f"dtype {shown(dtype)} is not a NumPy dtype", "dtype") from None
    data_type = data_type_for_numpy(numpy_dtype)
    if data_type is None:
        raise InvalidArgumentError(f"dtype {numpy_dtype} has no TensorDataType", "dtype")
    return numpy_dtype, data_type


def _run(desc, inputs: list[np.ndarray], shape: tuple[int, ...], dtype: np.dtype, device: Device | None) -> np.ndarray:
    device = as_device(device)
    compiled = device.compile_cached(desc)
    result = np.empty(shape, dtype)

    def work(binding):
        for buffer, values in zip(binding.buffers, inputs):
            buffer.write(np.ascontiguousarray(values).reshape(-1))
        device.execute(binding.table)
        result[...] = binding.buffers[-1].read(dtype, result.size).reshape(shape)

    run_bound(device, compiled, None, work)
    return result


def _fill(desc_for, shape, dtype, device, start_of=None) -> np.ndarray:
    """`desc_for(output, data_type)`'s array. Past a buffer segment it is filled in pieces of
    the flattened array where `start_of(first)` gives a piece's fields (its `start`), else
    refused: a float sequence's element is start + i * delta with i the element's own index."""
    shape = _shape(shape)
    numpy_dtype, data_type = _data_type(dtype)
    sizes = tuple(max(n, 1) for n in shape) or (1,)
    desc = desc_for(BufferTensorDesc(data_type, sizes), data_type)  # validated even when empty
    if 0 in shape:  # DirectML's sizes are at least 1: NumPy's empty result
        return np.empty(shape, numpy_dtype)
    device = as_device(device)
    limit = device.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    count = math.prod(sizes)
    if count * np.dtype(numpy_dtype).itemsize <= limit:
        return _run(desc, [], shape, numpy_dtype, device)
    step = limit // np.dtype(numpy_dtype).itemsize
    if start_of is None:
        raise UnsupportedError(f"{desc.schema.name} writes {count} {data_type.name} elements at once, each from its "
                               f"own index, and this device binds at most {limit} bytes of a tensor at once "
                               f"(maxStorageBufferRange): take at most {step} elements per call")
    flat = np.empty(count, numpy_dtype)
    for first in range(0, count, step):
        piece = BufferTensorDesc(data_type, (min(step, count - first),))
        flat[first:first + step] = _run(desc_for(piece, data_type, *start_of(first)), [], piece.sizes, numpy_dtype,
                                        device)
    return flat.reshape(shape)


def fill_value_constant(shape: int | tuple[int, ...], value: float | int, dtype: DTypeLike, *,
                        device: Device | None = None) -> np.ndarray:
    """DML_OPERATOR_FILL_VALUE_CONSTANT: an array of `shape` and `dtype` whose every element is
    `value` (a number for a float dtype, rounded once from FP32; an int of the dtype's width
    for an integer one, -1 a uint8's 255). Shape () is one element."""
    return _fill(lambda output, data_type: FillValueConstantOperatorDesc(output, data_type, value),
                 shape, dtype, device, start_of=lambda first: ())


def fill_value_sequence(shape: int | tuple[int, ...], start: float | int, delta: float | int, dtype: DTypeLike, *,
                        device: Device | None = None) -> np.ndarray:
    """DML_OPERATOR_FILL_VALUE_SEQUENCE: element i, in row-major order, is `start + i * delta`
    (floats: in FP32, each operation rounded, then rounded once to `dtype`; element 0 is
    `start`; integers wrap modulo 2**bits)."""
    def desc_for(output, data_type, first_value=start):
        return FillValueSequenceOperatorDesc(output, data_type, first_value, delta)

    # An integer sequence wraps modulo 2**bits, so a piece may start at its first element's
    # value exactly; a float one rounds start + i * delta with i its own index.
    numpy_dtype = np.dtype(_data_type(dtype)[0])

    def start_of(first: int) -> tuple[int]:
        bits = numpy_dtype.itemsize * 8
        wrapped = (int(start) + first * int(delta)) % (1 << bits)
        return (wrapped - (1 << bits) if numpy_dtype.kind == "i" and wrapped >> (bits - 1) else wrapped,)

    return _fill(desc_for, shape, dtype, device, start_of=start_of if numpy_dtype.kind in "iu" else None)


def _indices(indices: ArrayLike) -> np.ndarray:
    array = as_array(indices, "indices")
    if array.dtype not in (np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64)):
        raise InvalidArgumentError(f"indices have dtype {array.dtype}: one_hot takes int32, uint32, int64 or uint64 "
                                   "indices", "indices")
    return array


def one_hot(indices: ArrayLike, depth: int, values: ArrayLike = (0, 1), axis: int = -1, *,
            device: Device | None = None) -> np.ndarray:
    """DML_OPERATOR_ONE_HOT: `indices`' shape with a dim of `depth` inserted at `axis` (-1: last),
    `values[1]` (on) where the position along it is the index (a negative index counts from the
    end; one out of range leaves the row off) and `values[0]` (off) elsewhere. `values`' dtype is
    the result's; a list or tuple of Python numbers becomes float32."""
    index_array = _indices(indices)
    value_array = as_array(values, "values")
    if not isinstance(values, np.ndarray) and value_array.dtype.kind in "iuf":
        value_array = value_array.astype(np.float32)
    if value_array.size != 2 or value_array.ndim != 1:
        raise InvalidArgumentError(f"values {shown(values)} must be two values, (off, on)", "values")
    if not isinstance(depth, (int, np.integer)) or isinstance(depth, bool) or depth < 1:
        raise InvalidArgumentError(f"depth {shown(depth)} must be an int of at least 1", "depth")
    ndim = index_array.ndim + 1
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or not -ndim <= axis < ndim:
        raise InvalidArgumentError(f"axis {shown(axis)} must be an int in [{-ndim}, {ndim - 1}] (the result has "
                                   f"{ndim} dims)", "axis")
    axis = int(axis) % ndim
    sizes = (*index_array.shape[:axis], int(depth), *index_array.shape[axis:])
    index_sizes = (*index_array.shape[:axis], 1, *index_array.shape[axis:])
    numpy_dtype, data_type = _data_type(value_array.dtype)
    if 0 in sizes:
        return np.empty(sizes, numpy_dtype)
    device = as_device(device)
    limit = device.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    itemsize = max(np.dtype(numpy_dtype).itemsize, index_array.dtype.itemsize)
    if math.prod(sizes) * itemsize > limit:  # pieces along the indices: each row of `depth` is its index's
        result = np.empty(sizes, numpy_dtype)
        for piece in whole_row_pieces(sizes, {axis}, itemsize, limit, "one_hot", "writes"):
            result[piece] = one_hot(index_array[piece[:axis] + piece[axis + 1:]], depth, value_array, axis,
                                    device=device)
        return result
    desc = OneHotOperatorDesc(BufferTensorDesc(data_type_for_numpy(index_array.dtype), index_sizes),
                              BufferTensorDesc(data_type, (1,) * (ndim - 1) + (2,)),
                              BufferTensorDesc(data_type, sizes), axis)
    return _run(desc, [index_array, value_array], sizes, numpy_dtype, device)


FRONT_ENDS = {"fill_value_constant": fill_value_constant, "fill_value_sequence": fill_value_sequence,
              "one_hot": one_hot}
