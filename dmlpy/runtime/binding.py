"""Buffers, buffer bindings and binding tables, with DirectML's binding rules."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import DTypeLike

from ..base.adapter import AdapterInfo
from ..base.errors import DeviceRemovedError, InvalidArgumentError, UnsupportedError, shown
from ..base.tensor_desc import BufferTensorDesc, packed_strides
from ..base.types import TensorDataType, data_type_info, numpy_name
from ..kernels.codegen import CompiledKernel, KernelTensor
from ..kernels.windows import plan_windows
from ..ops.graph_aliasing import ANY, NONE, Aliasing
from .kompute import GpuContext, Launch


class Device(Protocol):
    """What buffers and binding tables need of the device that owns them (the Device of
    runtime/device.py, which builds on this module)."""

    adapter: AdapterInfo
    context: GpuContext
    segment_size: int

    @property
    def max_storage_buffer_range(self) -> int: ...

    def check_open(self) -> None: ...

    def check_owned(self, obj, kind: type, what: str) -> None: ...

    def using(self) -> AbstractContextManager: ...


class Bindable(Protocol):
    """A compiled operator or compiled graph, as a binding table sees it."""

    @property
    def name(self) -> str: ...

    def aliasable(self, output_index: int, input_index: int) -> Aliasing: ...

    @property
    def input_tensors(self) -> tuple[tuple[str, BufferTensorDesc], ...]: ...

    @property
    def output_tensors(self) -> tuple[tuple[str, BufferTensorDesc], ...]: ...

    @property
    def kernels(self) -> tuple[CompiledKernel, ...]: ...

    @property
    def temporary_size(self) -> int: ...

# DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT: every bound tensor starts on a 16-byte boundary.
MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16
U64_MAX = 2**64 - 1


def _as_count(value, what: str) -> int:
    """A byte count or offset: an integer from 0 to 2^64 - 1 (so every message can print it)."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} {value!r} must be an integer, not a bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{what} {shown(value)} must be an integer") from None
    if number < 0:
        raise InvalidArgumentError(f"{what} {shown(number)} must not be negative")
    if number > U64_MAX:
        raise InvalidArgumentError(f"{what} {shown(number)} is more than 2^64 - 1")
    return number


def _raw_bytes(array) -> np.ndarray:
    """The bytes of a NumPy array or bytes-like object, as a flat uint8 array."""
    if isinstance(array, (bytes, bytearray, memoryview)):
        try:
            return np.frombuffer(memoryview(array).tobytes(), dtype=np.uint8)
        except (TypeError, ValueError, BufferError) as error:
            raise InvalidArgumentError(f"array: this memoryview cannot be read as bytes ({error})") from None
    if not isinstance(array, np.ndarray):
        raise InvalidArgumentError(
            f"array must be a NumPy array or a bytes-like object, not {type(array).__name__}: a buffer has no "
            "data type, so pass np.asarray(values, dtype=...) with the dtype you mean")
    if array.dtype.hasobject:
        raise InvalidArgumentError(f"array.dtype {array.dtype} holds Python objects, not raw data")
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def _available_host_memory() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _check_memory(device: Device, size: int) -> None:
    """Refuse what cannot fit, rather than let an allocation fail deep in the driver (or the
    kernel end the process): the device's heap, and host memory for kp's staging copy."""
    heap = device.adapter.device_local_heap_size
    if heap and size > heap:
        raise UnsupportedError(f"size_in_bytes {size} is more than the device's {heap}-byte memory heap")
    available = _available_host_memory()
    if available is not None and 2 * size > available:
        raise UnsupportedError(
            f"size_in_bytes {size}: a buffer needs about twice its size in host memory (kp keeps a staging "
            f"copy), and {available} bytes are available")


