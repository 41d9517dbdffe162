"""The NumPy front ends of the reductions family: `reduce` in DirectML's shape (the rank kept,
size 1 on the reduced axes), NumPy's sum, mean, max, min, prod, argmax and argmin on top of
it, with NumPy's `axis` and `keepdims`, and cumsum and cumprod (CUMULATIVE_SUMMATION,
CUMULATIVE_PRODUCT)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ..base.errors import InvalidArgumentError, shown
from ..base.tensor_desc import MAX_DIMENSION_COUNT, BufferTensorDesc
from ..base.types import FeatureLevel, data_type_for_numpy, data_type_info
from ..base.types import TensorDataType as T
from ..ops.enums import AxisDirection, ReduceFunction
from ..ops.reductions import (
    REDUCTIONS,
    CumulativeProductOperatorDesc,
    CumulativeSummationOperatorDesc,
    ReduceOperatorDesc,
    TopK1OperatorDesc,
    reduced_sizes,
)
from ..runtime.binding import MINIMUM_BUFFER_TENSOR_ALIGNMENT
from ..runtime.device import Device
from .array_operators import ARRAY_OPERATORS, in_accumulator
from .arrays import as_array, as_device, asarray, normalized_axes, refuse_dtype, whole_row_pieces
from .call_cache import run_bound
from .device_array import DeviceArray, run_on_arrays


def reduce_function(function) -> ReduceFunction:
    """A ReduceFunction from itself or its name (any case)."""
    if isinstance(function, ReduceFunction):
        return function
    if isinstance(function, str) and function.upper() in ReduceFunction.__members__:
        return ReduceFunction[function.upper()]
    raise InvalidArgumentError(
        f"function {shown(function)} must be a ReduceFunction or one of its names "
        f"({', '.join(ReduceFunction.__members__)})", "function")


def _reduced_axes(axes, ndim: int, argument: str) -> tuple[int, ...]:
    """NumPy's axis argument (None: every axis; an int; a tuple) as DirectML's sorted axes."""
    if axes is None:
        return tuple(range(ndim))
    normalized = normalized_axes(axes, ndim, argument)
    if not isinstance(normalized, tuple):
        raise InvalidArgumentError(f"{argument} {shown(axes)} must be None, an int or a tuple of ints", "axes")
    if len(set(normalized)) != len(normalized):
        raise InvalidArgumentError(f"{argument} {shown(axes)} repeats an axis", "axes")
    return tuple(sorted(normalized))


def _reduce_array(x: np.ndarray, function: ReduceFunction, axes: tuple[int, ...], device: Device) -> np.ndarray:
    """REDUCE on a non-empty array of 1 to 8 dims: DirectML's shape."""
    row = REDUCTIONS[function]
    data_type = data_type_for_numpy(x.dtype)
    output_type = T.UINT32 if row.indices else data_type
    sizes = reduced_sizes(x.shape, axes)
    result = np.empty(sizes, np.uint32 if row.indices else x.dtype)
    limit = device.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    # Pieces are sized by 32-bit words where the elements are narrower: the kernel's scratch
    # holds a word a row and more.
    word_size = np.maximum(x.itemsize, 4).item()
    if math.prod(x.shape[d] for d in axes) * word_size > limit and function in LONG_ROWS:
        return _reduce_long_rows(x, function, axes, sizes, limit // word_size, device)
    if x.size * word_size > limit:  # pieces of whole rows: each output element depends on its own row only
        for piece in whole_row_pieces(x.shape, set(axes), word_size, limit, f"reduce {function.name}"):
            kept = tuple(slice(0, 1) if d in axes else s for d, s in enumerate(piece))
            result[kept] = _reduce_array(x[piece], function, axes, device)
        return result
    compiled = device.compile_cached(ReduceOperatorDesc(
        BufferTensorDesc(data_type, x.shape), BufferTensorDesc(output_type, sizes), function, axes))
    packed = np.ascontiguousarray(x).reshape(-1)

    def work(binding):
        binding.buffers[0].write(packed)
        device.execute(binding.table)
        result[...] = binding.buffers[1].read(result.dtype, result.size).reshape(sizes)

    run_bound(device, compiled, None, work)
    return result


# A row longer than a buffer segment is reduced in aligned blocks of a power of two elements,
# whose partials another REDUCE combines: each block is a subtree of the row's documented
# tree (padded with the identity, as the row is) and the partials' own tree is the levels
# above, so the bits are those of one call. Per function: the blocks' reduction, the
# partials', and the last step on the total (None: none).
LONG_ROWS = {
    ReduceFunction.SUM: (ReduceFunction.SUM, ReduceFunction.SUM, None),
    ReduceFunction.SUM_SQUARE: (ReduceFunction.SUM_SQUARE, ReduceFunction.SUM, None),
    ReduceFunction.L1: (ReduceFunction.L1, ReduceFunction.SUM, None),
    ReduceFunction.MULTIPLY: (ReduceFunction.MULTIPLY, ReduceFunction.MULTIPLY, None),
    ReduceFunction.MAX: (ReduceFunction.MAX, ReduceFunction.MAX, None),
    ReduceFunction.MIN: (ReduceFunction.MIN, ReduceFunction.MIN, None),
    ReduceFunction.AVERAGE: (ReduceFunction.SUM, ReduceFunction.SUM, "divide"),
    ReduceFunction.L2: (ReduceFunction.SUM_SQUARE, ReduceFunction.SUM, "sqrt"),
    ReduceFunction.LOG_SUM: (ReduceFunction.SUM, ReduceFunction.SUM, "log"),
    ReduceFunction.ARGMAX: (ReduceFunction.MAX, ReduceFunction.ARGMAX, None),
    ReduceFunction.ARGMIN: (ReduceFunction.MIN, ReduceFunction.ARGMIN, None),
}


def _reduce_long_rows(x: np.ndarray, function: ReduceFunction, axes: tuple[int, ...], sizes: tuple[int, ...],
                      most: int, device: Device) -> np.ndarray:
    """REDUCE of rows longer than a buffer segment (LONG_ROWS), in blocks of at most `most`
    elements, on host copies of the rows: FLOAT16 and BFLOAT16 widened to FP32 first (exact),
    as the kernel reduces them, and the total rounded once as the kernel rounds it. An index
    of an extreme is its block's, in the block that ARGMAX or ARGMIN picks among the blocks'
    extremes."""
    blocks_of, partials_of, last = LONG_ROWS[function]
    rows = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim)).reshape(-1, math.prod(x.shape[d] for d in axes))
    narrow = rows.dtype in (np.float16, ml_dtypes.bfloat16)
    if narrow:
        rows = rows.astype(np.float32)
    block = 1 << (most.bit_length() - 1)  # a power of two: an aligned subtree
    totals = []
    for row in rows:
        pieces = [row[start:start + block] for start in range(0, row.size, block)]
        partials = np.concatenate([_reduce_array(p, blocks_of, (0,), device) for p in pieces])
        total = _reduce_array(partials, partials_of, (0,), device)
        if function in (ReduceFunction.ARGMAX, ReduceFunction.ARGMIN):
            chosen = int(total[0])
            within = _reduce_array(pieces[chosen], function, (0,), device)
            total = np.array([chosen * block + int(within[0])], np.uint32)
        elif last == "divide":
            total = ARRAY_OPERATORS["divide"](total, np.float32(row.size), device=device)
        elif last is not None:
            total = ARRAY_OPERATORS[last](total, device=device)
        if narrow and not REDUCTIONS[function].indices:
            total = _bfloat16_of(total) if x.dtype == ml_dtypes.bfloat16 else \
                ARRAY_OPERATORS["cast"](total, x.dtype, device=device)
        totals.append(total)
    return np.concatenate(totals).reshape(sizes)


