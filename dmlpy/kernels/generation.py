"""The generation planner: outputs made from their own element index (a constant, an
arithmetic sequence) or from an index tensor (one-hot rows), over shaders/generate.comp.

Each invocation writes one output element, found from its row-major index over the output's
sizes and stored through the output's strides. What it stores is an expression of the IR
(dmlpy/ir), rendered by render.py into the generated header generate_body.glsl as
`uint generate_element(uint bits[OPERANDS])`; the shader fills the operands (the element's
index as FP32 bits, a wrapped integer, a one-hot hit and the values' bits).
"""

from __future__ import annotations

import numpy as np

from ..base.adapter import AdapterInfo
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType, data_type_info
from ..ir import expr as e
from ..ir import render
from .codegen import (
    KernelPlan,
    KernelStage,
    ScalarBits,
    bound_type,
    float_controls_defines,
    fp32_bits,
    is_wide,
    uint_list,
    workgroup_size_for,
)
from .interface import KernelInterface

FLOAT_TYPES = (TensorDataType.FLOAT32, TensorDataType.FLOAT16, TensorDataType.BFLOAT16)


def _common(output: BufferTensorDesc, adapter: AdapterInfo) -> dict[str, object]:
    return {
        f"DTYPE_{bound_type(output).name}": "",
        "ELEMENT_BITS": data_type_info(bound_type(output)).bits,
        "WORKGROUP_SIZE": workgroup_size_for(adapter),
        **float_controls_defines(adapter),
        "ELEMENT_COUNT": f"{output.element_count}u",
        "OUT_RANK": output.dimension_count,
        "OUT_SIZES": uint_list(output.sizes),
        "OUT_STRIDES": uint_list(output.element_strides),
    }


def _body(result: e.Expr, operands: tuple[TensorDataType, ...], output: TensorDataType) -> tuple[str, ...]:
    return (f"#define OPERANDS {len(operands)}", "uint generate_element(uint bits[OPERANDS]) {",
            *(f"    {line}" for line in render.render(result, operands, output)), "    return result;", "}")


def plan_sequence(output: BufferTensorDesc, start: float | int, delta: float | int | None,
                  adapter: AdapterInfo) -> KernelPlan:
    """Element i (row-major over the output's sizes) = start + i * delta; `delta` None: every
    element `start`. Floats: element 0 is `start` itself; every other is fl(start + fl(fl(i) *
    delta)) in FP32, each operation rounded (never an FMA), then rounded once to the output's
    type. Integers: (start + i * delta) modulo 2**bits, two's complement. 64-bit types: the
    same on pairs of 32-bit words (FLOAT64: a constant's bits, `delta` None)."""
    data_type = output.data_type
    defines = _common(output, adapter)
    if is_wide(output):
        if data_type is TensorDataType.FLOAT64:
            if delta is not None:
                raise UnsupportedError("a FLOAT64 sequence has no kernel: only a FLOAT64 constant", "data_type")
            start_bits = int(np.float64(start).view(np.uint64))
        else:
            start_bits = int(start) & (2**64 - 1)
        delta_bits = int(delta or 0) & (2**64 - 1)
        result = e.tensor(0)  # unused: the shader stores both words as they are
        scalars = tuple(ScalarBits(bits >> shift & 0xFFFFFFFF) for bits in (start_bits, delta_bits)
                        for shift in (0, 32))
        operands = (TensorDataType.UINT32,)
        defines["WIDE_SEQUENCE"] = ""
        how = "64-bit integers on pairs of 32-bit words, wrapping"
    elif data_type in FLOAT_TYPES:
        if delta is None:
            result, scalars = e.scalar(0), fp32_bits((start,))
        else:
            index = e.tensor(0)  # the element's index as FP32 bits
            result = e.where(e.positive(index), e.scalar(0) + index * e.scalar(1), e.scalar(0))
            scalars = fp32_bits((start, delta))
        operands = (TensorDataType.FLOAT32,)
        defines["FLOAT_INDEX"] = ""
        how = "the FP32 expression of render.py"
    else:  # the shader wraps the integer; the IR stores its bits as they are
        result = e.tensor(0)
        scalars = (ScalarBits(int(start) & 0xFFFFFFFF), ScalarBits(int(delta or 0) & 0xFFFFFFFF))
        operands = (data_type,)
        defines["INTEGER_SEQUENCE"] = ""
        how = "32-bit wrapping integers, stored as their low bits"
    interface = KernelInterface((), (bound_type(output),), scalar_count=len(scalars))
    interface.check(adapter)
    generated = (("kernel_interface.glsl", interface.header()),
                 ("generate_body.glsl", _body(result, operands, bound_type(output))))
    stage = KernelStage("fill", "generate.comp", defines, defines["WORKGROUP_SIZE"], generated=generated)
    return KernelPlan("generate", (stage,), output.element_count, scalar_bits=tuple(scalars), interface=interface,
                      reason=f"{output.element_count} elements, one invocation each, by {how}")


def plan_one_hot(indices: BufferTensorDesc, values: BufferTensorDesc, output: BufferTensorDesc, axis: int,
                 adapter: AdapterInfo) -> KernelPlan:
    """Output element at position p along `axis` = values' "on" element (offset `on_offset`)
    where the index at its row (indices' element with p replaced by 0) is p, counted from the
    end where it is negative (signed indices), else values' first element ("off"). The bits
    are copied, never converted; 64-bit indices and values are read as pairs of 32-bit words."""
    defines = _common(output, adapter)
    varying = [d for d, size in enumerate(values.sizes) if size > 1]
    on_offset = values.element_strides[varying[-1]] if varying else 1
    defines.update({
        "INDEX_ROWS": "", "AXIS": axis, "AXIS_SIZE": f"{output.sizes[axis]}u",
        "INDEX_STRIDES": uint_list(0 if d == axis else s for d, s in enumerate(indices.element_strides)),
        "ON_OFFSET": f"{on_offset}u",
        **({"SIGNED_INDICES": ""} if data_type_info(indices.data_type).signed_integer else {}),
        **({"WIDE_INDICES": ""} if is_wide(indices) else {}),
        **({"WIDE_VALUES": ""} if is_wide(values) else {}),
    })
    if is_wide(values):  # unused: the shader copies both words as they are
        result, operands = e.tensor(0), (TensorDataType.UINT32,)
    else:
        result = e.where(e.positive(e.tensor(0)), e.tensor(1), e.tensor(2))  # the hit, on's bits, off's bits
        operands = (TensorDataType.UINT32, values.data_type, values.data_type)
    interface = KernelInterface((bound_type(indices), bound_type(values)), (bound_type(output),))
    interface.check(adapter)
    generated = (("kernel_interface.glsl", interface.header()),
                 ("generate_body.glsl", _body(result, operands, bound_type(output))))
    stage = KernelStage("rows", "generate.comp", defines, defines["WORKGROUP_SIZE"], generated=generated)
    return KernelPlan("generate", (stage,), output.element_count, interface=interface,
                      reason=f"{output.element_count} elements, one invocation each, along axis {axis} of "
                             f"{output.sizes[axis]}")

