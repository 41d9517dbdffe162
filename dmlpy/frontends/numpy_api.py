"""NumPy front end: run an operator on arrays with a module-level default device.

Arrays are not made contiguous: each becomes a desc whose element strides match the
array's, over the span of memory the array covers, uploaded once. See README, "NumPy".
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math
from collections.abc import Callable

import numpy as np

from ..base.errors import InvalidArgumentError
from ..base.tensor_desc import MAX_DIMENSION_COUNT, BufferTensorDesc, packed_strides
from ..base.types import TensorDataType as T
from ..base.types import data_type_for_numpy, data_type_info
from ..kernels.codegen import merge_dims
from ..ops.catalogue import OPERATORS
from ..ops.family import FrontEndShape
from ..ops.schema import OperatorSchema, fp32_bits
from ..runtime.binding import MINIMUM_BUFFER_TENSOR_ALIGNMENT
from ..runtime.device import CompiledOperator, Device
from .array_operators import ARRAY_OPERATORS
from .arrays import (
    as_array,
    as_arrays,
    as_device,
    asarray,
    bindable_views,
    broadcast,
    check_out,
    check_same_dtype,
    constant_array,
    element_strides,
    elements,
    normalized_axes,
    refuse_dtype,
    span,
    typed_like,
    typeless,
    whole_row_pieces,
)
from .call_cache import run_bound
from .device_array import DeviceArray, run_on_arrays
from .result_types import free_output, output_data_type, type_groups

LOG = logging.getLogger(__name__)


def _call_key(desc_class, data_types, sizes, strides, fields) -> tuple | None:
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
    return ("front end", desc_class, tuple(data_types), sizes, tuple(strides), values)


def refuse_untaken_data_types(schema: OperatorSchema, data_types) -> None:
    """An argument of a data type the operator takes at no feature level is refused in the
    front end's terms: which argument, which dtypes the operator takes, and how to convert."""
    for field, data_type in zip(schema.inputs, data_types):
        refuse_dtype(schema.name, schema.dml_name, field.argument, data_type,
                     field.data_types or schema.data_types())


def _compiled_for(device: Device, desc_class, data_types, sizes, strides, fields) -> CompiledOperator:
    """The compiled operator for a call's layout (`data_types` and `strides` per tensor); a
    call shaped like an earlier one reuses its validated desc without building or checking
    it again."""
    key = _call_key(desc_class, data_types, sizes, strides, fields)
    compiled = device.compiled_operators.get(key) if key is not None else None
    if compiled is None:
        refuse_untaken_data_types(desc_class.schema, data_types)
        desc_class(*[BufferTensorDesc(t, (1,)) for t in data_types], **fields)  # the scalars' errors first
        descs = [BufferTensorDesc(t, sizes, s) for t, s in zip(data_types, strides)]
        compiled = device.compile_cached(desc_class(*descs, **fields))
        if key is not None:
            device.compiled_operators.put(key, compiled)
    return compiled


