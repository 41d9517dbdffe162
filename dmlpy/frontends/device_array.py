"""Device-resident arrays for the NumPy front end.

`asarray(values, device=...)` uploads once and returns a DeviceArray: a packed (row-major)
array in a buffer of its device. Every front end given one computes on the device and
returns one, so `dmlpy.tanh(dmlpy.elu(t))` moves nothing between host and device; `.numpy()`
(or `np.asarray`, or `np.from_dlpack`) copies the values to the host.

Element-wise results are deferred: the call checks its arguments and the operator at once,
but the array is computed when first read (`.numpy()`, a row-wise operator or `out=` using
it, ...), together with the deferred results it depends on, as one compiled graph whose
element-wise chains fuse (fusion.py): the same bits as computing each call at once. A chain
is computed once it reaches MAX_FUSED_NODES operators.

A deferred result sees its inputs as they were at its call: before any array changes (a
`write`, an `out=`, its buffer handed out), every deferred result that reads it directly is
computed; one that reads it through a chain reads that chain's deferred links, which are
computed first in turn. All of this, and every computation on the device's arrays, runs
under the device's array lock (docs/ownership.md), so a thread reading a result and another
writing its inputs see one order or the other, never a mixture.

An array's buffer goes back to its device's pool of free buffers (device.free_arrays) when
the array is collected, for the next array of that size, unless the buffer was handed out
(`.buffer`): then it is the caller's, and is freed when the caller drops it.

Basic indexing (`a[1:, ::2]`, `a[0]`, `a[..., None]`), `transpose`/`.T` and `reshape` of a
packed array give views: arrays over their base's buffer through DirectML's strides and an
offset, with no copy (array_views.py). An element-wise operator or a matrix product reads a
view where it lies, its desc carrying the view's strides and its binding the view's offset;
the operators that read their input packed (reductions, running sums, the row-wise ones)
read `contiguous()`, a copy made on the device and fused into their graph where it can be.
Views share their base's lock and readers (docs/ownership.md, Views).
"""

from __future__ import annotations

import math
import weakref

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import DmlError, InvalidArgumentError
from ..base.tensor_desc import MAX_DIMENSION_COUNT, BufferTensorDesc, calc_buffer_tensor_size, packed_strides
from ..base.types import data_type_for_numpy
from ..kernels.codegen import merge_dims
from ..ops.fusion import MAX_FUSED_NODES
from ..ops.schema import OperatorDesc
from ..runtime.binding import MINIMUM_BUFFER_TENSOR_ALIGNMENT, Buffer, BufferBinding
from ..runtime.device import Device
from .array_operators import (
    ARRAY_OPERATORS,
    UFUNC_FRONT_ENDS,
    operator_method,
    reduction_method,
    scan_method,
    unary_method,
)
from .array_views import Layout, indexed, reshaped_shape, squeezed, transposed

DLPACK_CPU = 1  # kDLCPU: the host copy __dlpack__ exports

def _return_to_pool(device, size: int, buffer) -> None:
    """An array was collected: its buffer serves the next array of its size. Runs inside the
    garbage collector, on whatever thread and under whatever lock it interrupted, so it takes
    no lock (BufferPool.hand_back)."""
    if not device.closed and not buffer.destroyed:
        device.free_arrays.hand_back(size, buffer)


