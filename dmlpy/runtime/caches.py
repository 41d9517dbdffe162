"""A bounded least-recently-used cache, the one kind of cache a device owns.

Each cache counts what its entries really hold (entries, and bytes of whatever the owner
says an entry costs) against budgets, and evicts the least recently used entries past
either. An evicted entry is handed to `on_evict` after the cache's lock is released, so
releasing GPU objects never happens under it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

Value = TypeVar("Value")


@dataclass(frozen=True)
class CacheLimits:
    """Budgets of the caches a device owns (see docs/ownership.md).

    compiled_operators: compiled operators kept per device for the front ends and graphs
    (each holds its GLSL and SPIR-V, some tens of KiB). shaders: SPIR-V per shader source,
    so a compile of a source seen before touches neither glslang nor the disk cache. front_end_bindings and
    front_end_bytes: buffers and binding tables the NumPy front end keeps for reuse, by
    count (each costs about half a MiB of host memory in kp's objects, whatever the tensor
    size) and by the device memory their buffers hold. free_array_bytes: device memory of
    freed device arrays kept for the next arrays of the same size (BufferPool).
    device_array_tables: binding tables of front-end calls on device arrays, kept for a call
    on the same buffers. pipelines: compiled Vulkan pipelines kept per SPIR-V for binding
    tables to come (each table runs its shader's one pipeline over its own descriptor set; a
    pipeline costs milliseconds to build and, on lavapipe, a few MiB of host memory).
    constant_arrays: one-value device arrays of the Python numbers passed beside device
    arrays, by dtype and value, uploaded once for every call that passes the number again.
    """

    compiled_operators: int = 256
    shaders: int = 256
    front_end_bindings: int = 32
    front_end_bytes: int = 256 << 20
    free_array_bytes: int = 256 << 20
    device_array_tables: int = 64
    pipelines: int = 64
    constant_arrays: int = 64

    def __post_init__(self):
        from ..base.errors import InvalidArgumentError

        for name in ("compiled_operators", "shaders", "front_end_bindings", "front_end_bytes", "free_array_bytes",
                     "device_array_tables", "pipelines", "constant_arrays"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"CacheLimits.{name} {value!r} must be an integer >= 0", name)


class LruCache(Generic[Value]):
    """Entries by key, least recently used first out, within a count and a byte budget."""

    def __init__(self, max_entries: int, max_bytes: int | None = None,
                 cost: Callable[[Value], int] = lambda value: 0,
                 on_evict: Callable[[Value], None] = lambda value: None):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._cost = cost
        self._on_evict = on_evict
        self._entries: OrderedDict[Hashable, Value] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> Value | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Value) -> Value:
        """Insert `value` unless another thread put one first; returns the entry kept."""
        evicted = []
        with self._lock:
            existing = self._entries.get(key)
            if existing is not None:
                self._entries.move_to_end(key)
                evicted.append(value)
                kept = existing
            else:
                self._entries[key] = kept = value
                self._bytes += self._cost(value)
                while self._entries and (len(self._entries) > self.max_entries or (
                        self.max_bytes is not None and self._bytes > self.max_bytes and len(self._entries) > 1)):
                    _, old = self._entries.popitem(last=False)
                    self._bytes -= self._cost(old)
                    evicted.append(old)
        for old in evicted:
            if old is not kept:
                self._on_evict(old)
        return kept

    def discard(self, key: Hashable) -> None:
        """Forget the entry of `key`, if any (nothing is passed to on_evict)."""
        with self._lock:
            value = self._entries.pop(key, None)
            if value is not None:
                self._bytes -= self._cost(value)

    def clear(self) -> list[Value]:
        """Empty the cache; returns what it held (nothing is passed to on_evict)."""
        with self._lock:
            values = list(self._entries.values())
            self._entries.clear()
            self._bytes = 0
        return values

    def reset_after_fork(self) -> None:
        """In a forked child: forget every entry (they belong to the parent) and the lock."""
        self._lock = threading.Lock()
        self._entries = OrderedDict()
        self._bytes = 0


class BufferPool:
    """Free buffers by size, kept for reuse: the buffers of device arrays nobody references.

    A chain of front-end calls on device arrays then allocates (and zero-fills) nothing after
    its first round. Bounded by `max_bytes`; past it the oldest free buffers are handed to
    `on_evict` (which destroys them) after the lock is released.

    `hand_back` is what a finalizer calls: it takes no lock (a deque's append is atomic), since
    the garbage collector may run a finalizer on a thread that holds this pool's lock, or the
    device's. Handed-back buffers join the pool at its next take or give. A buffer destroyed
    meanwhile (its owner kept a reference and destroyed it) is never handed out."""

    def __init__(self, max_bytes: int, on_evict: Callable[[object], None]):
        self.max_bytes = max_bytes
        self._on_evict = on_evict
        self._free: OrderedDict[int, tuple[int, object]] = OrderedDict()  # id -> (size, buffer), oldest first
        self._handed_back: deque[tuple[int, object]] = deque()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """Bytes of the free buffers, those handed back since the last take or give included."""
        return self._bytes + sum(size for size, _ in list(self._handed_back))  # list(): one C-level copy

    def take(self, size: int):
        """A free buffer of exactly `size` bytes, or None."""
        evicted = []
        with self._lock:
            self._admit_handed_back(evicted)
            found = None
            for key, (held, buffer) in reversed(self._free.items()):  # the most recently freed first
                if held == size and not buffer.destroyed:
                    found = key
                    break
            buffer = None
            if found is not None:
                _, buffer = self._free.pop(found)
                self._bytes -= size
        for old in evicted:
            self._on_evict(old)
        return buffer

    def give(self, size: int, buffer) -> None:
        evicted = []
        with self._lock:
            self._admit_handed_back(evicted)
            self._admit(size, buffer, evicted)
        for old in evicted:
            self._on_evict(old)

    def hand_back(self, size: int, buffer) -> None:
        """give() for finalizers: no lock taken (see the class doc)."""
        self._handed_back.append((size, buffer))

    def _admit_handed_back(self, evicted: list) -> None:
        while self._handed_back:
            self._admit(*self._handed_back.popleft(), evicted)

    def _admit(self, size: int, buffer, evicted: list) -> None:
        """Called holding the lock; what passes the budget goes to `evicted`."""
        if buffer.destroyed:
            return
        self._free[id(buffer)] = (size, buffer)
        self._bytes += size
        while self._bytes > self.max_bytes and self._free:
            _, (held, old) = self._free.popitem(last=False)
            self._bytes -= held
            evicted.append(old)

    def clear(self) -> list:
        with self._lock:
            self._handed_back.clear()
            buffers = [buffer for _, buffer in self._free.values()]
            self._free.clear()
            self._bytes = 0
        return buffers

    def reset_after_fork(self) -> None:
        self._lock = threading.Lock()
        self._free = OrderedDict()
        self._handed_back = deque()
        self._bytes = 0
