"""Buffers, buffer bindings and binding tables, with DirectML's binding rules."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import DeviceRemovedError, InvalidArgumentError, UnsupportedError
from .tensor_desc import BufferTensorDesc
from .types import TensorDataType, data_type_info

if TYPE_CHECKING:
    from .device import CompiledOperator, Device

# DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT: every bound tensor starts on a 16-byte boundary.
MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16


def _as_count(value, what: str) -> int:
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} {value!r} must be an integer, not a bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{what} {value!r} must be an integer") from None
    if number < 0:
        raise InvalidArgumentError(f"{what} {number} must not be negative")
    return number


class Buffer:
    """A range of device memory (an ID3D12Resource buffer in DirectML)."""

    def __init__(self, device: Device, size_in_bytes: int):
        size = _as_count(size_in_bytes, "size_in_bytes")
        if size == 0:
            raise InvalidArgumentError("size_in_bytes 0: a buffer must hold at least one byte")
        self.device = device
        self.size_in_bytes = size
        self._words = device._context.create_words((size + 3) // 4)

    def _check_usable(self) -> None:
        self.device._check_open()
        if self._words is None:
            raise DeviceRemovedError("this Buffer was destroyed")

    def _check_range(self, offset, byte_count: int, what: str) -> int:
        offset = _as_count(offset, f"{what} offset")
        if offset + byte_count > self.size_in_bytes:
            raise InvalidArgumentError(
                f"{what} of {byte_count} bytes at offset {offset} ends past the buffer's "
                f"{self.size_in_bytes} bytes")
        return offset

    def write(self, array, offset: int = 0) -> None:
        """Copy the bytes of `array` (any NumPy array or bytes-like object) to `offset`."""
        self._check_usable()
        data = np.frombuffer(array, dtype=np.uint8) if isinstance(array, (bytes, bytearray, memoryview)) \
            else np.ascontiguousarray(array)
        offset = self._check_range(offset, data.nbytes, "write")
        if data.nbytes:
            self.device._context.write(self._words, offset, data)

    def read(self, dtype, count: int, offset: int = 0) -> np.ndarray:
        """`count` elements of `dtype` (a NumPy dtype or a TensorDataType) from `offset`."""
        self._check_usable()
        if isinstance(dtype, TensorDataType):
            numpy_dtype = data_type_info(dtype).numpy_dtype
            if numpy_dtype is None:
                raise InvalidArgumentError(f"dtype {dtype.name} has no NumPy equivalent")
        else:
            try:
                numpy_dtype = np.dtype(dtype)
            except TypeError:
                raise InvalidArgumentError(f"dtype {dtype!r} is not a NumPy dtype") from None
        count = _as_count(count, "count")
        offset = self._check_range(offset, count * numpy_dtype.itemsize, "read")
        raw = self.device._context.read(self._words, offset, count * numpy_dtype.itemsize)
        return raw.view(numpy_dtype)

    def destroy(self) -> None:
        """Free the memory now; later use raises DeviceRemovedError."""
        if self._words is not None:
            self._words.destroy()
            self._words = None


@dataclass(frozen=True)
class BufferBinding:
    """DML_BUFFER_BINDING: a buffer, a byte offset and the size of the bound range."""

    buffer: Buffer
    offset: int = 0
    size_in_bytes: int | None = None


@dataclass(frozen=True)
class BindingProperties:
    """DML_BINDING_PROPERTIES of a compiled operator."""

    required_descriptor_count: int
    temporary_resource_size: int
    persistent_resource_size: int


@dataclass(frozen=True)
class BoundTensor:
    """A validated binding of one tensor: its buffer and where its bytes lie."""

    name: str
    desc: BufferTensorDesc
    buffer: Buffer
    offset: int

    @property
    def end(self) -> int:
        return self.offset + self.desc.total_tensor_size_in_bytes


def bind_tensor(device: Device, name: str, desc: BufferTensorDesc, item) -> BoundTensor:
    """Check one binding against DirectML's rules and the device's limits."""
    binding = BufferBinding(item) if isinstance(item, Buffer) else item
    if binding is None:
        raise InvalidArgumentError(f"{name} is None: this tensor is required")
    if not isinstance(binding, BufferBinding) or not isinstance(binding.buffer, Buffer):
        raise InvalidArgumentError(f"{name} must be a Buffer or a BufferBinding, not {type(item).__name__}")
    buffer = binding.buffer
    if buffer.device is not device:
        raise InvalidArgumentError(f"{name} is bound to a buffer of another device")
    buffer._check_usable()
    offset = _as_count(binding.offset, f"{name}.offset")
    alignment = max(MINIMUM_BUFFER_TENSOR_ALIGNMENT, desc.guaranteed_base_offset_alignment)
    if offset % alignment:
        raise InvalidArgumentError(
            f"{name}.offset {offset} is not a multiple of {alignment}: bound tensors start on "
            f"{MINIMUM_BUFFER_TENSOR_ALIGNMENT}-byte boundaries, or the desc's guaranteed_base_offset_alignment")
    if offset > buffer.size_in_bytes:
        raise InvalidArgumentError(f"{name}.offset {offset} is past the end of the {buffer.size_in_bytes}-byte buffer")
    size = buffer.size_in_bytes - offset if binding.size_in_bytes is None \
        else _as_count(binding.size_in_bytes, f"{name}.size_in_bytes")
    if offset + size > buffer.size_in_bytes:
        raise InvalidArgumentError(
            f"{name}: offset {offset} + size_in_bytes {size} ends past the buffer's {buffer.size_in_bytes} bytes")
    if size < desc.total_tensor_size_in_bytes:
        raise InvalidArgumentError(
            f"{name}.size_in_bytes {size} is smaller than the tensor's total_tensor_size_in_bytes "
            f"{desc.total_tensor_size_in_bytes}")
    if buffer.size_in_bytes > device.max_storage_buffer_range:
        raise UnsupportedError(
            f"{name}: a {buffer.size_in_bytes}-byte buffer is larger than this device's "
            f"maxStorageBufferRange ({device.max_storage_buffer_range} bytes) and cannot be bound")
    return BoundTensor(name, desc, buffer, offset)


def check_aliasing(inputs: Sequence[BoundTensor], outputs: Sequence[BoundTensor]) -> None:
    """Outputs may alias an input exactly (in place) but may not otherwise overlap anything."""

    def overlap(a: BoundTensor, b: BoundTensor) -> bool:
        return a.buffer is b.buffer and a.offset < b.end and b.offset < a.end

    for i, out in enumerate(outputs):
        for other in outputs[i + 1:]:
            if overlap(out, other):
                raise InvalidArgumentError(f"{out.name} and {other.name} overlap: outputs must not share bytes")
        for tensor in inputs:
            if not overlap(out, tensor):
                continue
            same_range = out.offset == tensor.offset and out.end == tensor.end
            if not same_range:
                raise InvalidArgumentError(
                    f"{out.name} [{out.offset}, {out.end}) partially overlaps {tensor.name} "
                    f"[{tensor.offset}, {tensor.end}): an output may share an input's bytes only "
                    "when bound to exactly the same range (in place)")
            if out.desc.element_strides != tensor.desc.element_strides:
                raise InvalidArgumentError(
                    f"{out.name} is bound in place over {tensor.name} but their strides differ "
                    f"({out.desc.element_strides} vs {tensor.desc.element_strides}): in place needs one layout")


class BindingTable:
    """The buffers a compiled operator reads and writes, validated and recorded for dispatch."""

    def __init__(self, device: Device, compiled: CompiledOperator, inputs, outputs, temporary, persistent):
        schema = compiled.desc.schema
        bound = []
        for role, fields, items in (("inputs", schema.inputs, inputs), ("outputs", schema.outputs, outputs)):
            if isinstance(items, (Buffer, BufferBinding)) or not isinstance(items, Sequence):
                raise InvalidArgumentError(f"{role} must be a list of bindings, not {type(items).__name__}")
            if len(items) != len(fields):
                raise InvalidArgumentError(
                    f"{role} has {len(items)} bindings: {schema.dml_name} has {len(fields)} "
                    f"({', '.join(f.dml_name for f in fields)})")
            bound.append([bind_tensor(device, f"{role}[{i}] ({field.dml_name})",
                                      getattr(compiled.desc, field.name), item)
                          for i, (field, item) in enumerate(zip(fields, items))])
        self.inputs, self.outputs = bound
        check_aliasing(self.inputs, self.outputs)
        for role, item in (("temporary", temporary), ("persistent", persistent)):
            if item is not None and not isinstance(item, (Buffer, BufferBinding)):
                raise InvalidArgumentError(f"{role} must be None, a Buffer or a BufferBinding")
        self.device = device
        self.compiled = compiled
        tensors = [*self.inputs, *self.outputs]
        base_elements = np.array([t.offset // t.desc.element_size for t in tensors], dtype=np.uint32)
        self._dispatch = device._context.create_dispatch(
            [t.buffer._words for t in tensors], compiled.spirv, compiled.plan.workgroups, base_elements)

    def _check_usable(self) -> None:
        for tensor in (*self.inputs, *self.outputs):
            tensor.buffer._check_usable()