def _numpy_dtype(dtype) -> np.dtype:
    """A NumPy dtype, or a TensorDataType's, that holds plain data."""
    if isinstance(dtype, TensorDataType):
        numpy_dtype = data_type_info(dtype).numpy_dtype
        if numpy_dtype is None:
            raise InvalidArgumentError(f"dtype {dtype.name} has no NumPy equivalent")
    else:
        try:
            numpy_dtype = np.dtype(dtype)
        except Exception:  # NumPy raises TypeError, ValueError and others for non-dtypes
            raise InvalidArgumentError(f"dtype {dtype!r} is not a NumPy dtype") from None
    if numpy_dtype.hasobject or numpy_dtype.itemsize == 0:
        raise InvalidArgumentError(f"dtype {numpy_dtype} holds no plain data: a buffer holds raw bytes")
    return np.dtype(numpy_dtype)


class Buffer:
    """A range of device memory (an ID3D12Resource buffer in DirectML).

    Vulkan binds at most maxStorageBufferRange bytes at once, so a larger buffer is made of
    segments of `segment_size` bytes, each its own kp tensor (see windows.py).
    """

    def __init__(self, device: Device, size_in_bytes: int | None, tensor: BufferTensorDesc | None = None):
        if tensor is not None and not isinstance(tensor, BufferTensorDesc):
            raise InvalidArgumentError(f"tensor must be a BufferTensorDesc, not {type(tensor).__name__}")
        if tensor is not None and data_type_info(tensor.data_type).numpy_dtype is None:
            raise InvalidArgumentError(f"tensor.data_type {tensor.data_type.name} has no NumPy dtype to read and "
                                       "write it with: make the buffer by size_in_bytes", "data_type")
        if size_in_bytes is None and tensor is None:
            raise InvalidArgumentError("size_in_bytes None: give the buffer's size, or the tensor it holds")
        size = tensor.total_tensor_size_in_bytes if size_in_bytes is None else _as_count(size_in_bytes,
                                                                                          "size_in_bytes")
        if size == 0:
            raise InvalidArgumentError("size_in_bytes 0: a buffer must hold at least one byte")
        if tensor is not None and size < tensor.total_tensor_size_in_bytes:
            raise InvalidArgumentError(
                f"size_in_bytes {size} is smaller than tensor.total_tensor_size_in_bytes "
                f"{tensor.total_tensor_size_in_bytes}: the buffer must hold the tensor it is made for")
        _check_memory(device, size)
        self.device = device
        # The tensor the buffer was made for, if any: read() and write() then check dtypes
        # against it and read() returns its elements in its shape. Bindings are not tied to it.
        self.tensor = tensor
        self.size_in_bytes = size
        self.segment_size = device.segment_size
        starts = range(0, size, self.segment_size)
        try:
            self.segments = [device.context.create_words((min(self.segment_size, size - start) + 3) // 4)
                             for start in starts]
        except (MemoryError, RuntimeError) as error:
            raise UnsupportedError(f"size_in_bytes {size}: the device could not allocate it ({error})") from None

    def __repr__(self) -> str:
        state = " destroyed" if self.segments is None else ""
        holds = f" for {self.tensor}" if self.tensor is not None else ""
        return f"<dmlpy.Buffer {self.size_in_bytes} bytes{holds}{state}>"

    @property
    def destroyed(self) -> bool:
        """True once destroy() ran: the buffer holds no memory."""
        return self.segments is None

    def check_usable(self) -> None:
        """Raise DeviceRemovedError unless the buffer and its device are alive (call it
        holding the device lock for the answer to stay true)."""
        self.device.check_open()
        if self.segments is None:
            raise DeviceRemovedError("this Buffer was destroyed")

    def _pieces(self, offset: int, byte_count: int):
        """(segment, offset in segment, offset in the data, length) covering a byte range."""
        position = offset
        while position < offset + byte_count:
            index, start = divmod(position, self.segment_size)
            length = min(self.segment_size - start, offset + byte_count - position)
            yield self.segments[index], start, position - offset, length
            position += length

    def _check_range(self, offset, byte_count: int, what: str) -> int:
        offset = _as_count(offset, f"{what} offset")
        if offset + byte_count > self.size_in_bytes:
            raise InvalidArgumentError(
                f"{what} of {byte_count} bytes at offset {offset} ends past the buffer's "
                f"{self.size_in_bytes} bytes")
        return offset

    def write(self, array: np.ndarray | bytes | bytearray | memoryview, offset: int = 0) -> None:
        """Copy the bytes of `array` (a NumPy array or a bytes-like object) to `offset`.

        A buffer made by size has no data type, so lists and Python scalars are refused: pass
        a NumPy array of the intended dtype. A buffer made for a tensor refuses an array of
        another dtype (bytes-like objects are written as they are)."""
        if self.tensor is not None and isinstance(array, np.ndarray) and array.dtype != self._tensor_dtype:
            raise InvalidArgumentError(
                f"array.dtype {array.dtype} != {self._tensor_dtype}: this buffer holds a {self.tensor.data_type.name} "
                f"tensor; convert first, e.g. array.astype({numpy_name(self._tensor_dtype)})",
                "dtype")
        raw = _raw_bytes(array)
        with self.device.using():
            self.device.check_open()
            self.check_usable()
            offset = self._check_range(offset, raw.nbytes, "write")
            for segment, start, position, length in self._pieces(offset, raw.nbytes):
                self.device.context.write(segment, start, raw[position:position + length])

    @property
    def _tensor_dtype(self) -> np.dtype:
        return np.dtype(data_type_info(self.tensor.data_type).numpy_dtype)

    def read(self, dtype: DTypeLike | TensorDataType = None, count: int | None = None,
             offset: int = 0) -> np.ndarray:
        """`count` elements of `dtype` (a NumPy dtype or a TensorDataType) from `offset`.

        A buffer made for a tensor reads its elements, in its shape and through its strides,
        when called with no arguments; a `dtype` other than the tensor's is refused."""
        if self.tensor is not None:
            if dtype is not None and _numpy_dtype(dtype) != self._tensor_dtype:
                raise InvalidArgumentError(
                    f"dtype {_numpy_dtype(dtype)} != {self._tensor_dtype}: this buffer holds a "
                    f"{self.tensor.data_type.name} tensor", "dtype")
            if count is None and offset == 0:
                return self._read_tensor()
            dtype = self._tensor_dtype
        if dtype is None or count is None:
            raise InvalidArgumentError("read() needs dtype and count: this buffer was made by size, so it has no "
                                       "tensor to take them from (create_buffer(tensor=desc) makes one that does)")
        numpy_dtype = _numpy_dtype(dtype)
        byte_count = _as_count(count, "count") * numpy_dtype.itemsize
        with self.device.using():
            self.device.check_open()
            self.check_usable()
            offset = self._check_range(offset, byte_count, "read")
            raw = np.empty(byte_count, np.uint8)  # only once the range is known to fit the buffer
            for segment, start, position, length in self._pieces(offset, raw.nbytes):
                self.device.context.read(segment, start, length, into=raw[position:position + length])
        return raw.view(numpy_dtype)

    def _read_tensor(self) -> np.ndarray:
        """The tensor's elements, a new array of its sizes, read through its strides."""
        tensor, dtype = self.tensor, self._tensor_dtype
        strides = tensor.strides or packed_strides(tensor.sizes)
        span = sum((size - 1) * stride for size, stride in zip(tensor.sizes, strides)) + 1
        flat = self.read(dtype, span)
        return np.lib.stride_tricks.as_strided(flat, tensor.sizes, [s * dtype.itemsize for s in strides]).copy()


    def destroy(self) -> None:
        """Free the memory now (after the call in flight on another thread); later use
        raises DeviceRemovedError. Safe after the device was closed."""
        try:
            with self.device.using():
                self.device.check_open()
                for segment in self.segments or ():
                    self.device.context.destroy_words(segment)
                self.segments = None
        except DeviceRemovedError:  # the device took every buffer with it
            self.segments = None


@dataclass(frozen=True)
class BufferBinding:
    """DML_BUFFER_BINDING: a buffer, a byte offset and the size of the bound range."""

    buffer: Buffer
    offset: int = 0
    size_in_bytes: int | None = None


Bound = Buffer | BufferBinding | None  # what a binding table takes for one tensor (None: an optional one unbound)


@dataclass(frozen=True)
class BindingProperties:
    """DML_BINDING_PROPERTIES of a compiled operator."""

    required_descriptor_count: int
    temporary_resource_size: int
    persistent_resource_size: int


@dataclass(frozen=True)
class BoundTensor:
    """A validated binding of one tensor, or of the temporary resource (desc None, FP32 words)."""

    name: str
    desc: BufferTensorDesc | None
    buffer: Buffer
    offset: int
    size: int  # the bytes the operator may touch

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def element_size(self) -> int:
        return self.desc.element_size if self.desc is not None else 4


def bind_tensor(device: Device, name: str, desc: BufferTensorDesc | None, item, required_size: int | None = None,
                ) -> BoundTensor:
    """Check one binding against DirectML's rules; `desc` None binds `required_size` raw bytes."""
    binding = BufferBinding(item) if isinstance(item, Buffer) else item
    if binding is None:
        raise InvalidArgumentError(f"{name} is None: this tensor is required")
    if not isinstance(binding, BufferBinding):
        raise InvalidArgumentError(f"{name} must be a Buffer or a BufferBinding, not {type(item).__name__}")
    if not isinstance(binding.buffer, Buffer):
        raise InvalidArgumentError(f"{name}.buffer must be a Buffer, not {type(binding.buffer).__name__}")
    buffer = binding.buffer
    if buffer.device is not device:
        raise InvalidArgumentError(f"{name} is bound to a buffer of another device")
    buffer.check_usable()
    offset = _as_count(binding.offset, f"{name}.offset")
    alignment = (desc.guaranteed_base_offset_alignment if desc else 0) or MINIMUM_BUFFER_TENSOR_ALIGNMENT
    if offset % alignment:
        raise InvalidArgumentError(
            f"{name}.offset {offset} is not a multiple of {alignment}: a bound tensor starts on a multiple of its "
            f"desc's guaranteed_base_offset_alignment, or of {MINIMUM_BUFFER_TENSOR_ALIGNMENT} bytes when that is 0")
    if offset > buffer.size_in_bytes:
        raise InvalidArgumentError(f"{name}.offset {offset} is past the end of the {buffer.size_in_bytes}-byte buffer")
    size = buffer.size_in_bytes - offset if binding.size_in_bytes is None \
        else _as_count(binding.size_in_bytes, f"{name}.size_in_bytes")
    if offset + size > buffer.size_in_bytes:
        raise InvalidArgumentError(
            f"{name}: offset {offset} + size_in_bytes {size} ends past the buffer's {buffer.size_in_bytes} bytes")
    needed = desc.total_tensor_size_in_bytes if desc is not None else required_size
    if size < needed:
        what = "the tensor's total_tensor_size_in_bytes" if desc is not None else "temporary_resource_size"
        raise InvalidArgumentError(f"{name}.size_in_bytes {size} is smaller than {what} {needed}")
    return BoundTensor(name, desc, buffer, offset, needed)


def _bind_present(device: Device, name: str, desc: BufferTensorDesc | None, item) -> BoundTensor | None:
    """A tensor's binding; an optional tensor (input or output) its desc leaves out (None,
    DirectML's null) takes no buffer (DML_BINDING_TYPE_NONE), and is None here too."""
    if desc is not None:
        return bind_tensor(device, name, desc, item)
    if item is not None:
        raise InvalidArgumentError(
            f"{name} is {type(item).__name__}: the operator's desc leaves this optional tensor out (None), so its "
            "binding must be None too")
    return None


def check_aliasing(inputs: Sequence[BoundTensor | None], outputs: Sequence[BoundTensor | None],
                   scratch: Sequence[BoundTensor], aliasable: Callable[[int, int], Aliasing]) -> None:
    """Output k may share input j's bytes as aliasable(k, j) allows (any overlap, or exactly
    the same range and strides: in place), but no output may overlap another. The temporary
    resource (`scratch`, when bound) counts as an output that may share nothing. Inputs and
    outputs are in binding order, None where an optional tensor is left out."""

    def overlap(a: BoundTensor, b: BoundTensor) -> bool:
        return a.buffer is b.buffer and a.offset < b.end and b.offset < a.end

    present_inputs = [(j, tensor) for j, tensor in enumerate(inputs) if tensor is not None]
    written = [*((k, out) for k, out in enumerate(outputs) if out is not None), *((None, t) for t in scratch)]
    for i, (k, out) in enumerate(written):
        for _, other in written[i + 1:]:
            if overlap(out, other):
                raise InvalidArgumentError(f"{out.name} and {other.name} overlap: outputs must not share bytes")
        for j, tensor in present_inputs:
            if not overlap(out, tensor):
                continue
            aliasing = aliasable(k, j) if k is not None else Aliasing(NONE)
            if aliasing.allowed == ANY:
                continue
            why = f" ({aliasing.reason})" if aliasing.reason else ""
            same_range = out.offset == tensor.offset and out.end == tensor.end
            if not same_range or out.desc is None:
                raise InvalidArgumentError(
                    f"{out.name} [{out.offset}, {out.end}) partially overlaps {tensor.name} "
                    f"[{tensor.offset}, {tensor.end}): an output may share an input's bytes only "
                    f"when bound to exactly the same range (in place){why}")
            if aliasing.allowed == NONE:
                raise InvalidArgumentError(f"{out.name} is bound over {tensor.name}: {aliasing.reason}")
            if out.desc.element_strides != tensor.desc.element_strides:
                raise InvalidArgumentError(
                    f"{out.name} is bound in place over {tensor.name} but their strides differ "
                    f"({out.desc.element_strides} vs {tensor.desc.element_strides}): in place needs one layout{why}",
                    "strides")


class BindingTable:
    """The buffers a compiled operator (or graph) reads and writes, validated and recorded
    for dispatch."""

    def __init__(self, device: Device, compiled: Bindable, inputs: Sequence[Bound], outputs: Sequence[Bound],
                 temporary: Bound, persistent: Bound):
        bound = []
        for role, tensors, items in (("inputs", compiled.input_tensors, inputs),
                                     ("outputs", compiled.output_tensors, outputs)):
            if isinstance(items, (Buffer, BufferBinding)) or not isinstance(items, Sequence):
                raise InvalidArgumentError(f"{role} must be a list of bindings, not {type(items).__name__}")
            if len(items) != len(tensors):
                raise InvalidArgumentError(
                    f"{role} has {len(items)} bindings: {compiled.name} has {len(tensors)} "
                    f"({', '.join(label for label, _ in tensors)})")
            bound.append([_bind_present(device, f"{role}[{i}] ({label})", desc, item)
                          for i, ((label, desc), item) in enumerate(zip(tensors, items))])
        self.inputs, self.outputs = bound
        for role, item in (("temporary", temporary), ("persistent", persistent)):
            if item is not None and not isinstance(item, (Buffer, BufferBinding)):
                raise InvalidArgumentError(
                    f"{role} must be None, a Buffer or a BufferBinding, not {type(item).__name__}")
        scratch = []
        if compiled.temporary_size:
            if temporary is None:
                raise InvalidArgumentError(
                    f"temporary is None: {compiled.name} needs a temporary resource of "
                    f"binding_properties.temporary_resource_size = {compiled.temporary_size} bytes")
            scratch = [bind_tensor(device, "temporary", None, temporary, compiled.temporary_size)]
        check_aliasing(self.inputs, self.outputs, scratch, compiled.aliasable)
        self.device = device
        self.compiled = compiled
        self.scratch = scratch
        # An optional tensor the desc leaves out is bound to nothing (None here).
        self.bound = [t for t in (*self.inputs, *self.outputs, *scratch) if t is not None]
        # One step per stage of each kernel, in order: its launches (one per window) need no
        # barrier among themselves; every step needs the ones before it to have finished,
        # except a stage that runs beside the one before it in its own kernel (a packed
        # kernel's tail; never beside an earlier kernel, whose reads a graph's outputs in place
        # and reused temporary ranges may overwrite), unless the kernel binds one buffer twice
        # (in place): the tail's elements are not the main stage's, but a binding is seen whole,
        # and the Vulkan synchronization rules (and the validation layer) ask for a barrier
        # between a write and a read of one binding.
        self.windows, self.steps = [], []
        for kernel in compiled.kernels:
            opened = False  # whether a step of this kernel was recorded
            tensors = [self._locate(t) for t in kernel.tensors]
            shares_a_buffer = len({id(t.buffer) for t in tensors}) < len(tensors)
            plan = kernel.plan
            if not plan.windowable:
                self._check_temporaries_inside_segments(kernel.tensors, tensors)
            windows = plan_windows(tensors, plan.element_count, plan.windowable, device.max_storage_buffer_range,
                                   plan.window_alignment)
            self.windows += windows
            for stage, spirv in zip(plan.stages, kernel.spirv):
                launches = [Launch([t.buffer.segments[s] for t, s in zip(tensors, window.segments)], grid,
                                   plan.push_constants(window.base_elements, window.element_count))
                            for window in windows
                            if (grid := stage.workgroups(device.adapter, window.element_count)) is not None]
                if not launches:
                    continue
                algorithms = device.context.create_algorithms(spirv, launches)
                if stage.independent and opened and not shares_a_buffer:
                    self.steps[-1] = [*self.steps[-1], *algorithms]
                else:
                    self.steps.append(algorithms)
                opened = True
        self.submission = device.context.record(self.steps)

    def _check_temporaries_inside_segments(self, placed: Sequence[KernelTensor], tensors: list[BoundTensor]) -> None:
        """A kernel that is not split into windows binds each tensor inside one segment. Its
        temporary ranges are laid out never to cross a segment boundary counted from the start
        of the temporary resource (fusion.py), so they stay inside one when that start is a
        segment boundary."""
        for where, tensor in zip(placed, tensors):
            size = tensor.buffer.segment_size
            if where.role == "temporary" and tensor.offset // size != (tensor.end - 1) // size:
                raise UnsupportedError(
                    f"temporary.offset {self.scratch[0].offset}: {tensor.name} then lies at bytes "
                    f"[{tensor.offset}, {tensor.end}) of the buffer, across a boundary between the {size}-byte "
                    f"segments a buffer is bound in, and its kernel binds each tensor whole: bind the temporary "
                    f"resource at an offset that is a multiple of {size} (0 in a buffer of its own)")

    def _locate(self, tensor: KernelTensor) -> BoundTensor:
        """The bound range a kernel's tensor lies in."""
        if tensor.role == "input":
            return self.inputs[tensor.index]
        if tensor.role == "output":
            return self.outputs[tensor.index]
        whole = self.scratch[0]
        return BoundTensor(f"temporary [{tensor.offset}, {tensor.offset + tensor.size})", tensor.desc, whole.buffer,
                           whole.offset + tensor.offset, tensor.size)

    def __repr__(self) -> str:
        return f"<dmlpy.BindingTable {self.compiled.name} {len(self.bound)} bindings>"

    def check_usable(self) -> None:
        for tensor in self.bound:
            tensor.buffer.check_usable()

    def tables(self) -> list[BindingTable]:
        return [self]

    def submissions(self) -> list:
        """What `execute` submits, once the buffers are known to be alive: one command buffer
        with every stage of every kernel, a barrier between stages."""
        self.check_usable()
        return [self.submission]
