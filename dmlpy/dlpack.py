"""Arrays from any DLPack producer on the host (PyTorch CPU tensors, JAX, CuPy's host arrays ...).

`numpy.from_dlpack` refuses bfloat16, which dmlpy supports (as ml_dtypes.bfloat16), so the
front end reads the DLPack tensor itself: the legacy "dltensor" capsule that every producer
gives when no version is requested. Its memory is copied before the capsule is released; the
capsule is never marked consumed, so its own destructor returns the memory to the producer.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import as_strided

from .errors import InvalidArgumentError

KDL_CPU = 1
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
    tensor on another device, one the producer will not export, or a dtype NumPy lacks."""
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
    code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
    dtype = DTYPES.get((code, bits)) if lanes == 1 else None
    if dtype is None:
        raise InvalidArgumentError(f"{name} has DLPack dtype (code {code}, {bits} bits, {lanes} lanes), "
                                   "which has no NumPy equivalent")
    dtype = np.dtype(dtype)
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
    else:  # NULL: packed row-major
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
    if 0 in shape:
        return np.empty(shape, dtype)
    # The bytes from the lowest-addressed element to the highest; strides may be negative.
    low = sum((size - 1) * stride for size, stride in zip(shape, strides) if stride < 0)
    high = sum((size - 1) * stride for size, stride in zip(shape, strides) if stride > 0)
    start = (tensor.data or 0) + tensor.byte_offset + low * dtype.itemsize
    memory = np.frombuffer((ctypes.c_byte * ((high - low + 1) * dtype.itemsize)).from_address(start), dtype)
    view = as_strided(memory[-low:], shape=shape, strides=tuple(s * dtype.itemsize for s in strides),
                      writeable=False)
    return np.array(view, copy=True)
