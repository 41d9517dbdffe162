"""Arrays from any DLPack producer on the host (PyTorch CPU tensors, JAX, CuPy's host arrays ...).

`numpy.from_dlpack` refuses bfloat16, which dmlpy supports (as ml_dtypes.bfloat16), so the
front end reads the DLPack tensor itself: the legacy "dltensor" capsule that every producer
gives when no version is requested. Its memory is copied before the capsule is released; the
capsule is never marked consumed, so its own destructor returns the memory to the producer.
Every field is checked before an element is read: a tensor no producer could have made (a
negative ndim or size, NULL data with elements, a span past the address space) is refused.
"""

from __future__ import annotations

import ctypes
import math

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..base.errors import InvalidArgumentError, UnsupportedError, shown

KDL_CPU = 1
# Bounds on what a real host tensor can have: far more dims than DirectML's 8 (the front end
# merges or copies them down to that), and no more bytes than NumPy or a pointer can address.
MAX_DIMS = 32
MAX_BYTES = 2**63 - 1
ADDRESS_END = 2 ** (8 * ctypes.sizeof(ctypes.c_void_p))
# (DLDataTypeCode, bits) -> NumPy dtype, for the codes dmlpy has a TensorDataType or a
# NumPy equivalent for: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6.
DTYPES = {
    (0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32, (0, 64): np.int64,
    (1, 8): np.uint8, (1, 16): np.uint16, (1, 32): np.uint32, (1, 64): np.uint64,
    (2, 16): np.float16, (2, 32): np.float32, (2, 64): np.float64,
    (4, 16): ml_dtypes.bfloat16, (6, 8): np.bool_,
}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def from_dlpack(value, name: str) -> np.ndarray:
    """A NumPy copy of a host DLPack tensor; InvalidArgumentError (naming the argument) for a
    tensor on another device, one the producer will not export, a dtype NumPy lacks, or
    impossible fields."""
    device = getattr(value, "__dlpack_device__", None)
    if device is not None:
        try:
            device_type = int(device()[0])
        except Exception as error:  # whatever the producer raises
            raise InvalidArgumentError(f"{name}.__dlpack_device__() failed: {error}") from None
        if device_type != KDL_CPU:
            raise InvalidArgumentError(f"{name} is on DLPack device type {device_type}, not the host (1): the "
                                       "front end reads host memory, so copy it to the CPU first")
    try:
        capsule = value.__dlpack__()
    except Exception as error:  # e.g. PyTorch: "Can't export tensors that require gradient"
        raise InvalidArgumentError(f"{name} cannot be exported through DLPack: {error}") from None
    if not _capsule_is_valid(capsule, b"dltensor"):
        raise InvalidArgumentError(f"{name}.__dlpack__() did not return an unconsumed 'dltensor' capsule")
    tensor = DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor")).dl_tensor
    if tensor.device.device_type != KDL_CPU:
        raise InvalidArgumentError(f"{name} is on DLPack device type {tensor.device.device_type}, not the host")
    return _copy(tensor, name)


def _copy(tensor: DLTensor, name: str) -> np.ndarray:
    """A copy of the tensor's elements. Every field is checked before any element is read, so
    a producer's impossible tensor is an InvalidArgumentError, not a read of memory that is not
    the tensor's (the addresses a plausible tensor names are the producer's to vouch for)."""
    code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
    if lanes != 1:
        raise InvalidArgumentError(f"{name}: DLPack dtype.lanes {lanes} is not 1: vector elements have no NumPy "
                                   "equivalent")
    if (code, bits) not in DTYPES:
        raise InvalidArgumentError(f"{name}: DLPack dtype (code {code}, {bits} bits) has no NumPy equivalent")
    dtype = np.dtype(DTYPES[code, bits])
    ndim = tensor.ndim
    if not 0 <= ndim <= MAX_DIMS:
        raise InvalidArgumentError(f"{name}: DLPack ndim {ndim} is not 0 to {MAX_DIMS}")
    if ndim and not tensor.shape:
        raise InvalidArgumentError(f"{name}: DLPack shape is NULL with ndim {ndim}: a tensor with dims has sizes")
    shape = tuple(tensor.shape[i] for i in range(ndim))
    for i, size in enumerate(shape):
        if size < 0:
            raise InvalidArgumentError(f"{name}: DLPack shape[{i}] {size} is negative: sizes are 0 or more")
    # NumPy refuses even an empty array whose non-zero sizes multiply past 2^63 - 1 bytes.
    size_in_bytes = math.prod(size for size in shape if size) * dtype.itemsize
    if size_in_bytes > MAX_BYTES:
        raise InvalidArgumentError(
            f"{name}: DLPack shape {shown(shape)} of {dtype.itemsize}-byte elements makes {shown(size_in_bytes)} "
            "bytes (its zero sizes aside): more than 2^63 - 1, the most an array can hold")
    if 0 in shape:
        return np.empty(shape, dtype)
    if not tensor.data:
        raise InvalidArgumentError(f"{name}: DLPack data is NULL with shape {shown(shape)}: only an empty tensor may "
                                   "have no memory")
    if tensor.strides:
        strides = tuple(tensor.strides[i] for i in range(ndim))
    else:  # NULL: packed row-major
        strides = tuple(math.prod(shape[i + 1:]) for i in range(ndim))
    # The bytes from the lowest-addressed element to the highest; strides may be negative.
    low = sum((size - 1) * stride for size, stride in zip(shape, strides) if stride < 0)
    high = sum((size - 1) * stride for size, stride in zip(shape, strides) if stride > 0)
    span = (high - low + 1) * dtype.itemsize
    if span > MAX_BYTES:
        raise InvalidArgumentError(
            f"{name}: DLPack shape {shown(shape)} with strides {shown(strides)} spans {shown(span)} bytes of memory: "
            "more than 2^63 - 1, the most a tensor can span")
    start = tensor.data + tensor.byte_offset + low * dtype.itemsize
    if not 0 < start <= ADDRESS_END - span:
        raise InvalidArgumentError(
            f"{name}: DLPack data {tensor.data:#x} + byte_offset {tensor.byte_offset} with strides {shown(strides)} "
            f"puts elements from address {start:#x} to {start + span - 1:#x}: outside the address space "
            f"(1 to {ADDRESS_END - 1:#x})")
    memory = np.frombuffer((ctypes.c_byte * span).from_address(start), dtype)
    view = as_strided(memory[-low:], shape=shape, strides=tuple(s * dtype.itemsize for s in strides),
                      writeable=False)
    try:
        return np.array(view, copy=True)
    except MemoryError:  # a plausible tensor, e.g. one row broadcast through a zero stride, too big to copy
        raise UnsupportedError(f"{name}: its copy of {size_in_bytes} bytes does not fit in host memory") from None
