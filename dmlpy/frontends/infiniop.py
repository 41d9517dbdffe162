"""InfiniCore's operator lifecycle (infiniop) over dmlpy's descs and compiled operators.

Every function returns an `InfiniStatus` instead of raising; a function whose C form has
an out-parameter returns `(status, value)`. The message of the last failure on this
thread is `last_error()`. Device memory is a dmlpy `Buffer` or `BufferBinding` where
InfiniCore passes a pointer; `stream` is accepted and ignored (execution is synchronous).

    status, handle = infiniopCreateHandle()
    status, t = infiniopCreateTensorDescriptor((2, 3), None, InfiniDtype.F16)
    status, op = infiniopCreateReluBackwardDescriptor(handle, t, t, t)
    status, size = infiniopGetReluBackwardWorkspaceSize(op)
    status = infiniopReluBackward(op, None, 0, grad_input, input, grad_output, None)
    status = infiniopDestroyReluBackwardDescriptor(op)
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.errors import DeviceRemovedError, DmlError, UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType
from ..ops.activations import TABLE
from ..ops.prelu_grad import ActivationParameterizedReluGradOperatorDesc
from ..ops.schema import OPERATORS
from ..runtime.binding import Buffer, BufferBinding
from ..runtime.device import CompiledOperator, Device, create_device


class InfiniStatus(enum.IntEnum):
    """infiniStatus_t, with InfiniCore's names and values. Printed by name
    (`InfiniStatus.SUCCESS`), not as the bare number IntEnum prints from Python 3.11."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    SUCCESS = 0
    INTERNAL_ERROR = 1
    NOT_IMPLEMENTED = 2
    BAD_PARAM = 3
    NULL_POINTER = 4
    DEVICE_TYPE_NOT_SUPPORTED = 5
    DEVICE_NOT_FOUND = 6
    DEVICE_NOT_INITIALIZED = 7
    DEVICE_ARCHITECTURE_NOT_SUPPORTED = 8
    BAD_TENSOR_DTYPE = 10
    BAD_TENSOR_SHAPE = 11
    BAD_TENSOR_STRIDES = 12
    INSUFFICIENT_WORKSPACE = 13


class InfiniDtype(enum.IntEnum):
    """infiniDtype_t, with InfiniCore's names and values."""

    INVALID = 0
    BYTE = 1
    BOOL = 2
    I8 = 3
    I16 = 4
    I32 = 5
    I64 = 6
    U8 = 7
    U16 = 8
    U32 = 9
    U64 = 10
    F8 = 11
    F16 = 12
    F32 = 13
    F64 = 14
    C16 = 15
    C32 = 16
    C64 = 17
    C128 = 18
    BF16 = 19


_DATA_TYPES = {
    InfiniDtype.I8: TensorDataType.INT8, InfiniDtype.I16: TensorDataType.INT16, InfiniDtype.I32: TensorDataType.INT32,
    InfiniDtype.I64: TensorDataType.INT64, InfiniDtype.U8: TensorDataType.UINT8, InfiniDtype.U16: TensorDataType.UINT16,
    InfiniDtype.U32: TensorDataType.UINT32, InfiniDtype.U64: TensorDataType.UINT64,
    InfiniDtype.F16: TensorDataType.FLOAT16, InfiniDtype.F32: TensorDataType.FLOAT32,
    InfiniDtype.F64: TensorDataType.FLOAT64, InfiniDtype.BF16: TensorDataType.BFLOAT16,
}

# What a desc attribute at fault becomes in InfiniCore's terms.
_FIELD_STATUS = {"data_type": InfiniStatus.BAD_TENSOR_DTYPE, "sizes": InfiniStatus.BAD_TENSOR_SHAPE,
                 "dimension_count": InfiniStatus.BAD_TENSOR_SHAPE, "strides": InfiniStatus.BAD_TENSOR_STRIDES}

