"""The NumPy front end of ACTIVATION_PARAMETERIZED_RELU_GRAD: its slope broadcasts by a data
format's rule rather than NumPy's, and it has two outputs."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import InvalidArgumentError
from ..base.tensor_desc import MAX_DIMENSION_COUNT, BufferTensorDesc
from ..base.types import data_type_for_numpy
from ..ops.prelu_grad import ActivationParameterizedReluGradOperatorDesc
from ..runtime.binding import MINIMUM_BUFFER_TENSOR_ALIGNMENT
from ..runtime.device import Device
from .arrays import (
    as_arrays,
    as_device,
    bindable,
    check_out,
    check_same,
    element_strides,
    span,
    whole_row_pieces,
)
from .call_cache import run_bound
from .device_array import DeviceArray

PRELU_RULES = (
    "slope must follow oneDNN's PReLU broadcasting rules: a 1-D slope as long as x's channel dim "
    "(axis 1 for NCX, the last axis for NXC), a 1-D slope of length 1, or a slope shaped x.shape[1:]")


def _slope_strides(x_shape, slope: np.ndarray, data_format: str) -> tuple[int, ...]:
    """The slope's element strides over x's dims (0 where it broadcasts), by oneDNN's rules."""
    strides = element_strides(slope)
    channel_axis = 1 if data_format == "NCX" else len(x_shape) - 1
    if slope.ndim == 1 and 0 <= channel_axis < len(x_shape) and slope.shape[0] == x_shape[channel_axis]:
        return tuple(strides[0] if axis == channel_axis else 0 for axis in range(len(x_shape)))
    if slope.ndim == 1 and slope.shape[0] == 1:
        return (0,) * len(x_shape)
    if len(x_shape) >= 1 and slope.shape == tuple(x_shape[1:]):
        return (0, *strides)
    raise InvalidArgumentError(f"slope.shape {slope.shape} with x.shape {tuple(x_shape)} and data_format "
                               f"{data_format!r}: {PRELU_RULES}", "sizes")


def _slope_axes(x_shape, slope: np.ndarray, data_format: str) -> dict[int, int]:
    """Which axis of slope each axis of x it varies along reads (_slope_strides' rules)."""
    channel_axis = 1 if data_format == "NCX" else len(x_shape) - 1
    if slope.ndim == 1 and 0 <= channel_axis < len(x_shape) and slope.shape[0] == x_shape[channel_axis]:
        return {channel_axis: 0}
    if slope.ndim == 1 and slope.shape[0] == 1:
        return {}
    return {axis: axis - 1 for axis in range(1, len(x_shape))}


def _prelu_outputs(out, x: np.ndarray, slope: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dslope) to write: new arrays, or NumPy's multi-output form out=(dx, dslope)."""
    if out is None:
        return np.empty(x.shape, x.dtype), np.zeros(slope.shape, x.dtype)
    if not isinstance(out, tuple) or len(out) != 2:
        raise InvalidArgumentError(f"out must be a tuple (dx, dslope) of two NumPy arrays, not {type(out).__name__}",
                                   "out")
    for name, array, like in (("out[0] (dx)", out[0], x), ("out[1] (dslope)", out[1], slope)):
        check_out(array, like.shape, x.dtype, name)
    if np.shares_memory(out[0], out[1]):
        raise InvalidArgumentError("out[0] (dx) and out[1] (dslope) share memory", "out")
    return out


def prelu_grad(x: ArrayLike | DeviceArray, slope: ArrayLike | DeviceArray, dy: ArrayLike | DeviceArray, *,
               data_format: str = "NXC", out: tuple[np.ndarray, np.ndarray] | None = None,
               device: Device | None = None) -> tuple[np.ndarray, np.ndarray]:
    """oneDNN's PReLUBackward: (dx, dslope), dslope shaped like slope.

    dx = x > 0 ? dy : slope * dy; dslope sums (x > 0 ? 0 : x * dy) over the dims slope is
    broadcast along, in a fixed order with FP32 accumulation. out=(dx, dslope): arrays to
    write the results to (NumPy's form for several outputs), which are returned.
    """
    if not isinstance(data_format, str) or data_format not in ("NCX", "NXC"):
        raise InvalidArgumentError(f"data_format {data_format!r} must be 'NCX' or 'NXC'")
    device = as_device(device)
    arrays = as_arrays({"x": x, "slope": slope, "dy": dy})
    check_same({"x": arrays["x"], "dy": arrays["dy"]})
    check_same(arrays, shape_too=False)
    x, slope, dy = (bindable(a) for a in arrays.values())
    slope_strides = _slope_strides(x.shape, slope, data_format)
    dx, dslope = _prelu_outputs(out, x, slope)
    if x.size == 0:
        dslope[...] = 0
        return dx, dslope
    if x.ndim == 0 or x.ndim > MAX_DIMENSION_COUNT:
        raise InvalidArgumentError(f"x has {x.ndim} dims: prelu_grad takes 1 to {MAX_DIMENSION_COUNT}")
    data_type = data_type_for_numpy(x.dtype)
    reduced = [size > 1 and stride == 0 for size, stride in zip(x.shape, slope_strides)]
    dslope_sizes = tuple(1 if r else size for r, size in zip(reduced, x.shape))
    descs = [BufferTensorDesc(data_type, x.shape, element_strides(x)),
             BufferTensorDesc(data_type, x.shape, slope_strides),
             BufferTensorDesc(data_type, x.shape, element_strides(dy)),
             BufferTensorDesc(data_type, x.shape),
             BufferTensorDesc(data_type, dslope_sizes)]
    compiled = device.compile_cached(ActivationParameterizedReluGradOperatorDesc(*descs))
    limit = device.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    if x.nbytes > limit:  # pieces along the axes slope varies on: each keeps its slope elements' sums whole
        slope_axis = _slope_axes(x.shape, slope, data_format)
        reduced_axes = {a for a, r in enumerate(reduced) if r}
        for piece in whole_row_pieces(x.shape, reduced_axes, x.itemsize, limit, "prelu_grad"):
            slope_piece = [slice(None)] * slope.ndim
            for axis, where in slope_axis.items():
                slope_piece[where] = piece[axis]
            slope_piece = tuple(slope_piece)
            pieces = (np.ascontiguousarray(a) for a in (x[piece], slope[slope_piece], dy[piece]))
            prelu_grad(*pieces, data_format=data_format, out=(dx[piece], dslope[slope_piece]), device=device)
        return dx, dslope

    def work(binding):
        for buffer, array, desc in zip(binding.buffers, (x, slope, dy), descs):
            buffer.write(span(array, desc.sizes, desc.element_strides))
        device.execute(binding.table)
        dx[...] = binding.buffers[3].read(x.dtype, x.size).reshape(x.shape)
        dslope[...] = binding.buffers[4].read(x.dtype, dslope.size).reshape(slope.shape)

    run_bound(device, compiled, None, work)
    return dx, dslope