class DeviceArray:
    """A packed array in device memory (see module doc). Create with `dmlpy.asarray`.

    Python's arithmetic, comparison and bitwise operators run the element-wise family's
    operators on the device (deferred and fused, as the front ends are); comparisons give
    UINT8 arrays of 0 and 1. Arrays keep their identity hash: `==` gives an array."""

    __add__, __radd__ = operator_method("add"), operator_method("add", True)
    __sub__, __rsub__ = operator_method("subtract"), operator_method("subtract", True)
    __mul__, __rmul__ = operator_method("multiply"), operator_method("multiply", True)
    __truediv__, __rtruediv__ = operator_method("divide"), operator_method("divide", True)
    __pow__, __rpow__ = operator_method("power"), operator_method("power", True)
    # Python's %: the divisor's sign
    __mod__, __rmod__ = operator_method("remainder"), operator_method("remainder", True)
    __and__, __rand__ = operator_method("bitwise_and"), operator_method("bitwise_and", True)
    __or__, __ror__ = operator_method("bitwise_or"), operator_method("bitwise_or", True)
    __xor__, __rxor__ = operator_method("bitwise_xor"), operator_method("bitwise_xor", True)
    __lt__, __le__ = operator_method("less"), operator_method("less_equal")
    __gt__, __ge__ = operator_method("greater"), operator_method("greater_equal")
    __eq__, __ne__ = operator_method("equal"), operator_method("not_equal")
    __floordiv__, __rfloordiv__ = operator_method("floor_divide"), operator_method("floor_divide", True)
    __lshift__, __rlshift__ = operator_method("left_shift"), operator_method("left_shift", True)
    __rshift__, __rrshift__ = operator_method("right_shift"), operator_method("right_shift", True)
    __matmul__, __rmatmul__ = operator_method("matmul"), operator_method("matmul", True)
    __neg__, __abs__, __invert__ = unary_method("negative"), unary_method("abs"), unary_method("bitwise_not")
    __pos__ = unary_method("element_wise_identity")  # NumPy's +a: a copy
    __hash__ = object.__hash__
    sum, prod, mean = reduction_method("sum", True), reduction_method("prod", True), reduction_method("mean", True)
    max, min = reduction_method("max"), reduction_method("min")
    argmax, argmin = reduction_method("argmax"), reduction_method("argmin")
    cumsum, cumprod = scan_method("cumsum"), scan_method("cumprod")

    def __divmod__(self, other) -> tuple[DeviceArray, DeviceArray]:
        return self // other, self % other

    def __rdivmod__(self, other) -> tuple[DeviceArray, DeviceArray]:
        return other // self, other % self

    def astype(self, dtype: np.typing.DTypeLike) -> DeviceArray:
        """The array converted to `dtype` on the device (DML_CAST; its rounding rules in
        docs/operators.md); deferred and fused as any element-wise result."""
        return ARRAY_OPERATORS["cast"](self, dtype)

    def copy(self) -> DeviceArray:
        """A packed copy made on the device (ELEMENT_WISE_IDENTITY: every bit kept, NaN payloads
        included); deferred and fused as any element-wise result."""
        return ARRAY_OPERATORS["element_wise_identity"](self)

    def contiguous(self) -> DeviceArray:
        """The array itself where its elements are packed from a 16-byte boundary (what an
        operator reading packed tensors can bind), else `copy()`."""
        if self._base is None or (self._layout().packed and self._offset_bytes % MINIMUM_BUFFER_TENSOR_ALIGNMENT == 0):
            return self
        return self.copy()

    def may_share_memory(self, other: object) -> bool:
        """Whether `other` is a device array over the same buffer (this array, its base, a view
        of either): NumPy's `may_share_memory`, answered by the buffer alone."""
        return isinstance(other, DeviceArray) and other._storage is self._storage

    @property
    def base(self) -> DeviceArray | None:
        """The array whose buffer a view reads (None for an array that owns its buffer)."""
        return self._base

    @property
    def strides(self) -> tuple[int, ...]:
        """Bytes between neighbours along each dim, as NumPy's `strides`."""
        return tuple(s * self.dtype.itemsize for s in self._strides)

    def __getitem__(self, index) -> DeviceArray:
        """NumPy's basic indexing: a view (no copy) through DirectML's strides. Integers, slices
        with positive steps, `...` and None; other indices raise, naming the host form."""
        return self._view(indexed(self._layout(), index))

    def __setitem__(self, index, values: ArrayLike) -> None:
        """`a[index] = values`: writes the view's elements (see `write`)."""
        self[index].write(values)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[k] for k in range(self.shape[0]))

    def transpose(self, *axes: int) -> DeviceArray:
        """The dims in the order `axes` (reversed when none are given): a view."""
        order = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        return self._view(transposed(self._layout(), tuple(order) if order else None))

    @property
    def T(self) -> DeviceArray:
        """The dims reversed: a view."""
        return self.transpose()

    def reshape(self, *shape: int) -> DeviceArray:
        """The elements in row-major order as `shape` (one -1 is inferred): a view of a packed
        array; an array whose elements are not packed is copied first (NumPy may find a view
        there; the values are the same)."""
        requested = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        dims = reshaped_shape(self.size, self.shape, requested)
        source = self if self._layout().packed else self.copy()
        return source._view(Layout(dims, packed_strides(dims), source._offset))

    def ravel(self) -> DeviceArray:
        """The elements as one dim (`reshape(-1)`)."""
        return self.reshape(-1)

    def flatten(self) -> DeviceArray:
        """The elements as one dim, in a new array (a copy made on the device, as NumPy's)."""
        return self.reshape(-1).copy()

    def squeeze(self, axis: int | tuple[int, ...] | None = None) -> DeviceArray:
        """Without the dims of size 1 that `axis` names (all of them where None): a view."""
        return self._view(squeezed(self._layout(), axis))

    def item(self) -> int | float | complex:
        """The one element of a one-element array as a Python number (read from the device)."""
        if self.size != 1:
            raise InvalidArgumentError(f"item() of a DeviceArray of {self.size} elements: only a one-element array "
                                       "converts to a Python scalar (index it first, a[i, j].item())", "self")
        return self.numpy().reshape(-1)[0].item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        """A 0-d integer array as an index (`range(n)`, `x[n]`), as NumPy's."""
        if self.ndim or self.dtype.kind not in "iu":
            raise InvalidArgumentError(f"a DeviceArray of shape {self.shape} and dtype {self.dtype} is not an "
                                       "index: only a 0-d integer array is", "self")
        return int(self.item())

    def tolist(self) -> list | int | float | complex:
        """The values as nested Python lists (read from the device), as NumPy's."""
        return self.numpy().tolist()

    def _layout(self) -> Layout:
        return Layout(self.shape, self._strides, self._offset)

    def _view(self, layout: Layout) -> DeviceArray:
        view = DeviceArray.__new__(DeviceArray)
        view._describe(self.device, layout.shape, self.dtype)
        view._base = self._storage
        view._strides, view._offset = layout.strides, layout.offset
        return view

    @property
    def _offset_bytes(self) -> int:
        return self._offset * self.dtype.itemsize

    def _span(self) -> tuple[Buffer, np.ndarray]:
        """A view's base buffer, and a host copy of the elements from the view's first to its
        last (call holding the array lock)."""
        buffer = self._base._computed()
        return buffer, buffer.read(self.dtype, self._layout().span(), self._offset_bytes)

    @property
    def _storage(self) -> DeviceArray:
        """The array that owns the buffer: the base of a view, else the array itself."""
        return self if self._base is None else self._base

    def __bool__(self) -> bool:
        """As NumPy: the truth of a one-element array; any other is ambiguous."""
        if self.size != 1:
            raise ValueError(f"the truth value of a DeviceArray of {self.size} elements is ambiguous: use "
                             "dmlpy's logical operators, or .numpy().any() / .all()")
        return bool(self.numpy().reshape(-1)[0])

    def __array_ufunc__(self, ufunc, method: str, *inputs, **kwargs):
        """NumPy's ufuncs the element-wise family has stay on the device (`np.add(a, b)`);
        the others, and reductions or `out=` through NumPy, compute on host copies."""
        name = UFUNC_FRONT_ENDS.get(ufunc.__name__, ufunc.__name__)
        if method == "__call__" and not kwargs and name in ARRAY_OPERATORS:
            return ARRAY_OPERATORS[name](*inputs)
        hosts = [x.numpy() if isinstance(x, DeviceArray) else x for x in inputs]
        return getattr(ufunc, method)(*hosts, **kwargs)

    def __init__(self, device: Device, shape: tuple[int, ...], dtype: np.dtype):
        self._describe(device, shape, dtype)
        self._allocate()

    def _describe(self, device, shape, dtype) -> None:
        self.device = device
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.data_type = data_type_for_numpy(self.dtype)
        self.size = math.prod(self.shape)
        # Whole 4-byte words, at least 16 bytes: what a packed desc of these elements needs bound;
        # elements narrower than a word get a word more, so that a view starting inside a word
        # has the whole words its desc counts.
        data_bytes = calc_buffer_tensor_size(self.data_type, (self.size,)) if self.size else 0
        self.buffer_size = max(16, data_bytes + (4 if self.dtype.itemsize < 4 and self.size else 0))
        self._base: DeviceArray | None = None  # a view's: the array whose buffer it reads
        self._strides, self._offset = packed_strides(self.shape), 0  # in elements
        self._buffer = None
        self._release = None  # the finalizer that pools the buffer
        self._deferred: tuple[OperatorDesc, tuple[DeviceArray, ...]] | None = None  # (desc, its input arrays)
        # The deferred arrays (by id, itself included) this array's value waits on: an array
        # read twice in a chain (`where(y > 0, y, 0)`) counts once toward MAX_FUSED_NODES.
        self._waits_on: frozenset[int] = frozenset()
        # The deferred arrays that read this one, by id: a WeakSet would compare them with ==.
        self._readers: weakref.WeakValueDictionary[int, DeviceArray] = weakref.WeakValueDictionary()

    @classmethod
    def deferred(cls, device, shape, dtype, desc: OperatorDesc,
                 inputs: tuple[DeviceArray | None, ...]) -> DeviceArray:
        """The result of an operator a graph fuses (a validated desc: element-wise, a reduction
        that ends a chain, a matrix product an element-wise chain may end in) on `inputs` (None
        for an optional input the desc leaves out), computed when read."""
        array = cls.__new__(cls)
        array._describe(device, shape, dtype)
        present = [a for a in inputs if a is not None]
        with device.array_lock:
            waits_on = frozenset({id(array)}).union(*(a._waits_on for a in present))
            if len(waits_on) > MAX_FUSED_NODES:  # compute what it reads first: a graph stays one kernel's size
                for source in present:
                    source._computed()
                waits_on = frozenset({id(array)})
            array._deferred = (desc, inputs)
            array._waits_on = waits_on
            for source in present:
                source._storage._readers[id(array)] = array
        return array

    def _allocate(self) -> None:
        pool = self.device.free_arrays
        self._buffer = pool.take(self.buffer_size) or self.device.create_buffer(self.buffer_size)
        self._release = weakref.finalize(self, _return_to_pool, self.device, self.buffer_size, self._buffer)
        self._release.atexit = False

    @property
    def buffer(self) -> Buffer:
        """The array's buffer, its value computed first where it was deferred. The buffer is
        then the caller's too: it never returns to the pool, and since the caller may write
        to it, the deferred results that read this array are computed now. A view has no
        buffer of its own: `view.copy().buffer` is a packed one, `view.base.buffer` its base's."""
        if self._base is not None:
            raise InvalidArgumentError(
                f"buffer: this array is a view (shape {self.shape}, strides {self.strides}, byte offset "
                f"{self._offset_bytes} in its base's buffer), which has no buffer of its own: take "
                "view.copy().buffer for a packed buffer, or view.base.buffer for the base's", "buffer")
        with self.device.array_lock:
            self._settle_readers()
            buffer = self._computed()
            self._release.detach()
            return buffer

    def compute(self) -> DeviceArray:
        """Compute a deferred value now (reading the array does so too); returns the array."""
        with self.device.array_lock:
            self._computed()
        return self

    def _computed(self) -> Buffer | BufferBinding:
        """The buffer holding the value, or for a view its base's bound at the view's first
        element (call holding the array lock)."""
        if self._base is not None:
            return BufferBinding(self._base._computed(), self._offset_bytes)
        if self._deferred is not None:
            self._compute()
        return self._buffer

    def _settle_readers(self) -> None:
        """Compute every deferred array that reads this one, or any view of its buffer: it is
        about to change (call holding the array lock)."""
        for reader in list(self._storage._readers.values()):
            reader._computed()

    def _compute(self) -> None:
        """Run the deferred operators this array waits on as one graph (called holding the array lock)."""
        from .graph_builder import GraphBuilder

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
                      if source is not None and _fusable_input(desc, field, source)]
        # The graph's shape (each node's desc key and where its inputs come from), and its
        # inputs: what finds the compiled graph of an earlier, identical chain.
        position = {id(array): k for k, array in enumerate(order)}
        structure, input_descs, leaves = [], [], []
        input_index: dict[tuple[int, object], int] = {}
        for array in order:
            desc, inputs = array._deferred
            sources = []
            for field, source in zip(desc.schema.inputs, inputs):
                if source is None:  # an input the desc leaves out
                    sources.append(("absent", 0))
                    continue
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
                    values[k] if kind == "node" else graph_inputs[k] if kind == "input" else None
                    for kind, k in sources])[0])
            compiled = self.device.compiled_operators.put(key, builder.build([values[-1]]))
        inputs = [leaf._computed() for leaf in leaves]
        self._allocate()
        _execute(self.device, compiled, inputs, self._buffer)
        for source in self._deferred[1]:
            if source is not None:
                source._storage._readers.pop(id(self), None)
        self._deferred = None
        self._waits_on = frozenset()

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
        """The values, as NumPy prints them (reading them computes a deferred array, as
        CuPy's and PyTorch's reprs do); the shape alone where they cannot be read."""
        try:
            values = self.numpy()
        except DmlError as error:
            return (f"<dmlpy.DeviceArray shape {self.shape} {self.dtype} on {self.device.adapter_name!r}: "
                    f"values unreadable ({type(error).__name__})>")
        prefix = "dmlpy.DeviceArray("
        body = np.array2string(values, separator=", ", prefix=prefix)
        return f"{prefix}{body}, dtype={self.dtype}, shape={self.shape}, device={self.device.adapter_name!r})"

    def desc(self, sizes: tuple[int, ...] | None = None) -> BufferTensorDesc:
        """The array as a tensor desc: packed (an array of more than DirectML's 8 dims as its
        flat 1-D form), a view's strides, or broadcast to `sizes` through zero strides (NumPy's
        rules: dims aligned from the right)."""
        if sizes is None and self._base is not None and not self._layout().packed:
            sizes, strides = merge_dims(self.shape or (1,), [self.broadcast_strides(self.shape or (1,))])
            if len(sizes) > MAX_DIMENSION_COUNT:
                raise InvalidArgumentError(f"a view of shape {self.shape} and strides {self.strides} has "
                                           f"{len(sizes)} dims that do not merge: a tensor desc takes 1 to "
                                           f"{MAX_DIMENSION_COUNT} (DirectML's limit); take a copy()", "sizes")
            return self.strided_desc(sizes, strides[0])
        shape = self.shape if 0 < len(self.shape) <= MAX_DIMENSION_COUNT else (self.size,)
        if sizes is None or tuple(sizes) == shape:
            return self.strided_desc(shape, packed_strides(shape))
        return self.strided_desc(tuple(sizes), self.broadcast_strides(sizes))

    def broadcast_strides(self, sizes: tuple[int, ...]) -> tuple[int, ...]:
        """Element strides reading this array as `sizes` (NumPy's broadcasting: zero strides)."""
        shape, own = (self.shape, self._strides) if self.shape else ((1,), (1,))
        lead = len(sizes) - len(shape)
        return tuple([0] * lead + [0 if n == 1 and size != 1 else stride
                                   for n, size, stride in zip(shape, sizes[lead:], own)])

    def strided_desc(self, sizes: tuple[int, ...], strides: tuple[int, ...]) -> BufferTensorDesc:
        """A desc of `sizes` reading this array's elements through element `strides` (a view's:
        from its first element, bound at the view's offset, on the alignment that offset has)."""
        offset_bytes = self._offset_bytes
        alignment = 0 if offset_bytes % MINIMUM_BUFFER_TENSOR_ALIGNMENT == 0 else offset_bytes & -offset_bytes
        if strides == packed_strides(sizes) and math.prod(sizes) == self.size and not alignment:
            return BufferTensorDesc(self.data_type, sizes)
        total = calc_buffer_tensor_size(self.data_type, sizes, strides) if self._base is not None \
            else calc_buffer_tensor_size(self.data_type, (self.size,))
        return BufferTensorDesc(self.data_type, sizes, strides, total_tensor_size_in_bytes=total,
                                guaranteed_base_offset_alignment=alignment)

    def write(self, values: ArrayLike) -> None:
        """Copy `values` in, as NumPy's `array[...] = values` would: converted to this array's
        dtype and broadcast to its shape (a scalar fills it)."""
        if isinstance(values, DeviceArray):
            values = values.numpy()
        # A NumPy array already in this dtype and shape, one contiguous run, is written as it
        # is: converting it would copy it once more for nothing.
        if (type(values) is np.ndarray and values.dtype == self.dtype and values.shape == self.shape
                and values.flags.c_contiguous):
            host = values
        else:
            host = np.empty(self.shape, self.dtype)
            try:
                source = np.asarray(values)
                if source.dtype.hasobject or source.dtype.kind in "US":
                    raise TypeError(f"{source.dtype} values are not numbers")
                host[...] = source
            except Exception as error:  # NumPy's ValueError, TypeError, OverflowError for what it cannot assign
                shown = repr(values) if len(repr(values)) <= 60 else repr(values)[:57] + "..."
                raise InvalidArgumentError(
                    f"values {shown} cannot be written to a DeviceArray of shape {self.shape} and dtype "
                    f"{self.dtype}: they must convert to that dtype and broadcast to that shape ({error})",
                    "values") from None
        with self.device.array_lock:
            self._settle_readers()
            if self._base is not None:  # the view's elements, written back with those between them
                if host.size:
                    buffer, span = self._span()
                    np.lib.stride_tricks.as_strided(span, self.shape, self.strides)[...] = host
                    buffer.write(span, self._offset_bytes)
                return
            if self._deferred is not None:  # every element is replaced: the pending value is never needed
                for source in self._deferred[1]:
                    source._storage._readers.pop(id(self), None)
                self._deferred, self._waits_on = None, frozenset()
                self._allocate()
            if host.size:
                self._buffer.write(host.reshape(-1))

    def numpy(self) -> np.ndarray:
        """A host copy of the values."""
        with self.device.array_lock:
            if self._base is None:
                return self._computed().read(self.dtype, self.size).reshape(self.shape)
            if self.size == 0:
                return np.empty(self.shape, self.dtype)
            return np.lib.stride_tricks.as_strided(self._span()[1], self.shape, self.strides).copy()

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise InvalidArgumentError("np.asarray(DeviceArray, copy=False): a DeviceArray lives in device "
                                       "memory, so the host always gets a copy; leave copy out (or True)", "copy")
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


