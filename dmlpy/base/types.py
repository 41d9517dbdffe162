"""DirectML's enumerations, with DirectML's numeric values, and what dmlpy knows of each data type."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import ml_dtypes
import numpy as np


class TensorDataType(enum.IntEnum):
    UNKNOWN = 0
    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11
    UINT4 = 12
    INT4 = 13
    # dmlpy extensions live from 0x10000 up, far from any value DirectML will assign.
    BFLOAT16 = 0x10001


class TensorFlags(enum.IntFlag):
    NONE = 0
    OWNED_BY_DML = 1


class ExecutionFlags(enum.IntFlag):
    NONE = 0
    ALLOW_HALF_PRECISION_COMPUTATION = 1
    DISABLE_META_COMMANDS = 2
    DESCRIPTORS_VOLATILE = 4


class FeatureLevel(enum.IntEnum):
    LEVEL_1_0 = 0x1000
    LEVEL_2_0 = 0x2000
    LEVEL_2_1 = 0x2100
    LEVEL_3_0 = 0x3000
    LEVEL_3_1 = 0x3100
    LEVEL_4_0 = 0x4000
    LEVEL_4_1 = 0x4100
    LEVEL_5_0 = 0x5000
    LEVEL_5_1 = 0x5100
    LEVEL_5_2 = 0x5200
    LEVEL_6_0 = 0x6000
    LEVEL_6_1 = 0x6100
    LEVEL_6_2 = 0x6200
    LEVEL_6_3 = 0x6300
    LEVEL_6_4 = 0x6400

    def __str__(self) -> str:
        return f"FEATURE_LEVEL_{self.name[6:]}"


class Feature(enum.IntEnum):
    """What `Device.check_feature_support` can be asked (DML_FEATURE)."""

    TENSOR_DATA_TYPE_SUPPORT = 0
    FEATURE_LEVELS = 1


# The highest feature level this runtime implements.
RUNTIME_FEATURE_LEVEL = FeatureLevel.LEVEL_6_4


@dataclass(frozen=True)
class DataTypeInfo:
    """How a data type is stored: element bits, its NumPy dtype, and the level DirectML added it."""

    bits: int
    numpy_dtype: np.dtype | None
    introduced: FeatureLevel
    # False for types whose storage needs device features that are never enabled here.
    device_supported: bool
    # A dmlpy extension: refused by a device created with strict_directml=True.
    extension: bool = False

    @property
    def signed_integer(self) -> bool:
        return self.numpy_dtype is not None and np.dtype(self.numpy_dtype).kind == "i"

    @property
    def element_size(self) -> int:
        """Bytes per element as DirectML counts them (4-bit types round up to a byte)."""
        return max(1, self.bits // 8)


DATA_TYPES: dict[TensorDataType, DataTypeInfo] = {
    TensorDataType.FLOAT32: DataTypeInfo(32, np.dtype(np.float32), FeatureLevel.LEVEL_1_0, True),
    TensorDataType.FLOAT16: DataTypeInfo(16, np.dtype(np.float16), FeatureLevel.LEVEL_1_0, True),
    TensorDataType.UINT32: DataTypeInfo(32, np.dtype(np.uint32), FeatureLevel.LEVEL_1_0, True),
    TensorDataType.UINT16: DataTypeInfo(16, np.dtype(np.uint16), FeatureLevel.LEVEL_1_0, True),
    TensorDataType.UINT8: DataTypeInfo(8, np.dtype(np.uint8), FeatureLevel.LEVEL_1_0, True),
    TensorDataType.INT32: DataTypeInfo(32, np.dtype(np.int32), FeatureLevel.LEVEL_1_0, True),
    TensorDataType.INT16: DataTypeInfo(16, np.dtype(np.int16), FeatureLevel.LEVEL_1_0, True),
    TensorDataType.INT8: DataTypeInfo(8, np.dtype(np.int8), FeatureLevel.LEVEL_1_0, True),
    # Bound as pairs of 32-bit words and computed in 32-bit integer arithmetic (shaders/wide.comp):
    # no device feature needed.
    TensorDataType.FLOAT64: DataTypeInfo(64, np.dtype(np.float64), FeatureLevel.LEVEL_4_1, True),
    TensorDataType.UINT64: DataTypeInfo(64, np.dtype(np.uint64), FeatureLevel.LEVEL_4_1, True),
    TensorDataType.INT64: DataTypeInfo(64, np.dtype(np.int64), FeatureLevel.LEVEL_4_1, True),
    TensorDataType.UINT4: DataTypeInfo(4, None, FeatureLevel.LEVEL_6_3, False),
    TensorDataType.INT4: DataTypeInfo(4, None, FeatureLevel.LEVEL_6_3, False),
    TensorDataType.BFLOAT16: DataTypeInfo(16, np.dtype(ml_dtypes.bfloat16), FeatureLevel.LEVEL_1_0, True,
                                          extension=True),
}


def data_type_info(data_type: TensorDataType) -> DataTypeInfo:
    return DATA_TYPES[data_type]


def data_type_for_numpy(dtype: np.dtype) -> TensorDataType | None:
    """The TensorDataType whose storage is `dtype`, or None."""
    for data_type, info in DATA_TYPES.items():
        if info.numpy_dtype == dtype:
            return data_type
    return None


def numpy_name(dtype: np.dtype) -> str:
    """How Python code names `dtype`: np.float16, or ml_dtypes.bfloat16 for the types NumPy lacks."""
    return f"np.{dtype.name}" if getattr(np, dtype.name, None) is dtype.type else f"ml_dtypes.{dtype.name}"