def _bfloat16_of(values: np.ndarray) -> np.ndarray:
    """FP32 values rounded to BFLOAT16 as the kernels round a total (shaders/numeric.glsl:
    to nearest, ties to even; a NaN stays NaN, quiet), where CAST takes no BFLOAT16."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = np.where(nan, (bits >> 16) | 0x40, (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)
    return rounded.astype(np.uint16).view(ml_dtypes.bfloat16)


def _run(x: np.ndarray | DeviceArray, function: ReduceFunction, axes: tuple[int, ...], shape: tuple[int, ...],
         device: Device | None, index_type: T = T.UINT32) -> np.ndarray | DeviceArray:
    """REDUCE of a non-empty x (of 1 to 8 dims, 0-d read as 1-D) over `axes`, as an array of
    `shape` (the reduced sizes, or NumPy's shape without them): a NumPy array, or for a
    DeviceArray a new DeviceArray of the same device (indices as `index_type`)."""
    if not isinstance(x, DeviceArray):
        return _reduce_array(x.reshape(x.shape or (1,)), function, axes, as_device(device)).reshape(shape)
    owner = x.device
    if device is not None and device is not owner:
        raise InvalidArgumentError("device names another device than x's: pass an array of that device "
                                   "(dmlpy.asarray(x, device=...)) or leave device out", "device")
    if x.nbytes > owner.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT:  # read whole rows: through host pieces
        host = _run(x.numpy(), function, axes, shape, owner)
        return asarray(host.astype(index_type.name.lower()) if REDUCTIONS[function].indices else host, owner)
    row = REDUCTIONS[function]
    sizes = x.shape or (1,)
    output_type = index_type if row.indices else x.data_type
    desc = ReduceOperatorDesc(BufferTensorDesc(x.data_type, sizes),
                              BufferTensorDesc(output_type, reduced_sizes(sizes, axes)), function, axes)
    # Deferred as element-wise results are: computed when read, with the element-wise chain
    # that leads to it as its first pass (one fused kernel); the device accepts it (or not) now.
    own = owner.create_operator(desc).desc
    return DeviceArray.deferred(owner, shape, data_type_info(output_type).numpy_dtype, own, (x,))


def _as_input(x, argument: str = "x") -> np.ndarray | DeviceArray:
    # A view is read packed: its copy joins the reduction's graph as the first pass's prologue.
    x = x.contiguous() if isinstance(x, DeviceArray) else as_array(x, argument)
    if x.ndim > MAX_DIMENSION_COUNT:
        raise InvalidArgumentError(f"x has {x.ndim} dims: the reductions take 0 to {MAX_DIMENSION_COUNT}", "x")
    return x


def _owner(x: np.ndarray | DeviceArray, device: Device | None) -> Device:
    """The device a call on x runs on: a device array's own (`device`, if given, must be it),
    else `device` (default: the default device)."""
    if not isinstance(x, DeviceArray):
        return as_device(device)
    if device is not None and device is not x.device:
        raise InvalidArgumentError("device names another device than x's", "device")
    return x.device


def _refuse_untaken(name: str, dml_name: str, x: np.ndarray | DeviceArray, taken) -> None:
    """x's dtype in the front end's terms: one the operator does not take, refused with how
    to convert x."""
    data_type = x.data_type if isinstance(x, DeviceArray) else data_type_for_numpy(x.dtype)
    refuse_dtype(name, dml_name, "x", data_type, taken)


# NumPy's name for each reduction it has.
NUMPY_NAMES = {ReduceFunction.SUM: "sum", ReduceFunction.MULTIPLY: "prod", ReduceFunction.AVERAGE: "mean",
               ReduceFunction.MAX: "max", ReduceFunction.MIN: "min", ReduceFunction.ARGMAX: "argmax",
               ReduceFunction.ARGMIN: "argmin"}


def _refuse_untaken_by(function: ReduceFunction, x, name: str | None = None) -> None:
    _refuse_untaken(name or NUMPY_NAMES[function], f"REDUCE's {function.name}", x,
                    REDUCTIONS[function].data_types())


def _refuse_empty(function: ReduceFunction, x) -> None:
    raise InvalidArgumentError(f"x has shape {x.shape}: {function.name.lower()} of no elements has no value "
                               "(NumPy raises too)", "x")


def reduce(x: ArrayLike | DeviceArray, function: ReduceFunction | str, axes: int | tuple[int, ...] | None = None, *,
           device: Device | None = None) -> np.ndarray | DeviceArray:
    """DML_OPERATOR_REDUCE: `function` (a ReduceFunction or its name) over `axes` (None: every
    axis; negative axes count from the end). The result keeps x's rank, with size 1 on the
    reduced axes, as DirectML's output does; ARGMAX and ARGMIN give uint32 indices over the
    reduced axes in row-major order. A DeviceArray gives a DeviceArray."""
    function = reduce_function(function)
    x = _as_input(x)
    _refuse_untaken_by(function, x, "reduce")
    reduced = _reduced_axes(axes, x.ndim or 1, "axes")
    if x.size == 0:
        raise InvalidArgumentError(f"x has shape {x.shape}, with no elements: DirectML's sizes are at least 1", "x")
    return _run(x, function, reduced, reduced_sizes(x.shape, reduced), device)


def _numpy_accumulator(x: np.ndarray | DeviceArray, device, dtype) -> np.ndarray | DeviceArray:
    """x as NumPy's sum, prod and mean accumulate it: in `dtype` where one is given (a NumPy
    array converted by NumPy, a DeviceArray by DML_CAST, fused into the reduction); else an
    integer narrower than 64 bits in int64 (signed) or uint64 (unsigned), where the device
    computes those (DirectML's FEATURE_LEVEL_5_0; on a device capped below it, in x's own
    dtype, wrapping)."""
    if dtype is not None:
        return in_accumulator(x, dtype)
    if x.dtype.kind not in "iu" or x.dtype.itemsize == 8:
        return x
    owner = x.device if isinstance(x, DeviceArray) else as_device(device)
    if owner.feature_level < FeatureLevel.LEVEL_5_0:
        return x
    return x.astype(np.int64 if x.dtype.kind == "i" else np.uint64)


def _numpy_form(function: ReduceFunction, x, axis, keepdims: bool, device, empty,
                dtype=None) -> np.ndarray | DeviceArray:
    """NumPy's conventions over REDUCE: `axis` None, an int or a tuple; `keepdims`; an empty
    array's value from `empty` (an identity; None: NumPy refuses it); for sums, products and
    means NumPy's accumulator `dtype` (_numpy_accumulator)."""
    if not isinstance(keepdims, (bool, np.bool_)):
        raise InvalidArgumentError(f"keepdims {shown(keepdims)} must be a bool", "keepdims")
    x = _as_input(x)
    if function in (ReduceFunction.SUM, ReduceFunction.MULTIPLY) or dtype is not None:
        x = _numpy_accumulator(x, device, dtype)
    _refuse_untaken_by(function, x)
    axes = _reduced_axes(axis, x.ndim, "axis") if x.ndim else ()
    shape = reduced_sizes(x.shape, axes) if keepdims else tuple(n for d, n in enumerate(x.shape) if d not in axes)
    if x.size == 0:
        if empty is None and any(x.shape[d] == 0 for d in axes):
            _refuse_empty(function, x)
        values = np.full(shape, 0 if empty is None else empty, x.dtype)
        return asarray(values, x.device) if isinstance(x, DeviceArray) else values
    return _run(x, function, axes or (0,), shape, device)


