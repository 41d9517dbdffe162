"""NumPy front end: run an operator on arrays with a module-level default device.

Arrays are not made contiguous: each becomes a desc whose element strides match the
array's, over the span of memory the array covers, uploaded once. See README, "NumPy".
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .activations import TABLE
from .binding import MINIMUM_BUFFER_TENSOR_ALIGNMENT
from .codegen import merge_dims
from .device import CompiledOperator, Device, create_device
from .device_array import DeviceArray, asarray, run_on_arrays
from .dlpack import from_dlpack
from .errors import InvalidArgumentError, UnsupportedError
from .operators import ActivationParameterizedReluGradOperatorDesc
from .schema import OPERATORS, OperatorSchema, fp32_bits
from .tensor_desc import MAX_DIMENSION_COUNT, BufferTensorDesc, packed_strides
from .types import data_type_for_numpy

# The front end's one piece of module state: the device used when a call names none. Its
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


os.register_at_fork(after_in_child=_forget_default_device_in_child)


def _device(device) -> Device:
    if device is None:
        return default_device()
    if not isinstance(device, Device):
        raise InvalidArgumentError(f"device must be a dmlpy Device or None, not {type(device).__name__} {device!r}")
    return device


class _Binding:
    """Buffers and a binding table kept for one (desc, in-place) shape of call in the
    device's front_end_cache, so a loop of identical calls rebuilds nothing.

    `lock` is held while a call uses the entry. The cache evicts by calling `retire()`, which
    frees the buffers once no call uses them (waiting for the one in progress, if any). A
    call that finds its entry already freed builds a new one."""

    def __init__(self, device: Device, compiled: CompiledOperator, in_place: int | None):
        tensors = [getattr(compiled.desc, f.name) for f in compiled.desc.schema.tensors]
        inputs = len(compiled.desc.schema.inputs)
        self.buffers = [device.create_buffer(t.total_tensor_size_in_bytes) for t in tensors]
        if in_place is not None:  # the output is bound over that input's buffer
            self.buffers[-1].destroy()
            self.buffers[-1] = self.buffers[in_place]
        temporary_size = compiled.binding_properties.temporary_resource_size
        self.temporary = device.create_buffer(temporary_size) if temporary_size else None
        self.table = device.create_binding_table(compiled, inputs=self.buffers[:inputs], outputs=self.buffers[inputs:],
                                                 temporary=self.temporary)
        self.nbytes = sum(b.size_in_bytes for b in {id(b): b for b in self.buffers}.values()) + temporary_size
        self.lock = threading.Lock()
        self.device = device
        self.freed = False
        self.retired = False
        self._round_trips = {}

    def run(self, spans: list[np.ndarray], upload_output: bool) -> np.ndarray:
        """Upload the input spans (and the output's, where its gaps must survive), run, and
        return the output buffer's bytes. An operator whose buffers are single segments takes
        one submission: the uploads, its stages and the download recorded together once."""
        device, table = self.device, self.table
        inputs, output = self.buffers[:-1], self.buffers[-1]
        uploaded = [*inputs, output] if upload_output else inputs
        single = not device.guarded and all(len(b.segments) == 1 for b in self.buffers)
        if not single:
            for buffer, span in zip(uploaded, spans):
                buffer.write(span)
            device.execute(table)
            return output.read(np.uint8, output.size_in_bytes)
        context = device.context
        with device.using():
            device.check_open()
            round_trip = self._round_trips.get(upload_output)
            if round_trip is None:
                round_trip = self._round_trips[upload_output] = context.record_round_trip(
                    list({id(b): b.segments[0] for b in uploaded}.values()), table.steps, [output.segments[0]])
            return context.run_round_trip(round_trip, [(b.segments[0], np.ascontiguousarray(span))
                                                       for b, span in zip(uploaded, spans)],
                                          output.segments[0], output.size_in_bytes)

    def retire(self) -> None:
        """Evicted from the cache (after the cache's lock is released): free the buffers once
        the call using them, if any, ends. Only `with` takes the lock: an interrupt landing
        between a bare acquire() and its try would leave it held, and the next call on this
        entry waiting forever."""
        self.retired = True
        with self.lock:
            self.free_if_retired()

    def forget(self) -> None:
        """The device is closing and frees everything itself."""
        self.freed = True

    def free_if_retired(self) -> None:
        """Called holding `lock`, at the end of a call."""
        if self.retired and not self.freed:
            self.freed = True
            for buffer in (*self.buffers, self.temporary):
                if buffer is not None:
                    buffer.destroy()


def _run_bound(device: Device, compiled: CompiledOperator, in_place: int | None, work):
    """work(binding) with the device's cached binding for this call shape, built when
    missing or freed by an eviction. `with binding.lock` (not acquire/try) so that an
    interrupt cannot leave the lock held."""
    key = (compiled.computation, in_place)
    while True:
        binding = device.front_end_cache.get(key)
        if binding is None:
            binding = device.front_end_cache.put(key, _Binding(device, compiled, in_place))
        with binding.lock:
            if not binding.freed:
                try:
                    return work(binding)
                finally:
                    binding.free_if_retired()
        with device.using():  # freed by close(): using() says so; else it was evicted, retry
            device.check_open()


def _as_array(value, name: str) -> np.ndarray:
    """A NumPy array of what the caller passed: an array, anything with __array__ or, on the
    host, __dlpack__ (PyTorch's bfloat16 tensors included), a list or a scalar."""
    if isinstance(value, DeviceArray):  # NumPy's DLPack has no bfloat16: copied directly
        return value.numpy()
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
        array = from_dlpack(value, name)
        if data_type_for_numpy(array.dtype) is None:
            raise InvalidArgumentError(f"{name}.dtype {array.dtype} has no TensorDataType")
        return array
    try:
        array = np.asarray(value)
    except Exception as error:  # anything NumPy cannot turn into an array
        raise InvalidArgumentError(f"{name} cannot be converted to a NumPy array: {error}") from None
    if data_type_for_numpy(array.dtype) is None:
        raise InvalidArgumentError(f"{name}.dtype {array.dtype} has no TensorDataType")
    return array


def _element_strides(array: np.ndarray) -> tuple[int, ...] | None:
    """Strides in elements, or None when some stride is not a whole number of elements.
    A dim of size 1 is never stepped along, so its stride carries nothing and is 0."""
    if any(s % array.itemsize for s, n in zip(array.strides, array.shape) if n > 1):
        return None
    return tuple(s // array.itemsize if n > 1 else 0 for s, n in zip(array.strides, array.shape))


def _bindable(array: np.ndarray) -> np.ndarray:
    """The array itself when its strides are whole, non-negative elements; else a contiguous copy."""
    strides = _element_strides(array)
    return array if strides is not None and min(strides, default=0) >= 0 else np.ascontiguousarray(array)


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
    arrays = [a if i == result_index else _bindable(a) for i, a in enumerate(arrays)]
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


def _check_same(arrays: dict[str, np.ndarray], shape_too: bool = True) -> None:
    names = list(arrays)
    first = arrays[names[0]]
    for name in names[1:]:
        if arrays[name].dtype != first.dtype:
            raise InvalidArgumentError(f"{name}.dtype {arrays[name].dtype} != {names[0]}.dtype {first.dtype}")
        if shape_too and arrays[name].shape != first.shape:
            raise InvalidArgumentError(f"{name}.shape {arrays[name].shape} != {names[0]}.shape {first.shape}")


def _check_out(out, shape, dtype, name: str = "out") -> None:
    if not isinstance(out, np.ndarray):
        raise InvalidArgumentError(f"{name} must be a NumPy array, not {type(out).__name__}", "out")
    if out.shape != shape or out.dtype != dtype:
        raise InvalidArgumentError(
            f"{name} has shape {out.shape} and dtype {out.dtype}; the result has {shape} and {dtype}", "out")
    if not out.flags.writeable:
        raise InvalidArgumentError(f"{name} is read-only", "out")


def _elements(flat: np.ndarray, sizes, strides) -> np.ndarray:
    """The elements of a span (a 1-D array from the first element to the last) as an array of
    `sizes`, read through the element strides: a view, never the gaps."""
    return as_strided(flat, shape=sizes, strides=tuple(s * flat.itemsize for s in strides), writeable=True)


def _broadcast(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays as views of one shape, by NumPy's broadcasting rules (zero strides, no copy)."""
    names = list(arrays)
    _check_same(arrays, shape_too=False)
    shape = arrays[names[0]].shape
    for name in names[1:]:
        try:
            shape = np.broadcast_shapes(shape, arrays[name].shape)
        except ValueError:
            raise InvalidArgumentError(f"{name} has shape {arrays[name].shape}, which does not broadcast with "
                                       f"{names[0]}'s {arrays[names[0]].shape}", "sizes") from None
    return {name: np.broadcast_to(a, shape) if a.shape != shape else a for name, a in arrays.items()}


def _call_key(desc_class, data_type, sizes, strides, fields) -> tuple | None:
    """What determines the desc of a front-end call, or None if a field is not a plain value
    (the slow path then builds the desc, which says what is wrong)."""
    try:
        with np.errstate(all="ignore"):
            values = tuple((name, fp32_bits(v) if isinstance(v, float) else v) for name, v in sorted(fields.items()))
        hash(values)
    except Exception:  # whatever a caller passed: the desc's validation reports it
        return None
    if any(type(v) not in (int, bool) for _, v in values):
        return None
    return ("front end", desc_class, data_type, sizes, tuple(strides), values)


def _compiled_for(device: Device, desc_class, data_type, sizes, strides, fields) -> CompiledOperator:
    """The compiled operator for a call's layout; a call shaped like an earlier one reuses
    its validated desc without building or checking it again."""
    key = _call_key(desc_class, data_type, sizes, strides, fields)
    compiled = device.compiled_operators.get(key) if key is not None else None
    if compiled is None:
        desc_class(*[BufferTensorDesc(data_type, (1,))] * len(strides), **fields)  # the scalars' errors first
        descs = [BufferTensorDesc(data_type, sizes, s) for s in strides]
        compiled = device.compile_cached(desc_class(*descs, **fields))
        if key is not None:
            device.compiled_operators.put(key, compiled)
    return compiled


def _run_elementwise(desc_class, arrays: dict[str, np.ndarray], out, device: Device | None,
                     **fields) -> np.ndarray:
    """Run an element-wise operator; `arrays` maps argument names to its inputs, in order;
    `fields` are the desc's scalars and flags."""
    arrays = _broadcast(arrays)
    first = next(iter(arrays.values()))
    data_type = data_type_for_numpy(first.dtype)
    device = _device(device)
    if out is not None:
        _check_out(out, first.shape, first.dtype)
    result = out if out is not None else np.empty(first.shape, first.dtype)
    if first.size == 0:  # nothing to run, but the call must still be one the operator accepts
        desc_class(*[BufferTensorDesc(data_type, (1,))] * (len(arrays) + 1), **fields)
        return result
    # The result is computed in `target`: `out` itself where its strides are whole elements,
    # else a contiguous array copied into `out` at the end.
    target = result if _element_strides(result) is not None else np.empty(first.shape, first.dtype)
    inputs = list(arrays.values())
    # An input bound in place must be the result itself, element for element, and the
    # operator must run in place; any other sharing of memory reads the input as it was
    # before the call, as NumPy does.
    in_place = next((i for i, a in enumerate(inputs) if a.shape == target.shape and a.strides == target.strides
                     and a.__array_interface__["data"][0] == target.__array_interface__["data"][0]
                     and desc_class.schema.in_place), None)
    inputs = [a.copy() if i != in_place and np.shares_memory(a, target) else a for i, a in enumerate(inputs)]
    views, sizes, strides = _views([*inputs, target], len(inputs))
    compiled = _compiled_for(device, desc_class, data_type, sizes, strides, fields)
    descs = [getattr(compiled.desc, f.name) for f in compiled.desc.schema.tensors]
    if not compiled.plan.windowable and max(d.total_tensor_size_in_bytes for d in descs) > device.segment_size:
        # A layout that cannot be split across buffer segments: run on packed copies instead.
        packed = np.empty(first.shape, first.dtype)
        _run_elementwise(desc_class, {name: np.ascontiguousarray(a) for name, a in arrays.items()}, packed,
                         device, **fields)
        result[...] = packed
        return result
    spans = [_span(v, sizes, s) for v, s in zip(views, strides)]
    # The gaps between out's elements are never written: in place they are uploaded with
    # the input, otherwise the shader leaves them and only the elements are copied back.
    gaps = in_place is None and spans[-1].size > target.size
    raw = _run_bound(device, compiled, in_place, lambda binding: binding.run(spans if gaps else spans[:-1], gaps))
    computed = raw[:spans[-1].nbytes].view(first.dtype)
    if gaps:  # only the elements, never the gaps another writer may own
        _elements(spans[-1], sizes, strides[-1])[...] = _elements(computed, sizes, strides[-1])
    else:
        spans[-1][...] = computed
    if target is not result:
        result[...] = target
    return result


def _run_fast(schema: OperatorSchema, arrays: tuple, values: dict) -> np.ndarray | None:
    """The result of a call on C-contiguous NumPy arrays of one shape and dtype with no `out`
    (a loop's usual call), or None for the general path. Such a call's desc is the packed 1-D
    one the general path would build, so the compiled operator and the bound buffers of an
    earlier call with the same dtype, size and scalars' bits are reused as they are: no
    broadcasting, views, aliasing or layout work, and no desc is built or checked again."""
    first = arrays[0]
    if type(first) is not np.ndarray or first.size < 2 or not first.flags.c_contiguous:
        return None
    for array in arrays[1:]:
        if type(array) is not np.ndarray or array.dtype != first.dtype or array.shape != first.shape \
                or not array.flags.c_contiguous:
            return None
    data_type = data_type_for_numpy(first.dtype)
    device = values["device"]
    if data_type is None or not isinstance(device, (Device, type(None))) or \
            any(s.name not in values for s in schema.scalars) or \
            not isinstance(values.get("use_dst", False), (bool, np.bool_)):
        return None
    device = _device(device)
    fields = {s.name: values[s.name] for s in schema.scalars}
    fields.update({f.name: bool(values[f.name]) for f in schema.flags})
    fields.update({c.name: values[c.name] for c in schema.choices})
    compiled = _compiled_for(device, schema.desc_class, data_type, (first.size,), [(1,)] * (len(arrays) + 1), fields)
    raw = _run_bound(device, compiled, None, lambda binding: binding.run([a.reshape(-1) for a in arrays], False))
    return raw[:first.nbytes].view(first.dtype).reshape(first.shape)


def _resident(values: dict[str, object], out) -> bool:
    """Whether a call computes on device arrays (any argument, or out, is one)."""
    return isinstance(out, DeviceArray) or any(isinstance(v, DeviceArray) for v in values.values())


def _run_resident(schema: OperatorSchema, values: dict[str, object], out, device: Device | None, fields: dict,
                  rowwise: bool = False, axes=None, host_run=None) -> DeviceArray | np.ndarray:
    """Run an operator on device arrays without a host round trip; host arguments are uploaded
    first. Element-wise operators broadcast as NumPy does; row-wise ones (`rowwise`) take one
    shape, over the last axis (`axes` None: rows folded as DirectML's 2-D form) or `axes`.
    Returns a new DeviceArray, or `out` (a DeviceArray, or a host array the result is copied to).

    `host_run(arrays, device)`, for a row-wise operator, is the same call on host copies: what runs one
    whose arrays are larger than one buffer segment (its kernel reads a row at a time and
    cannot be cut into windows; the host front end splits the call along its rows)."""
    resident = [v for v in (*values.values(), out) if isinstance(v, DeviceArray)]
    owner = resident[0].device
    if device is not None and device is not owner:
        raise InvalidArgumentError("device names another device than the device arrays': pass arrays of that device "
                                   "(dmlpy.asarray(a, device=...)) or leave device out")
    like = next((v for v in values.values() if isinstance(v, DeviceArray)), resident[0])
    arrays = {}
    for name, value in values.items():
        if isinstance(value, DeviceArray):
            if value.device is not owner:
                raise InvalidArgumentError(f"{name} is a DeviceArray of another device")
            arrays[name] = value
        else:
            arrays[name] = asarray(value, owner, like.dtype if _typeless(value) else None)
    first_name, first = next(iter(arrays.items()))
    for name, array in arrays.items():
        if array.dtype != first.dtype:
            raise InvalidArgumentError(f"{name}.dtype {array.dtype} != {first_name}.dtype {first.dtype}", "data_type")
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{name} {a.shape}" for name, a in arrays.items())
        raise InvalidArgumentError(f"the shapes do not broadcast: {shapes}", "sizes") from None
    if rowwise and any(a.shape != shape for a in arrays.values()):
        raise InvalidArgumentError(f"{schema.name} on device arrays takes arrays of one shape (no broadcasting)",
                                   "sizes")
    if out is not None and not isinstance(out, DeviceArray):
        _check_out(out, shape, first.dtype)
        out[...] = _run_resident(schema, arrays, None, None, fields, rowwise, axes, host_run).numpy()
        return out
    if out is not None and (out.device is not owner or out.shape != shape or out.dtype != first.dtype):
        raise InvalidArgumentError(f"out is a DeviceArray of shape {out.shape} and dtype {out.dtype} on "
                                   f"{out.device.adapter_name!r}; the result has {shape} and {first.dtype} on "
                                   f"{owner.adapter_name!r}", "out")
    oversized = max(math.prod(shape), 1) * first.dtype.itemsize > owner.segment_size - 16
    if oversized and rowwise:
        computed = host_run({name: a.numpy() for name, a in arrays.items()}, owner)
        if out is None:
            return asarray(computed, owner)
        out.write(computed)
        return out
    if oversized:  # a broadcast input cannot be windowed across segments: it is read packed
        arrays = {name: a if a.shape == shape else asarray(np.broadcast_to(a.numpy(), shape), owner)
                  for name, a in arrays.items()}
    sizes = shape or (1,)
    if rowwise and axes is None and len(sizes) > 1:
        sizes = (math.prod(sizes[:-1]), sizes[-1])
    if rowwise or len(sizes) <= MAX_DIMENSION_COUNT:
        strides = [packed_strides(sizes) if rowwise else a.broadcast_strides(sizes) for a in arrays.values()]
    else:  # element-wise work only pairs elements: dims every array walks alike merge
        sizes, strides = merge_dims(sizes, [*(a.broadcast_strides(sizes) for a in arrays.values()),
                                            packed_strides(sizes)])
        strides.pop()  # the result's: packed
    if len(sizes) > MAX_DIMENSION_COUNT:
        raise InvalidArgumentError(f"the result has {len(sizes)} dims that do not merge: {schema.name} takes 1 to "
                                   f"{MAX_DIMENSION_COUNT} (DirectML's limit)", "dimension_count")
    extra = {"axes": _normalized_axes(axes, len(sizes))} if rowwise and axes is not None else {}
    if math.prod(shape) == 0:  # nothing to run, but the call must still be one the operator accepts
        schema.desc_class(*[BufferTensorDesc(first.data_type, (1,) * len(sizes))] * len(schema.tensors), **fields,
                          **extra)
        return out if out is not None else DeviceArray(owner, shape, first.dtype)
    descs = [a.strided_desc(sizes, s) for a, s in zip(arrays.values(), strides)]
    desc = schema.desc_class(*descs, BufferTensorDesc(first.data_type, sizes), **fields, **extra)
    if out is None and not rowwise and len(schema.outputs) == 1 and schema.elementwise is not None:
        # An element-wise result is computed when first read, with the chain that leads to it
        # as one fused graph (device_array.py); the operator is accepted (or refused) now.
        own = owner.create_operator(desc).desc
        if schema.elementwise(own) is not None:
            return DeviceArray.deferred(owner, shape, first.dtype, own, tuple(arrays.values()))
    # An output over one of its inputs runs in place where it may: the same elements, and an
    # operator that allows it; otherwise into a new array, copied to `out` bit for bit.
    aliased = out is not None and any(a is out for a in arrays.values())
    in_place = aliased and schema.in_place and all(a.shape == shape for a in arrays.values() if a is out)
    result = out if out is not None and (in_place or not aliased) else DeviceArray(owner, shape, first.dtype)
    run_on_arrays(owner.compile_cached(desc), list(arrays.values()), result)
    if result is not out and out is not None:
        return _run_resident(OPERATORS["identity"], {"x": result}, out, None, {})
    return result


PRELU_RULES = (
    "slope must follow oneDNN's PReLU broadcasting rules: a 1-D slope as long as x's channel dim "
    "(axis 1 for NCX, the last axis for NXC), a 1-D slope of length 1, or a slope shaped x.shape[1:]")


def _slope_strides(x_shape, slope: np.ndarray, data_format: str) -> tuple[int, ...]:
    """The slope's element strides over x's dims (0 where it broadcasts), by oneDNN's rules."""
    strides = _element_strides(slope)
    channel_axis = 1 if data_format == "NCX" else len(x_shape) - 1
    if slope.ndim == 1 and 0 <= channel_axis < len(x_shape) and slope.shape[0] == x_shape[channel_axis]:
        return tuple(strides[0] if axis == channel_axis else 0 for axis in range(len(x_shape)))
    if slope.ndim == 1 and slope.shape[0] == 1:
        return (0,) * len(x_shape)
    if len(x_shape) >= 1 and slope.shape == tuple(x_shape[1:]):
        return (0, *strides)
    raise InvalidArgumentError(f"slope.shape {slope.shape} with x.shape {tuple(x_shape)} and data_format "
                               f"{data_format!r}: {PRELU_RULES}", "sizes")


def _slope_axes(x_shape, slope: np.ndarray, data_format: str) -> dict[int, int]:
    """Which axis of slope each axis of x it varies along reads (_slope_strides' rules)."""
    channel_axis = 1 if data_format == "NCX" else len(x_shape) - 1
    if slope.ndim == 1 and 0 <= channel_axis < len(x_shape) and slope.shape[0] == x_shape[channel_axis]:
        return {channel_axis: 0}
    if slope.ndim == 1 and slope.shape[0] == 1:
        return {}
    return {axis: axis - 1 for axis in range(1, len(x_shape))}


def _prelu_outputs(out, x: np.ndarray, slope: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dslope) to write: new arrays, or NumPy's multi-output form out=(dx, dslope)."""
    if out is None:
        return np.empty(x.shape, x.dtype), np.zeros(slope.shape, x.dtype)
    if not isinstance(out, tuple) or len(out) != 2:
        raise InvalidArgumentError(f"out must be a tuple (dx, dslope) of two NumPy arrays, not {type(out).__name__}",
                                   "out")
    for name, array, like in (("out[0] (dx)", out[0], x), ("out[1] (dslope)", out[1], slope)):
        _check_out(array, like.shape, x.dtype, name)
    if np.shares_memory(out[0], out[1]):
        raise InvalidArgumentError("out[0] (dx) and out[1] (dslope) share memory", "out")
    return out


def prelu_grad(x, slope, dy, *, data_format: str = "NXC", out: tuple[np.ndarray, np.ndarray] | None = None,
               device: Device | None = None) -> tuple[np.ndarray, np.ndarray]:
    """oneDNN's PReLUBackward: (dx, dslope), dslope shaped like slope.

    dx = x > 0 ? dy : slope * dy; dslope sums (x > 0 ? 0 : x * dy) over the dims slope is
    broadcast along, in a fixed order with FP32 accumulation. out=(dx, dslope): arrays to
    write the results to (NumPy's form for several outputs), which are returned.
    """
    if not isinstance(data_format, str) or data_format not in ("NCX", "NXC"):
        raise InvalidArgumentError(f"data_format {data_format!r} must be 'NCX' or 'NXC'")
    device = _device(device)
    arrays = _as_arrays({"x": x, "slope": slope, "dy": dy})
    _check_same({"x": arrays["x"], "dy": arrays["dy"]})
    _check_same(arrays, shape_too=False)
    x, slope, dy = (_bindable(a) for a in arrays.values())
    slope_strides = _slope_strides(x.shape, slope, data_format)
    dx, dslope = _prelu_outputs(out, x, slope)
    if x.size == 0:
        dslope[...] = 0
        return dx, dslope
    if x.ndim == 0 or x.ndim > MAX_DIMENSION_COUNT:
        raise InvalidArgumentError(f"x has {x.ndim} dims: prelu_grad takes 1 to {MAX_DIMENSION_COUNT}")
    data_type = data_type_for_numpy(x.dtype)
    reduced = [size > 1 and stride == 0 for size, stride in zip(x.shape, slope_strides)]
    dslope_sizes = tuple(1 if r else size for r, size in zip(reduced, x.shape))
    descs = [BufferTensorDesc(data_type, x.shape, _element_strides(x)),
             BufferTensorDesc(data_type, x.shape, slope_strides),
             BufferTensorDesc(data_type, x.shape, _element_strides(dy)),
             BufferTensorDesc(data_type, x.shape),
             BufferTensorDesc(data_type, dslope_sizes)]
    compiled = device.compile_cached(ActivationParameterizedReluGradOperatorDesc(*descs))
    limit = device.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    if x.nbytes > limit:  # pieces along the axes slope varies on: each keeps its slope elements' sums whole
        slope_axis = _slope_axes(x.shape, slope, data_format)
        for piece in _pieces(x.shape, {a for a, r in enumerate(reduced) if r}, x.itemsize, limit, "prelu_grad"):
            slope_piece = [slice(None)] * slope.ndim
            for axis, where in slope_axis.items():
                slope_piece[where] = piece[axis]
            slope_piece = tuple(slope_piece)
            pieces = (np.ascontiguousarray(a) for a in (x[piece], slope[slope_piece], dy[piece]))
            prelu_grad(*pieces, data_format=data_format, out=(dx[piece], dslope[slope_piece]), device=device)
        return dx, dslope

    def work(binding):
        for buffer, array, desc in zip(binding.buffers, (x, slope, dy), descs):
            buffer.write(_span(array, desc.sizes, desc.element_strides))
        device.execute(binding.table)
        dx[...] = binding.buffers[3].read(x.dtype, x.size).reshape(x.shape)
        dslope[...] = binding.buffers[4].read(x.dtype, dslope.size).reshape(slope.shape)

    _run_bound(device, compiled, None, work)
    return dx, dslope


# The NumPy argument each tensor field of an element-wise operator becomes.
ARGUMENT_NAMES = {"input_tensor": "x", "input_gradient_tensor": "dy", "slope_tensor": "slope"}


def _scalar_default(schema: OperatorSchema, name: str):
    default = next(f.default for f in dataclasses.fields(schema.desc_class) if f.name == name)
    return inspect.Parameter.empty if default is dataclasses.MISSING else default


# What a Python number or list without an array beside it becomes: DirectML has no FLOAT64 or
# INT64 activations, so PyTorch's defaults rather than NumPy's.
DEFAULT_DTYPES = {"f": np.float32, "i": np.int32}


def _typeless(value) -> bool:
    """A Python number, or a list or tuple: values without a dtype of their own."""
    return isinstance(value, (int, float, list, tuple)) and not isinstance(value, bool)


def _as_arrays(values: dict[str, object]) -> dict[str, np.ndarray]:
    """Arrays for the arguments, in order. Python numbers and lists take the dtype of the first
    argument that has one (NumPy 2's rule for scalars); without one, the first becomes float32
    or int32 and the others follow it."""
    arrays = {name: _as_array(value, name) for name, value in values.items() if not _typeless(value)}
    like = next(iter(arrays.values()), None)
    for name, value in values.items():
        if name in arrays:
            continue
        try:
            if like is not None:
                arrays[name] = _as_array(np.asarray(value, like.dtype), name)
                continue
            natural = _as_array(value, name) if isinstance(value, (list, tuple)) else np.asarray(value)
            default = DEFAULT_DTYPES.get(natural.dtype.kind)
            if default is not None and natural.dtype.itemsize > np.dtype(default).itemsize:
                converted = natural.astype(default)
                if default is np.int32 and not np.array_equal(converted, natural):
                    raise OverflowError(f"{value!r} is beyond int32")
                natural = converted
            arrays[name] = like = _as_array(natural, name)  # the others follow it
        except InvalidArgumentError:
            raise
        except (OverflowError, ValueError, TypeError) as error:
            dtype = like.dtype if like is not None else "float32 or int32"
            raise InvalidArgumentError(f"{name} {value!r} does not fit the arrays' dtype {dtype}: {error}",
                                       "data_type") from None
    return {name: arrays[name] for name in values}


def front_end(schema: OperatorSchema, use_dst: bool):
    """The NumPy function of an element-wise operator: its inputs as arrays (broadcast as
    NumPy broadcasts), its scalars with DirectML's defaults, `out=` and `device=`."""
    arguments = [ARGUMENT_NAMES[field.name] for field in schema.inputs]
    parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in arguments]
    parameters += [inspect.Parameter(s.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                     default=_scalar_default(schema, s.name)) for s in schema.scalars]
    keyword = inspect.Parameter.KEYWORD_ONLY
    if use_dst:
        parameters.append(inspect.Parameter("use_dst", keyword, default=False))
    parameters += [inspect.Parameter(c.name, keyword, default=c.choices[0]) for c in schema.choices]
    parameters += [inspect.Parameter("out", keyword, default=None), inspect.Parameter("device", keyword, default=None)]
    signature = inspect.Signature(parameters)
    flags = {f.name for f in schema.flags}
    defaults = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
    fast_keywords = {*defaults} - {"out"}

    def run(*args, **kwargs):
        if len(args) == len(arguments) and kwargs.keys() <= fast_keywords:
            result = _run_fast(schema, args, {**defaults, **kwargs})
            if result is not None:
                return result
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        if use_dst and not isinstance(values["use_dst"], (bool, np.bool_)):
            raise InvalidArgumentError(f"use_dst {values['use_dst']!r} must be a bool", "use_dst")
        fields = {s.name: values[s.name] for s in schema.scalars}
        fields.update({name: bool(values[name]) for name in flags})
        fields.update({c.name: values[c.name] for c in schema.choices})
        inputs = {name: values[name] for name in arguments}
        if _resident(inputs, values["out"]):
            return _run_resident(schema, inputs, values["out"], values["device"], fields)
        return _run_elementwise(schema.desc_class, _as_arrays({name: values[name] for name in arguments}),
                                values["out"], values["device"], **fields)

    run.__name__ = run.__qualname__ = schema.name
    run.__signature__ = signature
    run.__doc__ = (f"{schema.dml_name} on NumPy arrays: {schema.formula}."
                   + ("\n\nuse_dst=True: x is the forward's output Y instead of its input X (oneDNN's use_dst)."
                      if use_dst else ""))
    run.__module__ = __name__
    return run


def _normalized_axes(axes, ndim: int):
    """NumPy's axis conventions (an int, a sequence, negative from the end) as DirectML's
    tuple of non-negative axes; anything else goes to the desc, which says what is wrong."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = (axes,)
    if isinstance(axes, (tuple, list)) and all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                                               for a in axes):
        return tuple(int(a) + ndim if -ndim <= a < 0 else int(a) for a in axes)
    return axes


def _pieces(shape: tuple[int, ...], reduced: set[int], itemsize: int, limit: int, what: str) -> list[tuple]:
    """Index tuples cutting an array of `shape` along the axes not in `reduced`, outermost
    first, into pieces of at most `limit` bytes each: a row-wise kernel reads whole rows,
    so it cannot be windowed across buffer segments the way element-wise kernels are, but
    each of its outputs depends only on its own rows, which a piece keeps whole."""
    def cut(index: tuple, axis: int) -> list[tuple]:
        extent = [s.stop - s.start for s in index]
        nbytes = math.prod(extent) * itemsize
        if nbytes <= limit:
            return [index]
        free = next((a for a in range(axis, len(shape)) if a not in reduced and extent[a] > 1), None)
        if free is None:
            raise UnsupportedError(
                f"{what} reduces {math.prod(extent)} elements ({nbytes} bytes) at once, and this device binds at "
                f"most {limit} bytes of a tensor at once (maxStorageBufferRange): reduce fewer elements per call")
        step = max(1, limit // (nbytes // extent[free]))
        pieces = []
        for start in range(index[free].start, index[free].stop, step):
            piece = list(index)
            piece[free] = slice(start, min(start + step, index[free].stop))
            pieces += cut(tuple(piece), free + 1)
        return pieces

    return cut(tuple(slice(0, n) for n in shape), 0)


def _run_rowwise(schemas: tuple[OperatorSchema, OperatorSchema], arrays: dict[str, np.ndarray], axes, out,
                 device: Device | None, **fields) -> np.ndarray:
    """Run a row-wise operator (the softmax family) on packed copies of the arrays: over the
    last axis with DirectML's axis-less form (leading dims folded into rows), or over `axes`
    with its *1 form."""
    arrays = _broadcast(arrays)
    first = next(iter(arrays.values()))
    device = _device(device)
    if out is not None:
        _check_out(out, first.shape, first.dtype)
    result = out if out is not None else np.empty(first.shape, first.dtype)
    shape = first.shape or (1,)
    if axes is None:
        schema, extra = schemas[0], {}
        sizes = shape if len(shape) == 1 else (math.prod(shape[:-1]), shape[-1])
    else:
        schema, extra = schemas[1], {"axes": _normalized_axes(axes, len(shape))}
        sizes = shape
        if len(sizes) > MAX_DIMENSION_COUNT:
            raise InvalidArgumentError(f"x has {len(sizes)} dims: {schema.name} takes 1 to {MAX_DIMENSION_COUNT}")
    data_type = data_type_for_numpy(first.dtype)
    if first.size == 0:  # nothing to run, but the call must still be one the operator accepts
        schema.desc_class(*[BufferTensorDesc(data_type, (1,) * len(sizes))] * len(schema.tensors), **fields, **extra)
        return result
    compiled = device.compile_cached(
        schema.desc_class(*[BufferTensorDesc(data_type, sizes)] * len(schema.tensors), **fields, **extra))
    limit = device.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    if first.nbytes > limit:
        reduced = {len(shape) - 1} if axes is None else set(extra["axes"])
        for piece in _pieces(first.shape, reduced, first.itemsize, limit, schema.name):
            _run_rowwise(schemas, {name: a[piece] for name, a in arrays.items()}, axes, result[piece], device,
                         **fields)
        return result
    packed = [np.ascontiguousarray(a).reshape(-1) for a in arrays.values()]

    def work(binding):
        for buffer, array in zip(binding.buffers, packed):
            buffer.write(array)
        device.execute(binding.table)
        result[...] = binding.buffers[-1].read(first.dtype, first.size).reshape(first.shape)

    _run_bound(device, compiled, None, work)
    return result


def rowwise_front_end(schemas: tuple[OperatorSchema, OperatorSchema], use_dst: bool):
    """The NumPy function of a row-wise operator: `axes=None` is DirectML's last-axis form,
    a tuple (or an int; negative counts from the end, as in NumPy) its *1 form."""
    schema = schemas[0]
    arguments = [ARGUMENT_NAMES[field.name] for field in schema.inputs]
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [inspect.Parameter(name, positional) for name in arguments]
    parameters += [inspect.Parameter(s.name, positional, default=_scalar_default(schema, s.name))
                   for s in schema.scalars]
    parameters.append(inspect.Parameter("axes", positional, default=None))
    keyword = inspect.Parameter.KEYWORD_ONLY
    if use_dst:
        parameters.append(inspect.Parameter("use_dst", keyword, default=False))
    parameters += [inspect.Parameter(c.name, keyword, default=c.choices[0]) for c in schema.choices]
    parameters += [inspect.Parameter("out", keyword, default=None), inspect.Parameter("device", keyword, default=None)]
    signature = inspect.Signature(parameters)

    def run(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        if use_dst and not isinstance(values["use_dst"], (bool, np.bool_)):
            raise InvalidArgumentError(f"use_dst {values['use_dst']!r} must be a bool", "use_dst")
        fields = {s.name: values[s.name] for s in schema.scalars}
        fields.update({f.name: bool(values[f.name]) for f in schema.flags})
        fields.update({c.name: values[c.name] for c in schema.choices})
        inputs = {name: values[name] for name in arguments}
        if _resident(inputs, values["out"]):
            axes = values["axes"]
            form = schemas[0] if axes is None else schemas[1]
            return _run_resident(form, inputs, values["out"], values["device"], fields, rowwise=True, axes=axes,
                                 host_run=lambda arrays, device: _run_rowwise(schemas, arrays, axes, None, device,
                                                                              **fields))
        return _run_rowwise(schemas, _as_arrays({name: values[name] for name in arguments}), values["axes"],
                            values["out"], values["device"], **fields)

    run.__name__ = run.__qualname__ = schema.name
    run.__signature__ = signature
    run.__doc__ = (f"{schema.dml_name} on NumPy arrays: {schema.formula}.\n\naxes=None: over the last axis "
                   f"({schema.dml_name}); a tuple of axes: over those ({schemas[1].dml_name})."
                   + ("\n\nuse_dst=True: x is the forward's output Y instead of its input X (oneDNN's use_dst)."
                      if use_dst else ""))
    run.__module__ = __name__
    return run


def _front_end_for(row, suffix: str, use_dst: bool):
    if row.axes_form is None:
        return front_end(OPERATORS[row.name + suffix], use_dst)
    return rowwise_front_end((OPERATORS[row.name + suffix], OPERATORS[row.name + "1" + suffix]), use_dst)


FRONT_ENDS: dict[str, object] = {}
for _row in TABLE:
    FRONT_ENDS[_row.name] = _front_end_for(_row, "", use_dst=False)
    if _row.gradient is not None:
        FRONT_ENDS[f"{_row.name}_grad"] = _front_end_for(_row, "_grad", use_dst=_row.use_dst is not None)
globals().update(FRONT_ENDS)
