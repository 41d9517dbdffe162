"""Split a dispatch so that every tensor it binds lies inside one segment of its buffer.

A buffer larger than the device's maxStorageBufferRange is made of several segments, each
bound on its own. A tensor inside one segment needs nothing; a packed tensor that crosses
segments runs as several windows of the same shader, cut where any tensor meets a segment
boundary. Other layouts touch elements in no contiguous order and cannot be windowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..base.errors import UnsupportedError


@dataclass(frozen=True)
class Window:
    first_element: int
    element_count: int
    segments: tuple[int, ...]  # per tensor: which segment of its buffer is bound
    base_elements: tuple[int, ...]  # per tensor: where first_element lies in that segment, in elements


def _locate(tensor, element: int) -> tuple[int, int]:
    size = tensor.buffer.segment_size
    byte = tensor.offset + element * tensor.element_size
    return byte // size, (byte - byte // size * size) // tensor.element_size


def _window(tensors, first: int, count: int) -> Window:
    located = [_locate(t, first) for t in tensors]
    return Window(first, count, tuple(s for s, _ in located), tuple(b for _, b in located))


def plan_windows(tensors: Sequence, element_count: int, packed: bool, max_storage_buffer_range: int,
                 alignment: int = 1) -> list[Window]:
    """The windows covering elements [0, element_count) of `tensors` (BoundTensors), each
    starting on a multiple of `alignment` elements but for windows shorter than that (a cut
    off the alignment gets one, up to the next multiple)."""
    def crosses(t):
        return t.offset // t.buffer.segment_size != (t.end - 1) // t.buffer.segment_size

    crossing = [t for t in tensors if crosses(t)]
    if not crossing:
        return [_window(tensors, 0, element_count)]
    if not packed:
        t = crossing[0]
        raise UnsupportedError(
            f"{t.name}: bytes [{t.offset}, {t.end}) cross a boundary between the {t.buffer.segment_size}-byte "
            f"segments a buffer is bound in (maxStorageBufferRange is {max_storage_buffer_range} bytes); only "
            "packed layouts are split into windows: bind this tensor inside one segment")
    # Packed: element i of every tensor lies at offset + i * element_size, so cuts at each
    # segment boundary any tensor meets give windows that stay inside one segment each.
    cuts = {0, element_count}
    for t in tensors:
        size, element_size = t.buffer.segment_size, t.element_size
        last_byte = t.offset + element_count * element_size - 1
        for segment in range(t.offset // size + 1, last_byte // size + 1):
            cuts.add((segment * size - t.offset) // element_size)
    cuts |= {min(-(-cut // alignment) * alignment, element_count) for cut in cuts}
    edges = sorted(cuts)
    return [_window(tensors, a, b - a) for a, b in zip(edges, edges[1:])]