def sum(x: ArrayLike | DeviceArray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
        dtype: DTypeLike = None, device: Device | None = None) -> np.ndarray:
    """NumPy's sum by REDUCE SUM: FP32 in a fixed pairwise tree, rounded once to x's dtype;
    integers narrower than 64 bits summed as int64 or uint64, as NumPy sums them (wrapping
    modulo 2**64; in x's dtype on a device capped below FEATURE_LEVEL_5_0); `dtype`, NumPy's
    accumulator, converts x first."""
    return _numpy_form(ReduceFunction.SUM, x, axis, keepdims, device, 0, dtype)


def prod(x: ArrayLike | DeviceArray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
         dtype: DTypeLike = None, device: Device | None = None) -> np.ndarray:
    """NumPy's prod by REDUCE MULTIPLY (the sums' pairwise tree; integers and `dtype` as
    sum's, wrapping)."""
    return _numpy_form(ReduceFunction.MULTIPLY, x, axis, keepdims, device, 1, dtype)


def mean(x: ArrayLike | DeviceArray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
         dtype: DTypeLike = None, device: Device | None = None) -> np.ndarray:
    """NumPy's mean by REDUCE AVERAGE: the FP32 sum divided by the count (floats only;
    `dtype`, a float type, converts integers first)."""
    return _numpy_form(ReduceFunction.AVERAGE, x, axis, keepdims, device, np.nan, dtype)


