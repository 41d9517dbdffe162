"""Device-resident arrays for the NumPy front end.

`asarray(values, device=...)` uploads once and returns a DeviceArray: a packed (row-major)
array in a buffer of its device. Every front end given one computes on the device and
returns one, so `dmlpy.tanh(dmlpy.elu(t))` moves nothing between host and device; `.numpy()`
(or `np.asarray`, or `np.from_dlpack`) copies the values to the host.

Element-wise results are deferred: the call checks its arguments and the operator at once,
but the array is computed when first read (`.numpy()`, a row-wise operator or `out=` using
it, ...), together with the deferred results it depends on, as one compiled graph whose
element-wise chains fuse (fusion.py): the same bits as computing each call at once. An
array written to (as `out=`) first has every deferred result that reads it computed, so a
deferred result always sees its inputs as they were at its call. A chain is computed once
it reaches MAX_FUSED_NODES operators.

An array's buffer goes back to its device's pool of free buffers (device.free_arrays) when
the array is collected, for the next array of that size.
"""

from __future__ import annotations

import math
import threading
import weakref

import numpy as np

from .errors import InvalidArgumentError
from .fusion import MAX_FUSED_NODES
from .schema import OperatorDesc
from .tensor_desc import BufferTensorDesc, calc_buffer_tensor_size
from .types import data_type_for_numpy

DLPACK_CPU = 1  # kDLCPU: the host copy __dlpack__ exports


def _return_to_pool(device, size: int, buffer) -> None:
    """An array was collected: its buffer serves the next array of its size."""
    if not device.closed and buffer.segments is not None:
        device.free_arrays.give(size, buffer)


