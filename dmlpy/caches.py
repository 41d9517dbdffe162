"""A bounded least-recently-used cache, the one kind of cache a device owns.

Each cache counts what its entries really hold (entries, and bytes of whatever the owner
says an entry costs) against budgets, and evicts the least recently used entries past
either. An evicted entry is handed to `on_evict` after the cache's lock is released, so
releasing GPU objects never happens under it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
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
    size) and by the device memory their buffers hold.
    """

    compiled_operators: int = 256
    shaders: int = 256
    front_end_bindings: int = 32
    front_end_bytes: int = 256 << 20

    def __post_init__(self):
        from .errors import InvalidArgumentError

        for name in ("compiled_operators", "shaders", "front_end_bindings", "front_end_bytes"):
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
