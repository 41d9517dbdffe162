"""NumPy front end: run an operator on arrays with a module-level default device.

Arrays are not made contiguous: each becomes a desc whose element strides match the
array's, over the span of memory the array covers, uploaded once. See README, "NumPy".
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .codegen import merge_dims
from .device import CompiledOperator, Device, create_device
from .errors import InvalidArgumentError
from .operators import ActivationReluGradOperatorDesc
from .tensor_desc import MAX_DIMENSION_COUNT, BufferTensorDesc
from .types import data_type_for_numpy

_default_device: Device | None = None
_lock = threading.Lock()
_compiled: OrderedDict[tuple[int, object], CompiledOperator] = OrderedDict()
_COMPILED_CACHE_SIZE = 256


def default_device() -> Device:
    """The device the front end uses when none is given (created on first use)."""
    global _default_device
    with _lock:
        if _default_device is None or _default_device._closed:
            _default_device = create_device()
        return _default_device


def _compile(device: Device, desc) -> CompiledOperator:
    """Compiled operators are kept per (device, desc), least recently used dropped first."""
    key = (id(device), desc)
    with _lock:
        compiled = _compiled.get(key)
        if compiled is not None and compiled.device is device:
            _compiled.move_to_end(key)
            return compiled
    compiled = device.compile_operator(device.create_operator(desc))
    with _lock:
        _compiled[key] = compiled
        while len(_compiled) > _COMPILED_CACHE_SIZE:
            _compiled.popitem(last=False)
    return compiled


def _as_array(value, name: str) -> np.ndarray:
    try:
        array = np.asarray(value)
    except Exception as error:  # anything NumPy cannot turn into an array
        raise InvalidArgumentError(f"{name} cannot be converted to a NumPy array: {error}") from None
    if data_type_for_numpy(array.dtype) is None:
        raise InvalidArgumentError(f"{name}.dtype {array.dtype} has no TensorDataType")
    return array


def _element_strides(array: np.ndarray) -> tuple[int, ...] | None:
    """Strides in elements, or None when some stride is not a whole number of elements."""
    if any(s % array.itemsize for s in array.strides):
        return None
    return tuple(s // array.itemsize for s in array.strides)


def _views(arrays: list[np.ndarray], result_index: int) -> tuple[list[np.ndarray], tuple[int, ...], list]:
    """Views of `arrays` over the same elements, with every stride >= 0, and their merged
    sizes and element strides.

    Dims the result walks backwards are flipped in every array (a view); an input still
    walking some dim backwards, or whose strides are not whole elements, is copied.
    """
    arrays = [a.reshape(1) if a.ndim == 0 else a for a in arrays]
    for axis, stride in enumerate(arrays[result_index].strides):
        if stride < 0:
            arrays = [np.flip(a, axis) for a in arrays]
    arrays = [a if i == result_index or (_element_strides(a) is not None and min(a.strides) >= 0)
              else np.ascontiguousarray(a) for i, a in enumerate(arrays)]
    sizes, strides = merge_dims(arrays[0].shape, [_element_strides(a) for a in arrays])
    if len(sizes) > MAX_DIMENSION_COUNT:  # more than 8 dims even after merging: copy the inputs flat
        arrays = [a if i == result_index else np.ascontiguousarray(a) for i, a in enumerate(arrays)]
        if not arrays[result_index].flags.c_contiguous:
            raise InvalidArgumentError("out has more than 8 non-mergeable dims: pass a contiguous out")
        sizes, strides = merge_dims(arrays[0].shape, [_element_strides(a) for a in arrays])
    return arrays, sizes, strides


def _span(array: np.ndarray, sizes, strides) -> np.ndarray:
    """The array's memory from its first element to its last, as a 1-D view (no copy)."""
    count = sum((size - 1) * stride for size, stride in zip(sizes, strides)) + 1
    return as_strided(array, shape=(count,), strides=(array.itemsize,))


def _run_elementwise(desc_class, arrays: dict[str, np.ndarray], out, device: Device | None) -> np.ndarray:
    """Run an element-wise operator; `arrays` maps argument names to its inputs, in order."""
    names = list(arrays)
    first = arrays[names[0]]
    for name in names[1:]:
        if arrays[name].dtype != first.dtype:
            raise InvalidArgumentError(f"{name}.dtype {arrays[name].dtype} != {names[0]}.dtype {first.dtype}")
        if arrays[name].shape != first.shape:
            raise InvalidArgumentError(f"{name}.shape {arrays[name].shape} != {names[0]}.shape {first.shape}")
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise InvalidArgumentError(f"out must be a NumPy array, not {type(out).__name__}")
        if out.shape != first.shape or out.dtype != first.dtype:
            raise InvalidArgumentError(
                f"out has shape {out.shape} and dtype {out.dtype}; the result has {first.shape} and {first.dtype}")
        if not out.flags.writeable:
            raise InvalidArgumentError("out is read-only")
    result = out if out is not None else np.empty(first.shape, first.dtype)
    if first.size == 0:
        return result
    inputs = list(arrays.values())
    # An input bound in place must be the result itself, element for element; any other
    # sharing of memory reads the input as it was before the call, as NumPy does.
    in_place = next((i for i, a in enumerate(inputs) if a.shape == result.shape and a.strides == result.strides
                     and a.__array_interface__["data"][0] == result.__array_interface__["data"][0]), None)
    inputs = [a.copy() if i != in_place and np.shares_memory(a, result) else a for i, a in enumerate(inputs)]
    views, sizes, strides = _views([*inputs, result], len(inputs))
    data_type = data_type_for_numpy(first.dtype)
    descs = [BufferTensorDesc(data_type, sizes, s) for s in strides]
    device = device or default_device()
    compiled = _compile(device, desc_class(*descs))
    spans = [_span(v, sizes, s) for v, s in zip(views, strides)]
    buffers = [device.create_buffer(d.total_tensor_size_in_bytes) if i != in_place else None
               for i, d in enumerate(descs[:-1])]
    try:
        for buffer, span in zip(buffers, spans):
            if buffer is not None:
                buffer.write(span)
        if in_place is None:
            output = device.create_buffer(descs[-1].total_tensor_size_in_bytes)
            buffers.append(output)
            if spans[-1].size > result.size:  # the gaps between out's elements must survive
                output.write(spans[-1])
        else:
            output = buffers[in_place] = device.create_buffer(descs[in_place].total_tensor_size_in_bytes)
            output.write(spans[in_place])
        table = device.create_binding_table(compiled, inputs=buffers[:len(inputs)], outputs=[output])
        device.execute(table)
        spans[-1][...] = output.read(first.dtype, spans[-1].size)
    finally:
        for buffer in {id(b): b for b in buffers if b is not None}.values():
            buffer.destroy()
    return result


def relu_grad(x, dy, *, out: np.ndarray | None = None, device: Device | None = None) -> np.ndarray:
    """ACTIVATION_RELU_GRAD on arrays: `x > 0 ? dy : 0`, bit-exact, same shape and dtype."""
    return _run_elementwise(ActivationReluGradOperatorDesc,
                            {"x": _as_array(x, "x"), "dy": _as_array(dy, "dy")}, out, device)
