"""Guarded execution: prove, after each dispatch, that nothing outside the outputs' elements
changed. A test mode (create_device(guarded=True)): it reads back every bound buffer.

Before the dispatch every bound buffer is read; after it, each is read again. Input
buffers must be unchanged; in an output buffer only the bytes of the output's elements
may differ: not the padding or gaps between strided elements, not the other half of a
word shared by 16-bit elements, not the bytes around the bound range (fill them with
canary bytes to make the proof strong).
"""

from __future__ import annotations

import numpy as np

from ..base.errors import DmlError


class GuardViolationError(DmlError):
    """A dispatch changed bytes outside the element set of its outputs (a dmlpy bug)."""


def element_bytes(tensor) -> np.ndarray:
    """Byte offsets, relative to the binding, of every byte of every element of a tensor."""
    offsets = np.zeros(1, dtype=np.int64)
    for size, stride in zip(tensor.desc.sizes, tensor.desc.element_strides):
        offsets = (offsets[:, None] + np.arange(size, dtype=np.int64) * stride).ravel()
    element = tensor.desc.element_size
    return (offsets[:, None] * element + np.arange(element)).ravel()


class Guard:
    """Snapshots of every buffer the tables bind, around work the caller runs holding the
    device lock (so no other thread's write is taken for a stray one)."""

    def __init__(self, tables):
        self.buffers = list({id(t.buffer): t.buffer for table in tables for t in table.bound}.values())
        self.writable = {}  # buffer id -> byte mask of what the work may change
        for tensor in (t for table in tables for t in (*table.outputs, *table.scratch)):
            mask = self.writable.setdefault(id(tensor.buffer), np.zeros(tensor.buffer.size_in_bytes, bool))
            if tensor.desc is None:  # the temporary resource is the operator's own
                mask[tensor.offset:tensor.end] = True
            else:
                mask[tensor.offset + element_bytes(tensor)] = True

    def __enter__(self):
        self.before = [b.read(np.uint8, b.size_in_bytes) for b in self.buffers]
        return self

    def __exit__(self, kind, error, traceback):
        if kind is not None:
            return False
        for buffer, before in zip(self.buffers, self.before):
            changed = buffer.read(np.uint8, buffer.size_in_bytes) != before
            mask = self.writable.get(id(buffer))
            if mask is not None:
                changed &= ~mask
            if changed.any():
                where = np.flatnonzero(changed)
                raise GuardViolationError(
                    f"a dispatch changed {where.size} bytes it does not own in a {buffer.size_in_bytes}-byte "
                    f"buffer, first at byte {where[0]}")
        return False