class DeviceArray:
    """A packed array in device memory (see module doc). Create with `dmlpy.asarray`."""

    def __init__(self, device, shape: tuple[int, ...], dtype: np.dtype):
        self.device = device
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.data_type = data_type_for_numpy(self.dtype)
        self.size = math.prod(self.shape)
        # Whole 4-byte words: what a packed desc of these sizes needs bound.
        self.buffer_size = max(16, calc_buffer_tensor_size(self.data_type, self.shape or (1,)) if self.size else 0)
        self._buffer = None
        self._deferred: tuple[OperatorDesc, tuple[DeviceArray, ...]] | None = None  # (desc, its input arrays)
        self._operator_count = 0  # deferred operators this array's value waits on
        self._readers: weakref.WeakSet[DeviceArray] = weakref.WeakSet()  # deferred arrays that read this one
        self._lock = threading.Lock()
        self._allocate()

    @classmethod
    def deferred(cls, device, shape, dtype, desc: OperatorDesc, inputs: tuple[DeviceArray, ...]) -> DeviceArray:
        """The result of an element-wise operator (a validated desc) on `inputs`, computed when read."""
        array = cls.__new__(cls)
        array.device = device
        array.shape = tuple(shape)
        array.dtype = np.dtype(dtype)
        array.data_type = data_type_for_numpy(array.dtype)
        array.size = math.prod(array.shape)
        array.buffer_size = max(16, calc_buffer_tensor_size(array.data_type, array.shape or (1,)))
        array._buffer = None
        array._readers = weakref.WeakSet()
        array._lock = threading.Lock()
        count = 1 + sum(a._operator_count for a in inputs)
        if count > MAX_FUSED_NODES:  # compute what it reads first: a graph stays one kernel's size
            for source in inputs:
                source.compute()
            count = 1
        array._deferred = (desc, inputs)
        array._operator_count = count
        for source in inputs:
            source._readers.add(array)
        return array

    def _allocate(self) -> None:
        self._buffer = self.device.free_arrays.take(self.buffer_size) or self.device.create_buffer(self.buffer_size)
        weakref.finalize(self, _return_to_pool, self.device, self.buffer_size, self._buffer).atexit = False

    @property
    def buffer(self):
        """The array's buffer, its value computed first where it was deferred."""
        with self._lock:
            if self._deferred is not None:
                self._compute()
            return self._buffer

    def compute(self) -> DeviceArray:
        """Compute a deferred value now (reading the array does so too); returns the array."""
        self.buffer  # noqa: B018  (reading it computes it)
        return self

    def settle_readers(self) -> None:
        """Compute every deferred array that reads this one (it is about to change)."""
        for reader in list(self._readers):
            reader.compute()

    def _compute(self) -> None:
        """Run the deferred operators this array waits on as one graph (called holding _lock)."""
        from .graph import GraphBuilder  # the graph module builds on the front end's operators

        # The deferred arrays this one waits on, each after those it reads (an explicit stack:
        # a recursive closure would be a reference cycle holding the arrays until the next GC,
        # and their buffers out of the pool).
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            array, expanded = stack.pop()
            if expanded:
                order.append(array)
                continue
            if id(array) in seen or array._deferred is None:
                continue
            seen.add(id(array))
            stack.append((array, True))
            desc, inputs = array._deferred
            stack += [(source, False) for field, source in reversed(list(zip(desc.schema.inputs, inputs)))
                      if _fusable_input(desc, field, source)]
        # The graph's shape (each node's desc key and where its inputs come from), and its
        # inputs: what finds the compiled graph of an earlier, identical chain.
        position = {id(array): k for k, array in enumerate(order)}
        structure, input_descs, leaves = [], [], []
        input_index: dict[tuple[int, object], int] = {}
        for array in order:
            desc, inputs = array._deferred
            sources = []
            for field, source in zip(desc.schema.inputs, inputs):
                if id(source) in position and _fusable_input(desc, field, source):
                    sources.append(("node", position[id(source)]))
                    continue
                key = (id(source), getattr(desc, field.name))
                if key not in input_index:
                    input_index[key] = len(leaves)
                    leaves.append(source)
                    input_descs.append(key[1])
                sources.append(("input", input_index[key]))
            structure.append((desc.schema.key(desc), tuple(sources)))
        key = ("device array graph", tuple(structure), tuple(input_descs))
        compiled = self.device.compiled_operators.get(key)
        if compiled is None:
            builder = GraphBuilder(self.device)
            graph_inputs = [builder.input(desc) for desc in input_descs]
            values = []
            for array, (_, sources) in zip(order, structure):
                values.append(builder.add(array._deferred[0], [
                    values[k] if kind == "node" else graph_inputs[k] for kind, k in sources])[0])
            compiled = self.device.compiled_operators.put(key, builder.build([values[-1]]))
        inputs = [leaf.buffer for leaf in leaves]
        self._allocate()
        size = compiled.temporary_size  # where a graph of several kernels keeps its intermediates
        temporary = (self.device.free_arrays.take(size) or self.device.create_buffer(size)) if size else None
        self.device.execute(device_array_table(self.device, compiled, inputs, self._buffer, temporary))
        if temporary is not None:
            self.device.free_arrays.give(size, temporary)
        for source in self._deferred[1]:
            source._readers.discard(self)
        self._deferred = None
        self._operator_count = 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<dmlpy.DeviceArray shape {self.shape} {self.dtype} on {self.device.adapter_name!r}>"

    def desc(self, sizes: tuple[int, ...] | None = None) -> BufferTensorDesc:
        """The array as a tensor desc: packed, or broadcast to `sizes` through zero strides
        (NumPy's rules: dims aligned from the right)."""
        shape = self.shape or (1,)  # a 0-d array is one element
        if sizes is None or tuple(sizes) == shape:
            return BufferTensorDesc(self.data_type, shape)
        packed = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        lead = len(sizes) - len(shape)
        strides = [0] * lead + [0 if n == 1 and size != 1 else stride
                                for n, size, stride in zip(shape, sizes[lead:], packed)]
        return BufferTensorDesc(self.data_type, tuple(sizes), tuple(strides),
                                total_tensor_size_in_bytes=calc_buffer_tensor_size(self.data_type, shape))

    def write(self, values: np.ndarray) -> None:
        """Copy host values of this array's shape and dtype in."""
        self.settle_readers()
        self.buffer.write(np.ascontiguousarray(values, self.dtype).reshape(-1))

    def numpy(self) -> np.ndarray:
        """A host copy of the values."""
        return self.buffer.read(self.dtype, self.size).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        values = self.numpy()
        return values if dtype is None else values.astype(dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A host copy, exported through DLPack (np.from_dlpack takes host memory only)."""
        if copy is False:
            raise BufferError("a DeviceArray lives in device memory: DLPack gets a host copy, so copy=False "
                              "cannot be honoured")
        return self.numpy().__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DLPACK_CPU, 0)


def _fusable_input(desc: OperatorDesc, field, source: DeviceArray) -> bool:
    """Whether a deferred input joins the consumer's graph: it must be read as it is packed
    (an input broadcast to a larger shape is computed on its own first)."""
    return source._deferred is not None and getattr(desc, field.name) == source.desc()


def device_array_table(device, compiled, inputs: list, output, temporary):
    """The binding table of a call on device arrays, reused for a later call on the same
    buffers (pooled buffers recur in a loop). An entry holds its buffers, so their ids stay
    theirs while it lives; one whose buffer was destroyed since is rebuilt."""
    buffers = (*inputs, output, temporary)
    key = (id(compiled), *map(id, buffers))
    entry = device.device_array_tables.get(key)
    if entry is not None and (entry[0] is not compiled or any(b is not None and b.segments is None
                                                              for b in entry[1])):
        device.device_array_tables.discard(key)
        entry = None
    if entry is None:
        table = device.create_binding_table(compiled, inputs, [output], temporary)
        entry = device.device_array_tables.put(key, (compiled, buffers, table))
    return entry[2]


def asarray(values, device=None, dtype=None) -> DeviceArray:
    """`values` (an array, anything NumPy or DLPack can read, a list, a number) in device
    memory. A DeviceArray of `device` is returned as it is; one of another device is copied
    through the host. dtype: the data type to convert to (default: the values' own, with
    Python numbers and lists as float32 or int32, as in the front ends)."""
    from .numpy_api import _as_arrays, _device  # the front end builds on this module

    device = _device(device)
    if isinstance(values, DeviceArray):
        if values.device is device and (dtype is None or np.dtype(dtype) == values.dtype):
            return values
        values = values.numpy()
    host = _as_arrays({"values": values})["values"]
    if dtype is not None:
        try:
            host = host.astype(np.dtype(dtype))
        except TypeError as error:
            raise InvalidArgumentError(f"dtype {dtype!r}: {error}") from None
        if data_type_for_numpy(host.dtype) is None:
            raise InvalidArgumentError(f"dtype {host.dtype} has no TensorDataType")
    array = DeviceArray(device, host.shape, host.dtype)
    if host.size:
        array.write(host)
    return array