def run_on_arrays(compiled, inputs: list[DeviceArray | None], *outputs: DeviceArray) -> None:
    """Run a compiled operator reading `inputs` and writing `outputs` (of one device), under
    the array lock: the inputs computed first, the deferred results that read an output
    computed before it changes."""
    device = outputs[0].device
    with device.array_lock:
        buffers = [None if array is None else array._computed() for array in inputs]  # None: an input left out
        for output in outputs:
            output._settle_readers()
        _execute(device, compiled, buffers, *(output._computed() for output in outputs))


def _execute(device, compiled, inputs: list, *outputs) -> None:
    """Run `compiled` on these buffers, with a pooled temporary resource where it needs one."""
    size = compiled.temporary_size  # where a graph of several kernels keeps its intermediates
    temporary = (device.free_arrays.take(size) or device.create_buffer(size)) if size else None
    device.execute(device_array_table(device, compiled, inputs, list(outputs), temporary))
    if temporary is not None:
        device.free_arrays.give(size, temporary)


def _fusable_input(desc: OperatorDesc, field, source: DeviceArray) -> bool:
    """Whether a deferred input joins the consumer's graph: the consumer must read it with the
    desc its operator writes, as a graph edge does. Otherwise (an input broadcast to a larger
    shape; a reduction's or a 1-D product's result, whose operator keeps the size-1 dims
    NumPy's shape drops) it is computed on its own first and read from its buffer."""
    if source._deferred is None:
        return False
    producer = source._deferred[0]
    return getattr(desc, field.name) == getattr(producer, producer.schema.outputs[0].name)


def device_array_table(device, compiled, inputs: list, outputs: list, temporary):
    """The binding table of a call on device arrays, reused for a later call on the same
    buffers (pooled buffers recur in a loop). An entry holds its buffers, so their ids stay
    theirs while it lives; one whose buffer was destroyed since is rebuilt."""
    # Each as a binding (a view's: its base's buffer at an offset), keyed by buffer and offset.
    bound = tuple(b if b is None or isinstance(b, BufferBinding) else BufferBinding(b)
                  for b in (*inputs, *outputs, temporary))
    key = (id(compiled), *(None if b is None else (id(b.buffer), b.offset) for b in bound))
    entry = device.device_array_tables.get(key)
    if entry is not None and (entry[0] is not compiled or any(b is not None and b.buffer.destroyed
                                                              for b in entry[1])):
        device.device_array_tables.discard(key)
        entry = None
    if entry is None:
        table = device.create_binding_table(compiled, inputs, outputs, temporary)
        entry = device.device_array_tables.put(key, (compiled, bound, table))
    return entry[2]
