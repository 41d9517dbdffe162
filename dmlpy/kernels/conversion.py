"""The 64-bit conversion planner: a conversion whose input or output is FLOAT64, INT64 or
UINT64 (shaders/convert_wide.comp), in 32-bit integer arithmetic alone, so that any device
runs it, with or without shaderFloat64 and shaderInt64."""

from __future__ import annotations

from ..base.adapter import AdapterInfo
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType, data_type_info
from .codegen import KernelPlan, KernelStage, bound_type, float_controls_defines, uint_list, workgroup_size_for
from .interface import KernelInterface

# Each float type's exponent and mantissa widths (IEEE 754's binary16, binary32 and binary64,
# and bfloat16's truncated binary32).
FLOAT_FORMATS = {TensorDataType.FLOAT16: (5, 10), TensorDataType.BFLOAT16: (8, 7), TensorDataType.FLOAT32: (8, 23),
                 TensorDataType.FLOAT64: (11, 52)}


def _side(prefix: str, data_type: TensorDataType) -> dict[str, object]:
    info = data_type_info(data_type)
    if data_type in FLOAT_FORMATS:
        exponent, mantissa = FLOAT_FORMATS[data_type]
        form = {f"{prefix}_FLOAT": "", f"{prefix}_EXPONENT_BITS": exponent, f"{prefix}_MANTISSA_BITS": mantissa}
    elif info.numpy_dtype is not None:
        form = {f"{prefix}_SIGNED": ""} if info.signed_integer else {}
    else:
        raise UnsupportedError(f"{data_type.name} has no conversion kernel", "data_type")
    return {f"{prefix}_BITS": info.bits, **form}


def plan_wide_conversion(source: BufferTensorDesc, target: BufferTensorDesc, adapter: AdapterInfo) -> KernelPlan:
    """Each element of `source` converted to `target`'s data type (the same sizes): floats
    rounded once to nearest even; floats to integers truncated toward zero and saturated, NaN
    0; integers to integers wrapped to the target's width; a type to itself, the bits as they are."""
    bound = bound_type(target)
    defines = {
        f"DTYPE_{bound.name}": "",
        "ELEMENT_BITS": data_type_info(bound).bits,
        "WORKGROUP_SIZE": workgroup_size_for(adapter),
        **float_controls_defines(adapter),
        "ELEMENT_COUNT": f"{target.element_count}u",
        "RANK": target.dimension_count,
        "SIZES": uint_list(target.sizes),
        "IN_STRIDES": uint_list(source.element_strides),
        "OUT_STRIDES": uint_list(target.element_strides),
        **_side("SOURCE", source.data_type),
        **_side("TARGET", target.data_type),
        **({"SAME_TYPE": ""} if source.data_type == target.data_type else {}),
    }
    interface = KernelInterface((bound_type(source),), (bound,))
    interface.check(adapter)
    stage = KernelStage("convert", "convert_wide.comp", defines, defines["WORKGROUP_SIZE"],
                        generated=(("kernel_interface.glsl", interface.header()),))
    return KernelPlan("wide", (stage,), target.element_count, interface=interface,
                      reason=f"{target.element_count} elements, one invocation each, {source.data_type.name} to "
                             f"{target.data_type.name} in 32-bit integer arithmetic")