def max(x: ArrayLike | DeviceArray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
        device: Device | None = None) -> np.ndarray:
    """NumPy's max by REDUCE MAX: exact; NaN if any element is NaN."""
    return _numpy_form(ReduceFunction.MAX, x, axis, keepdims, device, None)


def min(x: ArrayLike | DeviceArray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
        device: Device | None = None) -> np.ndarray:
    """NumPy's min by REDUCE MIN: exact; NaN if any element is NaN."""
    return _numpy_form(ReduceFunction.MIN, x, axis, keepdims, device, None)


def _arg_form(function: ReduceFunction, x, axis, keepdims: bool, device) -> np.ndarray | DeviceArray:
    """NumPy's argmax/argmin: `axis` an int (or None: the index into x flattened); int64
    (NumPy's intp) indices, on a DeviceArray too."""
    if not isinstance(keepdims, (bool, np.bool_)):
        raise InvalidArgumentError(f"keepdims {shown(keepdims)} must be a bool", "keepdims")
    if axis is not None and not (isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)):
        raise InvalidArgumentError(f"axis {shown(axis)} must be an int or None", "axis")
    x = _as_input(x)
    _refuse_untaken_by(function, x)
    on_device = isinstance(x, DeviceArray)
    if axis is None:
        if x.size == 0:
            _refuse_empty(function, x)
        axes, shape = tuple(range(x.ndim or 1)), (1,) * x.ndim if keepdims else ()
    else:
        (axis,) = _reduced_axes(axis, x.ndim or 1, "axis")
        if x.size == 0 and (x.shape or (1,))[axis] == 0:
            _refuse_empty(function, x)
        kept = reduced_sizes(x.shape or (1,), (axis,))
        axes, shape = (axis,), kept if keepdims else tuple(n for d, n in enumerate(kept) if d != axis)
    if x.size == 0:
        values = np.zeros(shape, np.int64)
        return asarray(values, x.device) if on_device else values
    result = _run(x, function, axes, shape, device, T.INT64)  # NumPy's int64, on a device array too
    return result if on_device else result.astype(np.int64)


