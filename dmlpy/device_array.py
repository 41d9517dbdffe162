"""Device-resident arrays for the NumPy front end.

`asarray(values, device=...)` uploads once and returns a DeviceArray: a packed (row-major)
array in a buffer of its device. Every front end given one computes on the device and
returns one, so `dmlpy.tanh(dmlpy.elu(t))` moves nothing between host and device; `.numpy()`
(or `np.asarray`, or `np.from_dlpack`) copies the values to the host. An array's buffer goes
back to its device's pool of free buffers (device.free_arrays) when the array is collected,
for the next array of that size.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from .errors import InvalidArgumentError
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
        self.buffer = device.free_arrays.take(self.buffer_size) or device.create_buffer(self.buffer_size)
        weakref.finalize(self, _return_to_pool, device, self.buffer_size, self.buffer).atexit = False

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