_last_error = threading.local()


def last_error() -> str:
    """The message behind the last status other than SUCCESS on this thread."""
    return getattr(_last_error, "message", "")


class _Failure(Exception):
    def __init__(self, status: InfiniStatus, message: str):
        super().__init__(message)
        self.status = status


def _status_of(error: Exception) -> InfiniStatus:
    if isinstance(error, _Failure):
        return error.status
    if isinstance(error, DmlError) and error.field in _FIELD_STATUS:
        return _FIELD_STATUS[error.field]
    if isinstance(error, DeviceRemovedError):
        return InfiniStatus.BAD_PARAM
    if isinstance(error, UnsupportedError):
        return InfiniStatus.NOT_IMPLEMENTED
    if isinstance(error, DmlError):
        return InfiniStatus.BAD_PARAM
    return InfiniStatus.INTERNAL_ERROR


def _call(body, has_out: bool = False):
    """Run body(); turn what it raises into a status (and keep its message). A function
    with an out-parameter returns (status, None) on failure, as its C form leaves it unset."""
    try:
        return body()
    except Exception as error:  # the C-style API reports every failure as a status
        _last_error.message = str(error)
        status = _status_of(error)
        return (status, None) if has_out else status


def _live(obj, kind: type, name: str):
    if obj is None:
        raise _Failure(InfiniStatus.NULL_POINTER, f"{name} is NULL")
    if not isinstance(obj, kind):
        raise _Failure(InfiniStatus.BAD_PARAM, f"{name} is a {type(obj).__name__}, not a {kind.__name__}")
    if obj.destroyed:
        raise _Failure(InfiniStatus.BAD_PARAM, f"{name} was used after it was destroyed")
    return obj


class Handle:
    def __init__(self, device: Device, owns_device: bool):
        self.device = device
        self.owns_device = owns_device
        self.destroyed = False


def infiniopCreateHandle(device: Device | None = None) -> tuple[InfiniStatus, Handle | None]:
    """(status, handle) on `device`, or on a new default device the handle owns."""

    def body():
        if device is not None and not isinstance(device, Device):
            raise _Failure(InfiniStatus.BAD_PARAM, f"device must be a dmlpy Device or None, not {device!r}")
        return InfiniStatus.SUCCESS, Handle(device or create_device(), device is None)

    return _call(body, has_out=True)


def infiniopDestroyHandle(handle: Handle) -> InfiniStatus:
    def body():
        _live(handle, Handle, "handle").destroyed = True
        if handle.owns_device:
            handle.device.close()
        return InfiniStatus.SUCCESS

    return _call(body)


def _integers(values, name: str, status: InfiniStatus) -> tuple[int, ...]:
    """A sequence of integers, or the status InfiniCore gives a malformed one."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (tuple, list)):
        raise _Failure(status, f"{name} {values!r} must be a list of integers")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise _Failure(status, f"{name} {values!r} must hold integers")
    return tuple(values)


@dataclass
class TensorDescriptor:
    desc: BufferTensorDesc
    destroyed: bool = False


def infiniopCreateTensorDescriptor(shape: Sequence[int], strides: Sequence[int] | None,
                                   dtype: InfiniDtype) -> tuple[InfiniStatus, TensorDescriptor | None]:
    """(status, descriptor): strides in elements (None: contiguous), dtype an InfiniDtype."""

    def body():
        if shape is None:
            raise _Failure(InfiniStatus.NULL_POINTER, "shape is NULL")
        if isinstance(dtype, bool) or not isinstance(dtype, int) or dtype not in _DATA_TYPES.keys():
            raise _Failure(InfiniStatus.BAD_TENSOR_DTYPE, f"dtype {dtype!r} has no dmlpy data type")
        data_type = _DATA_TYPES[InfiniDtype(dtype)]
        shape_values = _integers(shape, "shape", InfiniStatus.BAD_TENSOR_SHAPE)
        stride_values = None if strides is None else _integers(strides, "strides", InfiniStatus.BAD_TENSOR_STRIDES)
        if stride_values is not None and any(s < 0 for s in stride_values):
            raise _Failure(InfiniStatus.BAD_TENSOR_STRIDES, f"strides {stride_values}: negative strides are "
                           "not expressible as a DirectML tensor desc")
        return InfiniStatus.SUCCESS, TensorDescriptor(BufferTensorDesc(data_type, shape_values, stride_values))

    return _call(body, has_out=True)


def infiniopDestroyTensorDescriptor(descriptor: TensorDescriptor) -> InfiniStatus:
    def body():
        _live(descriptor, TensorDescriptor, "desc").destroyed = True
        return InfiniStatus.SUCCESS

    return _call(body)


class OperatorDescriptor:
    """A compiled dmlpy operator plus InfiniCore's argument order for it."""

    def __init__(self, handle: Handle, compiled: CompiledOperator, argument_fields: tuple[str, ...]):
        self.handle = handle
        self.compiled = compiled
        self.argument_fields = argument_fields  # desc field of each data argument, in InfiniCore order
        self.destroyed = False


