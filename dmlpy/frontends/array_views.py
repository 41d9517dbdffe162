"""The layouts of device-array views: what NumPy's basic indexing, `transpose` and `reshape` make
of a shape, element strides and an element offset, with no data moved.

A layout is DirectML's: sizes and non-negative element strides from a first element (the
offset) in a buffer. NumPy's negative steps need negative strides, which tensor descs do not
have, so they are refused with the host form to use instead.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

from ..base.errors import IndexOutOfRangeError, InvalidArgumentError
from ..base.tensor_desc import packed_strides


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # elements
    offset: int  # elements from the buffer's first

    @property
    def packed(self) -> bool:
        """Whether the elements lie in row-major order with no gap (size-1 dims have any stride)."""
        return all(n == 1 or s == p for n, s, p in zip(self.shape, self.strides, packed_strides(self.shape)))

    def span(self) -> int:
        """Elements from the first to the last the layout reaches (0 when it has none)."""
        if 0 in self.shape:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides))


def _shown(index) -> str:
    text = repr(index)
    return text if len(text) <= 60 else text[:57] + "..."


def indexed(layout: Layout, index) -> Layout:
    """NumPy's basic indexing (integers, slices with positive steps, `...`, `None`) of `layout`."""
    items = index if isinstance(index, tuple) else (index,)
    if sum(item is Ellipsis for item in items) > 1:
        raise InvalidArgumentError(f"index {_shown(index)} has more than one '...'", "index")
    consumed = sum(item is not None and item is not Ellipsis for item in items)
    if consumed > len(layout.shape):
        raise IndexOutOfRangeError(f"index {_shown(index)} names {consumed} dims; the array has {len(layout.shape)}",
                                   "index")
    if not any(item is Ellipsis for item in items):
        items = (*items, Ellipsis)
    shape, strides, offset, dim = [], [], layout.offset, 0
    for item in items:
        if item is Ellipsis:
            for _ in range(len(layout.shape) - consumed):
                shape.append(layout.shape[dim])
                strides.append(layout.strides[dim])
                dim += 1
            continue
        if item is None:
            shape.append(1)
            strides.append(0)
            continue
        size, stride = layout.shape[dim], layout.strides[dim]
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            if step < 0:
                raise InvalidArgumentError(
                    f"index {_shown(index)}: a negative step needs a negative stride, which DirectML's tensor descs "
                    "do not have; take the values on the host (view.numpy()[...]) and upload them", "index")
            count = max(0, math.ceil((stop - start) / step))
            offset += start * stride if count else 0
            shape.append(count)
            strides.append(stride * step if count > 1 else stride)
        else:
            try:
                position = operator.index(item)
            except TypeError:
                raise InvalidArgumentError(
                    f"index {_shown(index)}: a device array takes integers, slices, '...' and None (NumPy's basic "
                    f"indexing, a view with no copy); {type(item).__name__} indices (NumPy's advanced indexing) are "
                    "not taken: index the host copy, view.numpy()[...]", "index") from None
            if not -size <= position < size:
                raise IndexOutOfRangeError(f"index {position} is out of range for dim {dim} of size {size}", "index")
            offset += (position % size) * stride
        dim += 1
    return Layout(tuple(shape), tuple(strides), offset)


def transposed(layout: Layout, axes: tuple[int, ...] | None) -> Layout:
    """The dims of `layout` in the order `axes` (NumPy's transpose; None reverses them)."""
    count = len(layout.shape)
    if axes is None:
        order = tuple(reversed(range(count)))
    else:
        try:
            order = tuple(operator.index(a) for a in axes)
        except TypeError:
            raise InvalidArgumentError(f"axes {axes!r} must be integers", "axes") from None
        order = tuple(a + count if a < 0 else a for a in order)
        if sorted(order) != list(range(count)):
            raise InvalidArgumentError(f"axes {axes!r} must name each of the {count} dims once", "axes")
    return Layout(tuple(layout.shape[a] for a in order), tuple(layout.strides[a] for a in order), layout.offset)


def squeezed(layout: Layout, axis) -> Layout:
    """`layout` without dims of size 1: those named by `axis` (an int or a tuple of ints,
    negative from the end), or all of them where `axis` is None (NumPy's squeeze)."""
    count = len(layout.shape)
    if axis is None:
        dropped = {d for d, n in enumerate(layout.shape) if n == 1}
    else:
        try:
            named = tuple(operator.index(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
        except TypeError:
            raise InvalidArgumentError(f"axis {axis!r} must be an int or a tuple of ints", "axis") from None
        for a in named:
            if not -count <= a < count:
                raise InvalidArgumentError(f"axis {a} is out of range for an array of {count} dims", "axis")
        dropped = {a % count for a in named}
        if len(dropped) != len(named):
            raise InvalidArgumentError(f"axis {axis!r} names a dim twice", "axis")
        for a in sorted(dropped):
            if layout.shape[a] != 1:
                raise InvalidArgumentError(f"axis {a} has size {layout.shape[a]}: squeeze removes dims of size 1 "
                                           "only", "axis")
    kept = [d for d in range(count) if d not in dropped]
    return Layout(tuple(layout.shape[d] for d in kept), tuple(layout.strides[d] for d in kept), layout.offset)


def reshaped_shape(size: int, shape: tuple[int, ...], requested) -> tuple[int, ...]:
    """NumPy's `reshape` shape: integers, one of them -1 (inferred)."""
    try:
        dims = tuple(operator.index(n) for n in requested)
    except TypeError:
        raise InvalidArgumentError(f"shape {requested!r} must be integers", "shape") from None
    if dims.count(-1) > 1 or any(n < -1 for n in dims):
        raise InvalidArgumentError(f"shape {dims}: sizes are non-negative, with at most one -1 (inferred)", "shape")
    if -1 in dims:
        known = math.prod(n for n in dims if n != -1)
        if known == 0 or size % known:
            raise InvalidArgumentError(f"cannot reshape an array of {size} elements (shape {shape}) into {dims}",
                                       "shape")
        dims = tuple(size // known if n == -1 else n for n in dims)
    if math.prod(dims) != size:
        raise InvalidArgumentError(f"cannot reshape an array of {size} elements (shape {shape}) into {dims}", "shape")
    return dims
