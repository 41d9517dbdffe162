"""What the front ends do to what a caller passes: arrays, lists, numbers and DLPack
producers made NumPy arrays of one dtype and shape (NumPy's broadcasting), their layouts
read as element strides, `out=` checked, and the module's default device.

Arrays are not made contiguous: each becomes a desc whose element strides match the
array's, over the span of memory the array covers (`span`)."""

from __future__ import annotations

import math
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import ArrayLike, DTypeLike

from ..base.errors import InvalidArgumentError, UnsupportedError, shown
from ..base.tensor_desc import MAX_DIMENSION_COUNT
from ..base.types import TensorDataType as T
from ..base.types import data_type_for_numpy, data_type_info, numpy_name
from ..kernels.codegen import merge_dims
from ..runtime.device import Device, create_device
from .device_array import DeviceArray
from .dlpack import from_dlpack

# The front ends' one piece of module state: the device used when a call names none. Its
# caches belong to it (Device.front_end_cache); a forked child starts without it.
_default_device: Device | None = None
_default_lock = threading.Lock()


def default_device() -> Device:
    """The device the front end uses when none is given (created on first use)."""
    global _default_device
    with _default_lock:
        if _default_device is None or _default_device.closed:
            _default_device = create_device()
        return _default_device


def _forget_default_device_in_child() -> None:
    global _default_device, _default_lock
    _default_device = None
    _default_lock = threading.Lock()


# What an array of a type an operator does not take converts to: NumPy's and PyTorch's default
# float and int types are 64-bit.
NARROWER = {T.FLOAT64: np.float32, T.INT64: np.int32, T.UINT64: np.uint32}


def _numpy_names(types) -> str:
    return ", ".join(dict.fromkeys(numpy_name(np.dtype(data_type_info(t).numpy_dtype)) for t in types))


def refuse_dtype(name: str, dml_name: str, argument: str, data_type: T | None, taken, computed=None) -> None:
    """Refuse, in a front end's terms, an argument of a data type the operator takes at no
    feature level (InvalidArgumentError), or takes where dmlpy computes it not yet (those in
    `taken` but not `computed`: UnsupportedError): which argument, which dtypes, and how to
    convert it."""
    computed = list(taken) if computed is None else list(computed)
    if data_type in computed:
        return
    narrower = NARROWER.get(data_type)
    target = np.dtype(narrower if narrower is not None and data_type_for_numpy(np.dtype(narrower)) in computed
                      else data_type_info(computed[0]).numpy_dtype)
    dtype = np.dtype(data_type_info(data_type).numpy_dtype) if data_type is not None else "this dtype"
    advice = f"convert it first, e.g. {argument}.astype({numpy_name(target)})"
    if data_type in taken:
        raise UnsupportedError(
            f"{name}: {argument} has dtype {dtype}, which {dml_name} takes but dmlpy does not compute yet (it "
            f"computes {_numpy_names(computed)}); {advice}", "data_type")
    raise InvalidArgumentError(
        f"{name}: {argument} has dtype {dtype}, which {dml_name} does not take (it takes {_numpy_names(taken)}); "
        f"{advice}", "data_type")


def as_device(device) -> Device:
    if device is None:
        return default_device()
    if not isinstance(device, Device):
        raise InvalidArgumentError(f"device must be a dmlpy Device or None, not {type(device).__name__} {device!r}")
    return device


def bools_as_uint8(array: np.ndarray) -> np.ndarray:
    """A bool array as the UINT8 0s and 1s its bytes are: DirectML's type for a condition
    (IF's) and for logical operators' operands and results, so `dml.where(x < 0, ...)`
    takes NumPy's mask as it is."""
    return array.view(np.uint8) if array.dtype == np.bool_ else array


def as_array(value, name: str) -> np.ndarray:
    """A NumPy array of what the caller passed: an array, anything with __array__ or, on the
    host, __dlpack__ (PyTorch's bfloat16 tensors included), a list or a scalar. A bool array
    is read as UINT8 (bools_as_uint8)."""
    if isinstance(value, DeviceArray):  # NumPy's DLPack has no bfloat16: copied directly
        return value.numpy()
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
        array = bools_as_uint8(from_dlpack(value, name))
        if data_type_for_numpy(array.dtype) is None:
            raise InvalidArgumentError(f"{name}.dtype {array.dtype} has no TensorDataType")
        return array
    try:
        array = bools_as_uint8(np.asarray(value))
    except Exception as error:  # anything NumPy cannot turn into an array
        raise InvalidArgumentError(f"{name} cannot be converted to a NumPy array: {error}") from None
    if data_type_for_numpy(array.dtype) is None:
        raise InvalidArgumentError(f"{name}.dtype {array.dtype} has no TensorDataType")
    return array


