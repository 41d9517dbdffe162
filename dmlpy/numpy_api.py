"""NumPy front end: run an operator on arrays with a module-level default device."""

from __future__ import annotations

import threading

import numpy as np

from .device import CompiledOperator, Device, create_device
from .errors import InvalidArgumentError
from .operators import ActivationReluGradOperatorDesc
from .tensor_desc import MAX_DIMENSION_COUNT, BufferTensorDesc
from .types import data_type_for_numpy

_default_device: Device | None = None
_default_lock = threading.Lock()
_compiled: dict[tuple[int, object], CompiledOperator] = {}


def default_device() -> Device:
    """The device the front end uses when none is given (created on first use)."""
    global _default_device
    with _default_lock:
        if _default_device is None or _default_device._closed:
            _default_device = create_device()
        return _default_device


def _compile(device: Device, desc) -> CompiledOperator:
    key = (id(device), desc)
    compiled = _compiled.get(key)
    if compiled is None or compiled.device is not device:
        compiled = device.compile_operator(device.create_operator(desc))
        _compiled[key] = compiled
    return compiled


def _as_array(value, name: str) -> np.ndarray:
    try:
        array = np.asarray(value)
    except Exception as error:  # anything NumPy cannot turn into an array
        raise InvalidArgumentError(f"{name} cannot be converted to a NumPy array: {error}") from None
    if data_type_for_numpy(array.dtype) is None:
        raise InvalidArgumentError(f"{name}.dtype {array.dtype} has no TensorDataType")
    return array


def _run_elementwise(desc_class, arrays: dict[str, np.ndarray], out, device: Device | None) -> np.ndarray:
    """Run an x, dy -> dx operator; `arrays` maps the desc's input fields to arrays."""
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
    # An element-wise result depends on no shape: rank 0 or above 8 runs as one flat dim.
    sizes = first.shape if 1 <= first.ndim <= MAX_DIMENSION_COUNT else (first.size,)
    tensor = BufferTensorDesc(data_type_for_numpy(first.dtype), sizes)
    fields = desc_class.schema.tensors
    desc = desc_class(**{f.name: tensor for f in fields})
    device = device or default_device()
    compiled = _compile(device, desc)
    nbytes = tensor.total_tensor_size_in_bytes
    buffers = [device.create_buffer(nbytes) for _ in fields]
    try:
        for buffer, name in zip(buffers, names):
            buffer.write(arrays[name])
        table = device.create_binding_table(compiled, inputs=buffers[:-1], outputs=buffers[-1:])
        device.execute(table)
        result[...] = buffers[-1].read(first.dtype, first.size).reshape(first.shape)
    finally:
        for buffer in buffers:
            buffer.destroy()
    return result


def relu_grad(x, dy, *, out: np.ndarray | None = None, device: Device | None = None) -> np.ndarray:
    """ACTIVATION_RELU_GRAD on arrays: `x > 0 ? dy : 0`, bit-exact, same shape and dtype."""
    return _run_elementwise(ActivationReluGradOperatorDesc,
                            {"x": _as_array(x, "x"), "dy": _as_array(dy, "dy")}, out, device)