def argmax(x: ArrayLike | DeviceArray, axis: int | None = None, keepdims: bool = False, *,
           device: Device | None = None) -> np.ndarray:
    """NumPy's argmax by REDUCE ARGMAX: the first largest (a NaN counts as largest)."""
    return _arg_form(ReduceFunction.ARGMAX, x, axis, keepdims, device)


def argmin(x: ArrayLike | DeviceArray, axis: int | None = None, keepdims: bool = False, *,
           device: Device | None = None) -> np.ndarray:
    """NumPy's argmin by REDUCE ARGMIN: the first smallest (a NaN counts as smallest)."""
    return _arg_form(ReduceFunction.ARGMIN, x, axis, keepdims, device)


def _cumulative(desc_class, exclusive_field: str, x, axis, exclusive: bool, reverse: bool,
                device) -> np.ndarray | DeviceArray:
    """A running sum or product along `axis` (None: of x flattened, as NumPy's cumsum)."""
    for name, flag in (("exclusive", exclusive), ("reverse", reverse)):
        if not isinstance(flag, (bool, np.bool_)):
            raise InvalidArgumentError(f"{name} {shown(flag)} must be a bool", name)
    if axis is not None and not (isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)):
        raise InvalidArgumentError(f"axis {shown(axis)} must be an int or None", "axis")
    x = _as_input(x)
    schema = desc_class.schema
    name = "cumsum" if desc_class is CumulativeSummationOperatorDesc else "cumprod"
    _refuse_untaken(name, schema.dml_name, x, schema.data_types())
    on_device = isinstance(x, DeviceArray)
    if axis is None:  # NumPy's: over the flattened array
        shape, axis = (x.size,), 0
    else:
        shape, (axis,) = x.shape or (1,), _reduced_axes(axis, x.ndim or 1, "axis")
    if x.size == 0:
        values = np.zeros(shape, x.dtype)
        return asarray(values, x.device) if on_device else values
    owner = _owner(x, device)
    limit = owner.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    if x.nbytes > limit:  # pieces of whole rows (each running value depends on its own row only), on the host
        rows = (x.numpy() if on_device else np.asarray(x)).reshape(shape)
        result = np.empty(shape, x.dtype)
        for piece in whole_row_pieces(shape, {axis}, x.dtype.itemsize, limit, name, "runs along"):
            result[piece] = _cumulative(desc_class, exclusive_field, rows[piece], axis, exclusive, reverse, owner)
        return asarray(result, owner) if on_device else result
    data_type = x.data_type if on_device else data_type_for_numpy(x.dtype)
    desc = desc_class(BufferTensorDesc(data_type, shape), BufferTensorDesc(data_type, shape), axis,
                      AxisDirection.DECREASING if reverse else AxisDirection.INCREASING,
                      **{exclusive_field: bool(exclusive)})
    if on_device:
        owner = x.device
        if device is not None and device is not owner:
            raise InvalidArgumentError("device names another device than x's", "device")
        result = DeviceArray(owner, shape, x.dtype)
        run_on_arrays(owner.compile_cached(desc), [x], result)
        return result
    device = as_device(device)
    compiled = device.compile_cached(desc)
    packed = np.ascontiguousarray(x).reshape(-1)
    result = np.empty(shape, x.dtype)

    def work(binding):
        binding.buffers[0].write(packed)
        device.execute(binding.table)
        result[...] = binding.buffers[1].read(x.dtype, result.size).reshape(shape)

    run_bound(device, compiled, None, work)
    return result