def _lifecycle(desc_class, arguments: tuple[tuple[str, str], ...], scalars: tuple[str, ...] = (),
               choices: tuple[tuple[str, str], ...] = ()):
    """The four infiniop functions of one operator.

    arguments: (InfiniCore argument name, desc field) in InfiniCore's order, outputs first.
    choices: (desc field, value) for the form InfiniCore's operator computes; create takes
    each as a keyword (GeluBackward: approximate="tanh", or "none" for DirectML's erf form).
    """
    schema = desc_class.schema
    argument_names = tuple(name for name, _ in arguments)
    fields = tuple(field for _, field in arguments)

    def create(handle: Handle, *tensor_descriptors_and_scalars: TensorDescriptor | float,
               **choice_values: str) -> tuple[InfiniStatus, OperatorDescriptor | None]:
        def body():
            unknown = set(choice_values) - {field for field, _ in choices}
            if unknown:
                raise _Failure(InfiniStatus.BAD_PARAM, f"unknown option {', '.join(sorted(unknown))}")
            live = _live(handle, Handle, "handle")
            expected = len(arguments) + len(scalars)
            if len(tensor_descriptors_and_scalars) != expected:
                raise _Failure(InfiniStatus.BAD_PARAM, f"expected {', '.join(argument_names + scalars)}")
            descriptors = tensor_descriptors_and_scalars[:len(arguments)]
            tensors = {field: _live(d, TensorDescriptor, name).desc
                       for (name, field), d in zip(arguments, descriptors)}
            values = dict(zip(scalars, tensor_descriptors_and_scalars[len(arguments):]))
            desc = desc_class(**tensors, **values, **{**dict(choices), **choice_values})
            device = live.device
            compiled = device.compile_operator(device.create_operator(desc))
            return InfiniStatus.SUCCESS, OperatorDescriptor(live, compiled, fields)

        return _call(body, has_out=True)

    def workspace_size(descriptor: OperatorDescriptor) -> tuple[InfiniStatus, int | None]:
        def body():
            compiled = _live(descriptor, OperatorDescriptor, "desc").compiled
            return InfiniStatus.SUCCESS, compiled.binding_properties.temporary_resource_size

        return _call(body, has_out=True)

    def compute(descriptor: OperatorDescriptor, workspace: Buffer | BufferBinding | None, workspace_size: int | None,
                *data_and_stream: Buffer | BufferBinding | None) -> InfiniStatus:
        def body():
            live = _live(descriptor, OperatorDescriptor, "desc")
            if len(data_and_stream) not in (len(arguments), len(arguments) + 1):
                raise _Failure(InfiniStatus.BAD_PARAM, f"expected {', '.join(argument_names)}, stream")
            data = dict(zip(fields, data_and_stream[:len(arguments)]))
            for name, field in arguments:
                if data[field] is None:
                    raise _Failure(InfiniStatus.NULL_POINTER, f"{name} is NULL")
            required = live.compiled.binding_properties.temporary_resource_size
            if workspace_size is not None and (isinstance(workspace_size, bool) or not isinstance(workspace_size, int)
                                               or workspace_size < 0):
                raise _Failure(InfiniStatus.BAD_PARAM, f"workspace_size {workspace_size!r} must be an integer >= 0")
            if required and (workspace_size is None or workspace_size < required):
                raise _Failure(InfiniStatus.INSUFFICIENT_WORKSPACE,
                               f"workspace_size {workspace_size} < the {required} bytes this operator needs")
            temporary = None
            if required:
                if workspace is None:
                    raise _Failure(InfiniStatus.NULL_POINTER, "workspace is NULL")
                if not isinstance(workspace, (Buffer, BufferBinding)):
                    raise _Failure(InfiniStatus.BAD_PARAM,
                                   f"workspace must be a Buffer or a BufferBinding, not {type(workspace).__name__}")
                binding = workspace if isinstance(workspace, BufferBinding) else BufferBinding(workspace)
                # The caller's range is the limit: workspace_size never widens a binding.
                usable = workspace_size if binding.size_in_bytes is None else min(workspace_size,
                                                                                  binding.size_in_bytes)
                if usable < required:
                    raise _Failure(InfiniStatus.INSUFFICIENT_WORKSPACE,
                                   f"the workspace binding holds {usable} bytes < the {required} this operator needs")
                temporary = BufferBinding(binding.buffer, binding.offset, usable)
            device = live.handle.device
            table = device.create_binding_table(
                live.compiled, inputs=[data[f.name] for f in schema.inputs],
                outputs=[data[f.name] for f in schema.outputs], temporary=temporary)
            device.execute(table)
            return InfiniStatus.SUCCESS

        return _call(body)

    def destroy(descriptor: OperatorDescriptor) -> InfiniStatus:
        def body():
            _live(descriptor, OperatorDescriptor, "desc").destroyed = True
            return InfiniStatus.SUCCESS

        return _call(body)

    return create, workspace_size, compute, destroy