def _run_elementwise(desc_class, arrays: dict[str, np.ndarray], out, device: Device | None,
                     requested: T | None = None, **fields) -> np.ndarray:
    """Run an element-wise operator; `arrays` maps argument names to its inputs, in order;
    `fields` are the desc's scalars and flags; `requested` the result's type where the
    operator leaves it free (CAST)."""
    schema = desc_class.schema
    arrays = broadcast(arrays, type_groups(schema))
    first = next(iter(arrays.values()))
    input_types = {name: data_type_for_numpy(a.dtype) for name, a in arrays.items()}
    result_type = output_data_type(schema, input_types, requested)
    data_types = [*input_types.values(), result_type]
    result_dtype = data_type_info(result_type).numpy_dtype
    device = as_device(device)
    if out is not None:
        check_out(out, first.shape, result_dtype)
    result = out if out is not None else np.empty(first.shape, result_dtype)
    if first.size == 0:  # nothing to run, but the call must still be one the operator accepts
        desc_class(*[BufferTensorDesc(t, (1,)) for t in data_types], **fields)
        return result
    # The result is computed in `target`: `out` itself where its strides are whole elements,
    # else a contiguous array copied into `out` at the end.
    target = result if element_strides(result) is not None else np.empty(first.shape, result_dtype)
    inputs = list(arrays.values())
    # An input bound in place must be the result itself, element for element, and the
    # operator must run in place; any other sharing of memory reads the input as it was
    # before the call, as NumPy does.
    in_place = next((i for i, a in enumerate(inputs) if a.dtype == target.dtype and a.shape == target.shape
                     and a.strides == target.strides
                     and a.__array_interface__["data"][0] == target.__array_interface__["data"][0]
                     and desc_class.schema.in_place), None)
    inputs = [a.copy() if i != in_place and np.shares_memory(a, target) else a for i, a in enumerate(inputs)]
    views, sizes, strides = bindable_views([*inputs, target], len(inputs))
    compiled = _compiled_for(device, desc_class, data_types, sizes, strides, fields)
    descs = [getattr(compiled.desc, f.name) for f in compiled.desc.schema.tensors]
    if not compiled.plan.windowable and max(d.total_tensor_size_in_bytes for d in descs) > device.segment_size:
        # A kernel that binds each tensor whole (a layout or a mix of widths that cannot be
        # windowed) larger than a buffer segment: element by element, so run it on packed host
        # copies in pieces that each fit in one segment.
        LOG.info("%s: a layout larger than a buffer segment (%d bytes) that cannot be windowed runs on packed "
                 "host copies, in pieces", desc_class.schema.name, device.segment_size)
        flat = {name: np.ascontiguousarray(a).reshape(-1) for name, a in arrays.items()}
        widest = max(d.element_size for d in descs)
        step = max(device.segment_size // widest // 16 * 16, 1)
        packed = np.empty(first.size, result_dtype)
        for start in range(0, first.size, step):
            _run_elementwise(desc_class, {name: a[start:start + step] for name, a in flat.items()},
                             packed[start:start + step], device, requested, **fields)
        result[...] = packed.reshape(first.shape)
        return result
    spans = [span(v, sizes, s) for v, s in zip(views, strides)]
    # The gaps between out's elements are never written: in place they are uploaded with
    # the input, otherwise the shader leaves them and only the elements are copied back.
    gaps = in_place is None and spans[-1].size > target.size
    raw = run_bound(device, compiled, in_place, lambda binding: binding.run(spans if gaps else spans[:-1], gaps))
    computed = raw[:spans[-1].nbytes].view(result_dtype)
    if gaps:  # only the elements, never the gaps another writer may own
        elements(spans[-1], sizes, strides[-1])[...] = elements(computed, sizes, strides[-1])
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
            any(f.name not in values for f in (*schema.scalars, *schema.values)) or \
            not all(isinstance(values[f.name], (bool, np.bool_)) for f in schema.flags):
        return None
    device = as_device(device)
    fields = {s.name: values[s.name] for s in schema.scalars}
    fields.update({f.name: bool(values[f.name]) for f in schema.flags})
    fields.update({c.name: values[c.name] for c in schema.choices})
    fields.update({v.name: values[v.name] for v in schema.values})
    result_type = output_data_type(schema, {field.argument: data_type for field in schema.inputs})
    compiled = _compiled_for(device, schema.desc_class, [data_type] * len(arrays) + [result_type], (first.size,),
                             [(1,)] * (len(arrays) + 1), fields)
    if not compiled.plan.windowable and \
            first.size * max(first.itemsize, data_type_info(result_type).element_size) > device.segment_size:
        return None  # past a buffer segment with a kernel that binds tensors whole: the general path runs pieces
    raw = run_bound(device, compiled, None, lambda binding: binding.run([a.reshape(-1) for a in arrays], False))
    result_dtype = data_type_info(result_type).numpy_dtype
    return raw[:first.size * result_dtype.itemsize].view(result_dtype).reshape(first.shape)


def _resident(values: dict[str, object], out) -> bool:
    """Whether a call computes on device arrays (any argument, or out, is one)."""
    return isinstance(out, DeviceArray) or any(isinstance(v, DeviceArray) for v in values.values())


def _run_resident(schema: OperatorSchema, values: dict[str, object], out, device: Device | None, fields: dict,
                  rowwise: bool = False, axes=None, host_run=None, requested: T | None = None
                  ) -> DeviceArray | np.ndarray:
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
    groups = type_groups(schema)
    arrays = {}
    for group in groups:  # a Python number takes the dtype of the first array of its group
        like = next((values[name] for name in group if isinstance(values[name], DeviceArray)), None)
        for name in group:
            value = values[name]
            if isinstance(value, DeviceArray):
                if value.device is not owner:
                    raise InvalidArgumentError(f"{name} is a DeviceArray of another device")
                arrays[name] = value
            else:
                typed = like if like is not None else resident[0]
                host = typed_like(value, typed.dtype, name) if typeless(value) else as_array(value, name)
                # a Python number: the device's one array of it
                arrays[name] = constant_array(host, owner) if typeless(value) and host.ndim == 0 \
                    else asarray(host, owner)
    arrays = {name: arrays[name] for name in values}
    for group in groups:
        check_same_dtype(arrays, group)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{name} {a.shape}" for name, a in arrays.items())
        raise InvalidArgumentError(f"the shapes do not broadcast: {shapes}", "sizes") from None
    data_types = [a.data_type for a in arrays.values()]
    refuse_untaken_data_types(schema, data_types)  # in the front end's terms, as for host arrays
    result_type = output_data_type(schema, {name: a.data_type for name, a in arrays.items()}, requested)
    result_dtype = data_type_info(result_type).numpy_dtype
    if out is not None and not isinstance(out, DeviceArray):
        check_out(out, shape, result_dtype)
        out[...] = _run_resident(schema, arrays, None, None, fields, rowwise, axes, host_run, requested).numpy()
        return out
    if out is not None and (out.device is not owner or out.shape != shape or out.dtype != result_dtype):
        raise InvalidArgumentError(f"out is a DeviceArray of shape {out.shape} and dtype {out.dtype} on "
                                   f"{out.device.adapter_name!r}; the result has {shape} and {result_dtype} on "
                                   f"{owner.adapter_name!r}", "out")
    if rowwise:  # a row-wise kernel reads and writes its rows packed: views are copied first, broadcasts expanded
        arrays = {name: a.contiguous() if a.shape == shape else _expanded(a, shape) for name, a in arrays.items()}
    # An output over the elements of an input runs in place where it may: exactly the same
    # elements, and an operator that allows it; otherwise into a new array, copied to `out`
    # bit for bit (as NumPy buffers an overlapping out=).
    sharing = [a for a in arrays.values() if out is not None and a.may_share_memory(out)]
    in_place = bool(sharing) and schema.in_place and all(a is out for a in sharing)
    writes_out = out is not None and (in_place or not sharing) and (not rowwise or out.contiguous() is out)
    widest = max(result_dtype.itemsize, *(a.dtype.itemsize for a in arrays.values()))
    oversized = max(math.prod(shape), 1) * widest > owner.segment_size - 16
    if oversized and rowwise:
        LOG.info("%s: device arrays larger than a buffer segment (%d bytes) run row-wise through host copies",
                 schema.name, owner.segment_size)
        computed = host_run({name: a.numpy() for name, a in arrays.items()}, owner)
        if out is None:
            return asarray(computed, owner)
        out.write(computed)
        return out
    if oversized:  # a broadcast input cannot be windowed across segments: it is read packed
        if any(a.shape != shape for a in arrays.values()):
            LOG.info("%s: broadcast device arrays are expanded through the host (the result is larger than a buffer "
                     "segment, %d bytes)", schema.name, owner.segment_size)
        arrays = {name: a if a.shape == shape else asarray(np.broadcast_to(a.numpy(), shape), owner)
                  for name, a in arrays.items()}
    sizes = shape or (1,)
    if rowwise and axes is None and len(sizes) > 1:
        sizes = (math.prod(sizes[:-1]), sizes[-1])
    result_strides = out.broadcast_strides(sizes) if writes_out and not rowwise else packed_strides(sizes)
    if rowwise or len(sizes) <= MAX_DIMENSION_COUNT:
        strides = [packed_strides(sizes) if rowwise else a.broadcast_strides(sizes) for a in arrays.values()]
    else:  # element-wise work only pairs elements: dims every array walks alike merge
        sizes, strides = merge_dims(sizes, [*(a.broadcast_strides(sizes) for a in arrays.values()), result_strides])
        result_strides = strides.pop()
    if len(sizes) > MAX_DIMENSION_COUNT:
        raise InvalidArgumentError(f"the result has {len(sizes)} dims that do not merge: {schema.name} takes 1 to "
                                   f"{MAX_DIMENSION_COUNT} (DirectML's limit)", "dimension_count")
    extra = {"axes": normalized_axes(axes, len(sizes), schema.inputs[0].argument)} \
        if rowwise and axes is not None else {}
    if math.prod(shape) == 0:  # nothing to run, but the call must still be one the operator accepts
        schema.desc_class(*[BufferTensorDesc(a.data_type, (1,) * len(sizes)) for a in arrays.values()],
                          BufferTensorDesc(result_type, (1,) * len(sizes)), **fields, **extra)
        return out if out is not None else DeviceArray(owner, shape, result_dtype)
    descs = [a.strided_desc(sizes, s) for a, s in zip(arrays.values(), strides)]
    result_desc = out.strided_desc(sizes, result_strides) if writes_out else BufferTensorDesc(result_type, sizes)
    desc = schema.desc_class(*descs, result_desc, **fields, **extra)
    if oversized and not rowwise and not owner.compile_cached(desc).plan.windowable:
        # A kernel that binds each tensor whole (a comparison's or a cast's mix of widths, a
        # transposed view) past a buffer segment: through host copies, run in pieces.
        LOG.info("%s: device arrays larger than a buffer segment (%d bytes) whose kernel cannot be windowed run "
                 "through host copies", schema.name, owner.segment_size)
        computed = _run_elementwise(schema.desc_class, {name: a.numpy() for name, a in arrays.items()}, None, owner,
                                    requested, **fields)
        if out is None:
            return asarray(computed, owner)
        out.write(computed)
        return out
    if out is None and not rowwise and len(schema.outputs) == 1 and schema.elementwise is not None:
        # An element-wise result is computed when first read, with the chain that leads to it
        # as one fused graph (device_array.py); the operator is accepted (or refused) now.
        own = owner.create_operator(desc).desc
        if schema.elementwise(own) is not None:
            return DeviceArray.deferred(owner, shape, result_dtype, own, tuple(arrays.values()))
    compiled = owner.compile_cached(desc)
    result = out if writes_out else DeviceArray(owner, shape, result_dtype)
    run_on_arrays(compiled, list(arrays.values()), result)
    if result is not out and out is not None:
        return _run_resident(OPERATORS["element_wise_identity"], {"x": result}, out, None, {})
    return result


def _requested_type(dtype) -> T:
    """A front end's `dtype` (a NumPy dtype, or a TensorDataType) as the TensorDataType."""
    if isinstance(dtype, T):
        return dtype
    try:
        numpy_dtype = np.dtype(dtype)
        data_type = data_type_for_numpy(numpy_dtype)
    except (TypeError, ValueError):
        numpy_dtype = data_type = None
    if data_type is None:
        hint = (": DirectML has no boolean type; its logical operators write UINT8 0 and 1, so NumPy's "
                "astype(bool) is x != 0") if numpy_dtype == np.bool_ else ""
        raise InvalidArgumentError(f"dtype {dtype!r} is not a NumPy dtype that names a TensorDataType{hint}", "dtype")
    return data_type


def _field_default(schema: OperatorSchema, name: str):
    default = next(f.default for f in dataclasses.fields(schema.desc_class) if f.name == name)
    return inspect.Parameter.empty if default is dataclasses.MISSING else default


def _expanded(array: DeviceArray, shape: tuple[int, ...]) -> DeviceArray:
    """`array` broadcast to `shape` as NumPy broadcasts, packed in a new array of its device:
    IDENTITY reading it through zero strides."""
    sizes = shape or (1,)
    desc = OPERATORS["element_wise_identity"].desc_class(
        array.strided_desc(sizes, array.broadcast_strides(sizes)), BufferTensorDesc(array.data_type, sizes))
    result = DeviceArray(array.device, shape, array.dtype)
    run_on_arrays(array.device.compile_cached(desc), [array], result)
    return result


def _run_rowwise(schemas: tuple[OperatorSchema, OperatorSchema], arrays: dict[str, np.ndarray], axes, out,
                 device: Device | None, **fields) -> np.ndarray:
    """Run a row-wise operator (the softmax family) on packed copies of the arrays: over the
    last axis with DirectML's axis-less form (leading dims folded into rows), or over `axes`
    with its *1 form."""
    arrays = broadcast(arrays)
    first = next(iter(arrays.values()))
    device = as_device(device)
    if out is not None:
        check_out(out, first.shape, first.dtype)
    result = out if out is not None else np.empty(first.shape, first.dtype)
    shape = first.shape or (1,)
    if axes is None:
        schema, extra = schemas[0], {}
        sizes = shape if len(shape) == 1 else (math.prod(shape[:-1]), shape[-1])
    else:
        schema, extra = schemas[1], {"axes": normalized_axes(axes, len(shape), schemas[1].inputs[0].argument)}
        sizes = shape
        if len(sizes) > MAX_DIMENSION_COUNT:
            raise InvalidArgumentError(f"x has {len(sizes)} dims: {schema.name} takes 1 to {MAX_DIMENSION_COUNT}")
    data_type = data_type_for_numpy(first.dtype)
    refuse_untaken_data_types(schemas[0], [data_type] * len(arrays))  # named by the function the caller called
    if first.size == 0:  # nothing to run, but the call must still be one the operator accepts
        schema.desc_class(*[BufferTensorDesc(data_type, (1,) * len(sizes))] * len(schema.tensors), **fields, **extra)
        return result
    compiled = device.compile_cached(
        schema.desc_class(*[BufferTensorDesc(data_type, sizes)] * len(schema.tensors), **fields, **extra))
    limit = device.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    if first.nbytes > limit:
        LOG.info("%s: %d bytes run in pieces of whole rows of at most %d bytes (a buffer segment)", schema.name,
                 first.nbytes, limit)
        reduced = {len(shape) - 1} if axes is None else set(extra["axes"])
        for piece in whole_row_pieces(first.shape, reduced, first.itemsize, limit, schema.name):
            _run_rowwise(schemas, {name: a[piece] for name, a in arrays.items()}, axes, result[piece], device,
                         **fields)
        return result
    packed = [np.ascontiguousarray(a).reshape(-1) for a in arrays.values()]

    def work(binding):
        for buffer, array in zip(binding.buffers, packed):
            buffer.write(array)
        device.execute(binding.table)
        result[...] = binding.buffers[-1].read(first.dtype, first.size).reshape(first.shape)

    run_bound(device, compiled, None, work)
    return result


def front_end(schema: OperatorSchema):
    """The NumPy function of an operator whose inputs broadcast together into one output (as
    NumPy broadcasts): its inputs by their fields' argument names, its scalars with DirectML's
    defaults, positional too; where it has a form over listed axes (the softmax family),
    `axes`: None is DirectML's last-axis form, an int or a tuple (negative counts from the
    end, as in NumPy) the *1 form; its flags and choices as keywords; `out=` and `device=`."""
    axes_form = OPERATORS[schema.axes_form] if schema.axes_form is not None else None
    arguments = [field.argument for field in schema.inputs]
    positional, keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter(name, positional) for name in arguments]
    if free_output(schema):  # CAST: the result's type, after the inputs
        parameters.append(inspect.Parameter("dtype", positional))
    parameters += [inspect.Parameter(s.name, positional, default=_field_default(schema, s.name))
                   for s in schema.scalars]
    if axes_form is not None:
        parameters.append(inspect.Parameter("axes", positional, default=None))
    parameters += [inspect.Parameter(f.name, keyword, default=False) for f in schema.flags]
    parameters += [inspect.Parameter(c.name, keyword, default=c.choices[0]) for c in schema.choices]
    parameters += [inspect.Parameter(v.name, keyword, default=_field_default(schema, v.name)) for v in schema.values]
    parameters += [inspect.Parameter("out", keyword, default=None), inspect.Parameter("device", keyword, default=None)]
    signature = inspect.Signature(parameters)
    defaults = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
    # Row-wise calls always take the general path: their kernels read whole rows.
    fast_keywords = {*defaults} - {"out"} if axes_form is None else set()

    def run(*args, **kwargs):
        if fast_keywords and len(args) == len(arguments) and kwargs.keys() <= fast_keywords:
            result = _run_fast(schema, args, {**defaults, **kwargs})
            if result is not None:
                return result
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:  # Signature.bind's message names no function
            raise TypeError(f"{schema.name}() {error}") from None
        bound.apply_defaults()
        values = bound.arguments
        for flag in schema.flags:
            if not isinstance(values[flag.name], (bool, np.bool_)):
                raise InvalidArgumentError(f"{flag.name} {values[flag.name]!r} must be a bool", flag.name)
        fields = {s.name: values[s.name] for s in schema.scalars}
        fields.update({f.name: bool(values[f.name]) for f in schema.flags})
        fields.update({c.name: values[c.name] for c in schema.choices})
        fields.update({v.name: values[v.name] for v in schema.values})
        inputs = {name: values[name] for name in arguments}
        out, device = values["out"], values["device"]
        requested = _requested_type(values["dtype"]) if "dtype" in values else None
        if axes_form is None:
            if _resident(inputs, out):
                return _run_resident(schema, inputs, out, device, fields, requested=requested)
            return _run_elementwise(schema.desc_class, as_arrays(inputs, type_groups(schema)), out, device,
                                    requested, **fields)
        axes, forms = values["axes"], (schema, axes_form)
        if _resident(inputs, out):
            return _run_resident(forms[axes is not None], inputs, out, device, fields, rowwise=True, axes=axes,
                                 host_run=lambda arrays, device: _run_rowwise(forms, arrays, axes, None, device,
                                                                              **fields))
        return _run_rowwise(forms, as_arrays(inputs), axes, out, device, **fields)

    run.__name__ = run.__qualname__ = schema.name
    run.__signature__ = signature
    run.__doc__ = "\n\n".join([
        f"{schema.dml_name} on NumPy arrays: {schema.formula}.",
        *([f"axes=None: over the last axis ({schema.dml_name}); a tuple of axes: over those "
           f"({axes_form.dml_name})."] if axes_form is not None else []),
        *(f"{f.name}=True: {f.meaning}." for f in schema.flags)])
    run.__module__ = __name__
    return run


# A front end per operator, but for the forms over listed axes (their axis-less forms' front
# ends run them) and families with a front end of their own (PReLU's gradient: frontends/prelu.py).
_AXES_FORMS = {schema.axes_form for schema in OPERATORS.values()}
FRONT_ENDS: dict[str, Callable] = {
    schema.name: front_end(schema) for schema in OPERATORS.values()
    if schema.name not in _AXES_FORMS and schema.family.front_end is not FrontEndShape.OWN}
globals().update(FRONT_ENDS)
ARRAY_OPERATORS.update({name: FRONT_ENDS[name] for name in (
    "add", "subtract", "multiply", "divide", "bitwise_and", "bitwise_or", "bitwise_xor", "less", "less_equal",
    "greater", "greater_equal", "equal", "negative", "abs", "bitwise_not", "maximum", "minimum", "exp", "log",
    "floor", "ceil", "sign", "isnan", "isinf", "reciprocal", "logical_and", "logical_or", "logical_xor",
    "logical_not", "left_shift", "right_shift", "cast", "power", "remainder", "fmod", "sqrt", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
    "element_wise_identity")})