def cumsum(x: ArrayLike | DeviceArray, axis: int | None = None, exclusive: bool = False, reverse: bool = False, *,
           device: Device | None = None) -> np.ndarray | DeviceArray:
    """DML_CUMULATIVE_SUMMATION: the running sum along `axis` (None: of x flattened, as
    NumPy's cumsum), walked backwards where `reverse`; `exclusive` leaves each element out of
    its own output. FP32 left to right, each output rounded once: NumPy's bits."""
    return _cumulative(CumulativeSummationOperatorDesc, "has_exclusive_sum", x, axis, exclusive, reverse, device)


def cumprod(x: ArrayLike | DeviceArray, axis: int | None = None, exclusive: bool = False, reverse: bool = False, *,
            device: Device | None = None) -> np.ndarray | DeviceArray:
    """DML_CUMULATIVE_PRODUCT: the running product along `axis`, as cumsum's."""
    return _cumulative(CumulativeProductOperatorDesc, "has_exclusive_product", x, axis, exclusive, reverse, device)


def top_k(x: ArrayLike | DeviceArray, k: int, axis: int = -1, largest: bool = True, *,
          device: Device | None = None) -> tuple[np.ndarray, np.ndarray] | tuple[DeviceArray, DeviceArray]:
    """DML_TOP_K1: the `k` largest (or smallest) elements along `axis`, in that order, and
    their indices: (values, indices), indices int64 as NumPy's and PyTorch's (on device
    arrays too: TOP_K1's UINT32 cast on the device). Equal values come in increasing index
    order; a NaN is above every number."""
    if not isinstance(largest, (bool, np.bool_)):
        raise InvalidArgumentError(f"largest {shown(largest)} must be a bool", "largest")
    if not (isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)):
        raise InvalidArgumentError(f"axis {shown(axis)} must be an int", "axis")
    if not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)) or k < 1:
        raise InvalidArgumentError(f"k {shown(k)} must be an int of at least 1 (TOP_K1's K)", "k")
    x = _as_input(x)
    _refuse_untaken("top_k", "TOP_K1", x, TopK1OperatorDesc.schema.data_types())
    on_device = isinstance(x, DeviceArray)
    shape = x.shape or (1,)
    (axis,) = _reduced_axes(axis, len(shape), "axis")
    if k > shape[axis]:
        raise InvalidArgumentError(f"k {k} is more than x.shape[{axis}] ({shape[axis]}): K elements must exist "
                                   "along axis", "k")
    data_type = x.data_type if on_device else data_type_for_numpy(x.dtype)
    selected = tuple(int(k) if d == axis else n for d, n in enumerate(shape))
    owner = _owner(x, device)
    limit = owner.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    itemsize = np.maximum(x.dtype.itemsize, 4).item()  # the indices are UINT32 (`max` here is the front end)
    if x.size * itemsize > limit:  # pieces of whole rows (each row's selection is its own), on the host
        rows = (x.numpy() if on_device else np.asarray(x)).reshape(shape)
        values, indices = np.empty(selected, x.dtype), np.empty(selected, np.int64)
        for piece in whole_row_pieces(shape, {axis}, itemsize, limit, "top_k", "selects from"):
            chosen = tuple(slice(0, k) if d == axis else s for d, s in enumerate(piece))
            values[chosen], indices[chosen] = top_k(rows[piece], k, axis, largest, device=owner)
        if on_device:
            return asarray(values, owner), asarray(indices, owner)
        return values, indices
    desc = TopK1OperatorDesc(BufferTensorDesc(data_type, shape), BufferTensorDesc(data_type, selected),
                             BufferTensorDesc(T.UINT32, selected), axis, k,
                             AxisDirection.DECREASING if largest else AxisDirection.INCREASING)
    if on_device:
        owner = x.device
        if device is not None and device is not owner:
            raise InvalidArgumentError("device names another device than x's", "device")
        values, indices = DeviceArray(owner, selected, x.dtype), DeviceArray(owner, selected, np.uint32)
        run_on_arrays(owner.compile_cached(desc), [x], values, indices)
        return values, ARRAY_OPERATORS["cast"](indices, np.int64)
    device = as_device(device)
    compiled = device.compile_cached(desc)
    packed = np.ascontiguousarray(x).reshape(-1)
    values, indices = np.empty(selected, x.dtype), np.empty(selected, np.uint32)

    def work(binding):
        binding.buffers[0].write(packed)
        device.execute(binding.table)
        values[...] = binding.buffers[1].read(x.dtype, values.size).reshape(selected)
        indices[...] = binding.buffers[2].read(np.uint32, indices.size).reshape(selected)

    run_bound(device, compiled, None, work)
    return values, indices.astype(np.int64)


FRONT_ENDS = {f.__name__: f for f in (reduce, sum, prod, mean, max, min, argmax, argmin, cumsum, cumprod, top_k)}
ARRAY_OPERATORS.update({name: FRONT_ENDS[name] for name in ("sum", "prod", "mean", "max", "min", "argmax", "argmin",
                                                            "cumsum", "cumprod")})
__all__ = [*FRONT_ENDS]