# InfiniCore's backward operators: (name, dmlpy operator, (argument, desc field) in
# InfiniCore's order). Every activation whose row names InfiniCore's operator takes the
# unary form; PReLU's has its slope and its gradient too.
_UNARY_BACKWARD = (("grad_input", "output_gradient_tensor"), ("input", "input_tensor"),
                   ("grad_output", "input_gradient_tensor"))
_BACKWARD = [(row.infiniop, OPERATORS[f"{row.name}_grad"], _UNARY_BACKWARD, row.infiniop_choices)
             for row in TABLE if row.infiniop]
_BACKWARD.append(("PRelu", ActivationParameterizedReluGradOperatorDesc.schema,
                  (("grad_input", "output_gradient_tensor"), ("grad_slope", "output_slope_gradient_tensor"),
                   ("input", "input_tensor"), ("slope", "slope_tensor"), ("grad_output", "input_gradient_tensor")),
                  ()))

for _name, _schema, _arguments, _choices in _BACKWARD:
    _create, _workspace_size, _compute, _destroy = _lifecycle(_schema.desc_class, _arguments,
                                                              tuple(s.name for s in _schema.scalars), _choices)
    globals().update({f"infiniopCreate{_name}BackwardDescriptor": _create,
                      f"infiniopGet{_name}BackwardWorkspaceSize": _workspace_size,
                      f"infiniop{_name}Backward": _compute,
                      f"infiniopDestroy{_name}BackwardDescriptor": _destroy})

__all__ = [name for name in globals() if name.startswith("infiniop")] + [
    "InfiniDtype", "InfiniStatus", "last_error"]
