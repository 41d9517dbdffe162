"""The 64-bit kernel planners: element-wise work where a tensor is FLOAT64, INT64 or UINT64
(shaders/wide.comp), in 32-bit integer arithmetic alone, so that any device runs it, with or
without shaderFloat64 and shaderInt64: conversions (CAST, IDENTITY), and the integer and bit
math of every other operator on 64-bit tensors (its comparisons and selects included)."""

from __future__ import annotations

from ..base.adapter import AdapterInfo
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType, data_type_info
from ..ir import expr as e
from ..ir import render
from .codegen import (
    KernelPlan,
    KernelStage,
    bound_type,
    float_controls_defines,
    fp32_bits,
    is_wide,
    uint_list,
    workgroup_size_for,
)
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
        raise UnsupportedError(f"{data_type.name} has no 64-bit kernel", "data_type")
    return {f"{prefix}_BITS": info.bits, **form}


def _plan(inputs: list[BufferTensorDesc], output: BufferTensorDesc, defines: dict[str, object], how: str,
          adapter: AdapterInfo, body: tuple[str, ...] = (), scalars: tuple[float, ...] = ()) -> KernelPlan:
    tensors = [*inputs, output]
    bound = bound_type(output)
    defines = {
        f"DTYPE_{bound.name}": "",
        "ELEMENT_BITS": data_type_info(bound).bits,
        "WORKGROUP_SIZE": workgroup_size_for(adapter),
        **float_controls_defines(adapter),
        "ELEMENT_COUNT": f"{output.element_count}u",
        "RANK": output.dimension_count,
        "SIZES": uint_list(output.sizes),
        "STRIDES": uint_list(t.element_strides[d] for d in range(output.dimension_count) for t in tensors),
        "WIDE_TENSORS": sum(1 << k for k, t in enumerate(tensors) if is_wide(t)),
        **defines,
    }
    interface = KernelInterface(tuple(bound_type(t) for t in inputs), (bound,), scalar_count=len(scalars))
    interface.check(adapter)
    stage = KernelStage("main", "wide.comp", defines, defines["WORKGROUP_SIZE"],
                        generated=(("kernel_interface.glsl", interface.header()), ("operator_body.glsl", body)))
    return KernelPlan("wide", (stage,), output.element_count, scalar_bits=fp32_bits(scalars), interface=interface,
                      reason=f"{output.element_count} elements, one invocation each, {how} in 32-bit integer "
                             "arithmetic")


def plan_wide_conversion(source: BufferTensorDesc, target: BufferTensorDesc, adapter: AdapterInfo) -> KernelPlan:
    """Each element of `source` converted to `target`'s data type (the same sizes): floats
    rounded once to nearest even; floats to integers truncated toward zero and saturated, NaN
    0; integers to integers wrapped to the target's width; a type to itself, the bits as they are."""
    defines = {"CONVERT": "", **_side("SOURCE", source.data_type), **_side("TARGET", target.data_type),
               **({"SAME_TYPE": ""} if source.data_type == target.data_type else {})}
    return _plan([source], target, defines, f"{source.data_type.name} to {target.data_type.name}", adapter)


def plan_wide_math(inputs: list[BufferTensorDesc], output: BufferTensorDesc, adapter: AdapterInfo, result: e.Expr,
                   scalars: tuple[float, ...] = ()) -> KernelPlan:
    """output = `result`, an operator's integer or bit math over inputs of one 64-bit type
    (INT64 or UINT64 integers using all 64 bits; the bits of FLOAT64 too), rendered by
    render.WIDE_RENDER; `scalars` as plan_elementwise's, a 64-bit integer scalar in two words
    (low, high)."""
    data_type = next(t.data_type for t in (*inputs, output) if is_wide(t))  # not IF's UINT8 condition
    body = ("uvec2 wide_math(uvec2 words[INPUT_COUNT]) {", "    uvec2 result;",
            *(f"    {line}" for line in render.render_wide(result, tuple(t.data_type for t in inputs), data_type)),
            "    return result;", "}")
    defines = {"ARITHMETIC": "", **({"VALUES_SIGNED": ""} if data_type_info(data_type).signed_integer else {})}
    return _plan(inputs, output, defines, f"{data_type.name} math", adapter, body, scalars)