def element_strides(array: np.ndarray) -> tuple[int, ...] | None:
    """Strides in elements, or None when some stride is not a whole number of elements.
    A dim of size 1 is never stepped along, so its stride carries nothing and is 0."""
    if any(s % array.itemsize for s, n in zip(array.strides, array.shape) if n > 1):
        return None
    return tuple(s // array.itemsize if n > 1 else 0 for s, n in zip(array.strides, array.shape))


def bindable(array: np.ndarray) -> np.ndarray:
    """The array itself when its strides are whole, non-negative elements; else a contiguous copy."""
    strides = element_strides(array)
    return array if strides is not None and min(strides, default=0) >= 0 else np.ascontiguousarray(array)


def bindable_views(arrays: list[np.ndarray], result_index: int) -> tuple[list[np.ndarray], tuple[int, ...], list]:
    """Views of `arrays` over the same elements, with every stride >= 0, and their merged
    sizes and element strides.

    Dims the result walks backwards are flipped in every array (a view); an input still
    walking some dim backwards, or whose strides are not whole elements, is copied.
    """
    arrays = [a.reshape(1) if a.ndim == 0 else a for a in arrays]
    for axis, stride in enumerate(arrays[result_index].strides):
        if stride < 0:
            arrays = [np.flip(a, axis) for a in arrays]
    arrays = [a if i == result_index else bindable(a) for i, a in enumerate(arrays)]
    sizes, strides = merge_dims(arrays[0].shape, [element_strides(a) for a in arrays])
    if len(sizes) > MAX_DIMENSION_COUNT:  # more than 8 dims even after merging: copy the inputs flat
        arrays = [a if i == result_index else np.ascontiguousarray(a) for i, a in enumerate(arrays)]
        if not arrays[result_index].flags.c_contiguous:
            raise InvalidArgumentError("out has more than 8 non-mergeable dims: pass a contiguous out")
        sizes, strides = merge_dims(arrays[0].shape, [element_strides(a) for a in arrays])
    return arrays, sizes, strides


def span(array: np.ndarray, sizes, strides) -> np.ndarray:
    """The array's memory from its first element to its last, as a 1-D view (no copy)."""
    count = sum((size - 1) * stride for size, stride in zip(sizes, strides)) + 1
    return as_strided(array, shape=(count,), strides=(array.itemsize,))


def check_same_dtype(arrays: dict, group: tuple[str, ...]) -> None:
    """The arrays (NumPy's or device arrays) named in `group` share a dtype, as DirectML's
    operators take their tensors' data types: no promotion, and the message says how to convert."""
    first = arrays[group[0]]
    for name in group[1:]:
        if arrays[name].dtype != first.dtype:
            raise InvalidArgumentError(
                f"{name}.dtype {arrays[name].dtype} != {group[0]}.dtype {first.dtype}: these arguments share one "
                f"dtype (DirectML's rule; no promotion); convert one first, e.g. "
                f"{name}.astype({numpy_name(first.dtype)})", "data_type")


def check_same(arrays: dict[str, np.ndarray], shape_too: bool = True,
               groups: list[tuple[str, ...]] | None = None) -> None:
    """The arrays of each group (default: all of them) share a dtype, and all a shape where
    `shape_too`."""
    names = list(arrays)
    for group in groups or [tuple(names)]:
        check_same_dtype(arrays, group)
    for name in names[1:]:
        if shape_too and arrays[name].shape != arrays[names[0]].shape:
            raise InvalidArgumentError(f"{name}.shape {arrays[name].shape} != {names[0]}.shape "
                                       f"{arrays[names[0]].shape}")


def check_out(out, shape, dtype, name: str = "out") -> None:
    if not isinstance(out, np.ndarray):
        raise InvalidArgumentError(f"{name} must be a NumPy array, not {type(out).__name__}", "out")
    if out.shape != shape or out.dtype != dtype:
        raise InvalidArgumentError(
            f"{name} has shape {out.shape} and dtype {out.dtype}; the result has {shape} and {dtype}", "out")
    if not out.flags.writeable:
        raise InvalidArgumentError(f"{name} is read-only", "out")


def elements(flat: np.ndarray, sizes, strides) -> np.ndarray:
    """The elements of a span (a 1-D array from the first element to the last) as an array of
    `sizes`, read through the element strides: a view, never the gaps."""
    return as_strided(flat, shape=sizes, strides=tuple(s * flat.itemsize for s in strides), writeable=True)


def broadcast(arrays: dict[str, np.ndarray], groups: list[tuple[str, ...]] | None = None) -> dict[str, np.ndarray]:
    """The arrays as views of one shape, by NumPy's broadcasting rules (zero strides, no copy);
    the arrays of each group (default: all) must share a dtype."""
    names = list(arrays)
    check_same(arrays, shape_too=False, groups=groups)
    shape = arrays[names[0]].shape
    for name in names[1:]:
        try:
            shape = np.broadcast_shapes(shape, arrays[name].shape)
        except ValueError:
            raise InvalidArgumentError(f"{name} has shape {arrays[name].shape}, which does not broadcast with "
                                       f"{names[0]}'s {arrays[names[0]].shape}", "sizes") from None
    return {name: np.broadcast_to(a, shape) if a.shape != shape else a for name, a in arrays.items()}


# What a Python number or list without an array beside it becomes: DirectML has no FLOAT64 or
# INT64 activations, so PyTorch's defaults rather than NumPy's.
DEFAULT_DTYPES = {"f": np.float32, "i": np.int32}


def typeless(value) -> bool:
    """A Python number, or a list or tuple: values without a dtype of their own."""
    return isinstance(value, (int, float, list, tuple)) and not isinstance(value, bool)


def as_arrays(values: dict[str, object], groups: list[tuple[str, ...]] | None = None) -> dict[str, np.ndarray]:
    """Arrays for the arguments, in order. Python numbers and lists take the dtype of the first
    argument of their group (default: all arguments; IF's condition is a group of its own)
    that has one (NumPy 2's rule for scalars); without one, the first becomes float32 or
    int32 and the others follow it."""
    arrays = {name: as_array(value, name) for name, value in values.items() if not typeless(value)}
    for group in groups or [tuple(values)]:
        _typed({name: values[name] for name in group}, arrays)
    return {name: arrays[name] for name in values}


def _as_dtype(value, dtype: np.dtype) -> np.ndarray:
    """A Python number or list as `dtype`, refused (OverflowError) where a finite number
    would become an infinity or an integer would not fit, rather than NumPy's silent
    infinity and warning; and (ValueError) where a float is not a whole number and `dtype`
    is an integer type, rather than NumPy's silent truncation (`int_array + 0.5` would
    add 0)."""
    if np.dtype(dtype).kind in "iu":
        natural = np.asarray(value)
        if natural.dtype.kind in "fc" and not np.all(np.isfinite(natural) & (natural == np.round(natural.real))):
            raise ValueError(f"{np.dtype(dtype)} holds whole numbers only, and a Python number takes its array's "
                             f"dtype (no promotion): convert the array first, e.g. a.astype(np.float32)")
    with np.errstate(over="ignore"):
        typed = np.asarray(value, dtype)
    if typed.dtype.kind not in "iub" and \
            np.any(np.isinf(typed.astype(np.float64)) & np.isfinite(np.asarray(value, np.float64))):
        raise OverflowError(f"{value!r} is beyond {typed.dtype}'s largest finite value")
    return typed


def typed_like(value, dtype: np.dtype, name: str) -> np.ndarray:
    """A typeless `value` (a Python number or list) as the dtype of the array it goes with,
    in the front ends' terms: an InvalidArgumentError naming `name` where it does not fit."""
    try:
        return as_array(_as_dtype(value, dtype), name)
    except (OverflowError, ValueError, TypeError) as error:
        raise InvalidArgumentError(f"{name} {value!r} does not fit the arrays' dtype {np.dtype(dtype)}: {error}",
                                   "data_type") from None


def _typed(values: dict[str, object], arrays: dict[str, np.ndarray]) -> None:
    """Arrays for the typeless `values` of one group, added to `arrays`."""
    like = next((arrays[name] for name in values if name in arrays), None)
    for name, value in values.items():
        if name in arrays:
            continue
        try:
            if like is not None:
                arrays[name] = as_array(_as_dtype(value, like.dtype), name)
                continue
            natural = as_array(value, name) if isinstance(value, (list, tuple)) else np.asarray(value)
            default = DEFAULT_DTYPES.get(natural.dtype.kind)
            if default is not None and natural.dtype.itemsize > np.dtype(default).itemsize:
                converted = _as_dtype(natural, default)
                if default is np.int32 and not np.array_equal(converted, natural):
                    raise OverflowError(f"{value!r} is beyond int32")
                natural = converted
            arrays[name] = like = as_array(natural, name)  # the others follow it
        except InvalidArgumentError:
            raise
        except (OverflowError, ValueError, TypeError) as error:
            dtype = like.dtype if like is not None else "float32 or int32"
            raise InvalidArgumentError(f"{name} {value!r} does not fit the arrays' dtype {dtype}: {error}",
                                       "data_type") from None


def normalized_axes(axes, ndim: int, argument: str):
    """NumPy's axis conventions (an int, a sequence, negative from the end) as DirectML's
    tuple of non-negative axes; an axis outside [-ndim, ndim - 1] is refused in those terms
    (`argument` names the array the axes index). Anything else goes to the desc, which says
    what is wrong."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = (axes,)
    if isinstance(axes, (tuple, list)) and all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                                               for a in axes):
        for axis in axes:
            if not -ndim <= axis < ndim:
                raise InvalidArgumentError(
                    f"axes {shown(axes)} has axis {axis}: {argument} has {ndim} dims, so each axis must lie in "
                    f"[{-ndim}, {ndim - 1}] (negative axes count from the end)", "axes")
        return tuple(int(a) + ndim if a < 0 else int(a) for a in axes)
    return axes


def whole_row_pieces(shape: tuple[int, ...], reduced: set[int], itemsize: int, limit: int, what: str,
                     verb: str = "reduces") -> list[tuple]:
    """Index tuples cutting an array of `shape` along the axes not in `reduced`, outermost
    first, into pieces of at most `limit` bytes each: a row-wise kernel reads whole rows,
    so it cannot be windowed across buffer segments the way element-wise kernels are, but
    each of its outputs depends only on its own rows, which a piece keeps whole. A row past
    `limit` is refused: "`what` `verb` N elements ..."."""
    def cut(index: tuple, axis: int) -> list[tuple]:
        extent = [s.stop - s.start for s in index]
        nbytes = math.prod(extent) * itemsize
        if nbytes <= limit:
            return [index]
        free = next((a for a in range(axis, len(shape)) if a not in reduced and extent[a] > 1), None)
        if free is None:
            raise UnsupportedError(
                f"{what} {verb} {math.prod(extent)} elements ({nbytes} bytes) at once, and this device binds at "
                f"most {limit} bytes of a tensor at once (maxStorageBufferRange): take fewer elements per row")
        step = max(1, limit // (nbytes // extent[free]))
        pieces = []
        for start in range(index[free].start, index[free].stop, step):
            piece = list(index)
            piece[free] = slice(start, min(start + step, index[free].stop))
            pieces += cut(tuple(piece), free + 1)
        return pieces

    return cut(tuple(slice(0, n) for n in shape), 0)




def constant_array(value: np.ndarray, device: Device) -> DeviceArray:
    """The device's one-value array of `value` (a Python number, as the dtype it takes),
    uploaded once per device, dtype and value bits. The front ends pass it only as an input,
    so nothing writes it (docs/ownership.md, "Constants")."""
    key = (value.dtype.str, value.tobytes())
    found = device.constant_arrays.get(key)
    return found if found is not None else device.constant_arrays.put(key, asarray(value, device))


def asarray(values: ArrayLike | DeviceArray, device: Device | None = None, dtype: DTypeLike = None) -> DeviceArray:
    """`values` (an array, anything NumPy or DLPack can read, a list, a number) in device
    memory. A DeviceArray of `device` is returned as it is; one of another device is copied
    through the host. dtype: the data type to convert to (default: the values' own, with
    Python numbers and lists as float32 or int32, as in the front ends)."""
    device = as_device(device)
    if isinstance(values, DeviceArray):
        if values.device is device and (dtype is None or np.dtype(dtype) == values.dtype):
            return values
        values = values.numpy()
    host = as_arrays({"values": values})["values"]
    if dtype is not None:
        try:
            host = bools_as_uint8(host.astype(np.dtype(dtype)))
        except TypeError as error:
            raise InvalidArgumentError(f"dtype {dtype!r}: {error}") from None
        if data_type_for_numpy(host.dtype) is None:
            raise InvalidArgumentError(f"dtype {host.dtype} has no TensorDataType")
    array = DeviceArray(device, host.shape, host.dtype)
    if host.size:
        array.write(host)
    return array
