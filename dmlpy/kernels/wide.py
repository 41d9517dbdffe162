"""The 64-bit kernel planners: element-wise work where a tensor is FLOAT64, INT64 or UINT64
(shaders/wide.comp), in 32-bit integer arithmetic alone, so that any device runs it, with or
without shaderFloat64 and shaderInt64: conversions (CAST, IDENTITY), the integer and bit
math of every other operator on 64-bit tensors (its comparisons and selects included), and
reductions along rows of 64-bit integers (sums, products, extremes and their indices)."""

from __future__ import annotations

import math

from ..base.adapter import AdapterInfo
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc, packed_strides
from ..base.types import TensorDataType, data_type_info
from ..ir import expr as e
from ..ir import render
from .codegen import (
    PACKED_VECTORS_PER_ITEM,
    KernelPlan,
    KernelStage,
    bound_type,
    float_controls_defines,
    fp32_bits,
    is_wide,
    packed_units_interleaved,
    plan_elementwise,
    starts_on,
    uint_list,
    workgroup_size_for,
)
from .interface import KernelInterface, moves_vectors_in_64bit_words

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
    # Every tensor packed row-major: element i of each at its base + i, so the dispatch can be
    # split into windows at buffer segment boundaries (a 64-bit tensor past 128 MiB on lavapipe).
    packed = all(t.element_strides == packed_strides(output.sizes) for t in tensors)
    # Every tensor of 64 or 32 bits as well, from 16 bytes: whole 16-byte vectors (two or four
    # elements), each moved at once, where an element's words were loads of their own.
    vectors = packed and all(data_type_info(t.data_type).bits in (32, 64) and starts_on(t, 16) for t in tensors)
    workgroup_size = workgroup_size_for(adapter)
    defines = {
        f"DTYPE_{bound.name}": "",
        "ELEMENT_BITS": data_type_info(bound).bits,
        "WORKGROUP_SIZE": workgroup_size,
        **float_controls_defines(adapter),
        "ELEMENT_COUNT": f"{output.element_count}u",
        "RANK": output.dimension_count,
        "SIZES": uint_list(output.sizes),
        "STRIDES": uint_list(t.element_strides[d] for d in range(output.dimension_count) for t in tensors),
        "WIDE_TENSORS": sum(1 << k for k, t in enumerate(tensors) if is_wide(t)),
        **({"PACKED": ""} if packed else {}),
        **defines,
    }
    interface = KernelInterface(tuple(bound_type(t) for t in inputs), (bound,), scalar_count=len(scalars),
                                vector_views=vectors,
                                vector_words_64=vectors and moves_vectors_in_64bit_words(adapter))
    interface.check(adapter)
    defines.update(interface.defines)
    generated = (("kernel_interface.glsl", interface.header()), ("operator_body.glsl", body))
    windows = "; every tensor packed: split into windows past a buffer segment" if packed else ""
    if not vectors:
        stages = (KernelStage("main", "wide.comp", defines, workgroup_size, generated=generated),)
        return KernelPlan("wide", stages, output.element_count, scalar_bits=fp32_bits(scalars), interface=interface,
                          reason=f"{output.element_count} elements, one invocation each, {how} in 32-bit integer "
                                 f"arithmetic{windows}", windowable=packed)
    # A CPU device streams an invocation's consecutive vectors best; a GPU, a vector or two a
    # lane (coalesced). An item is whole vectors of every tensor: four elements where one is
    # 32-bit, and every window starts on them (a cut between 64-bit tensors falls on two).
    narrow = not all(is_wide(t) for t in tensors)
    item = 2 * PACKED_VECTORS_PER_ITEM if not packed_units_interleaved(adapter) else 4 if narrow else 2
    defines["ITEM_ELEMENTS"] = f"{item}u"
    stages = (KernelStage("main", "wide.comp", {**defines, "PACKED_VECTORS": ""}, workgroup_size, item,
                          generated=generated, part="whole", chunk=item),
              KernelStage("tail", "wide.comp", {**defines, "PACKED_TAIL": ""}, workgroup_size, 1, generated=generated,
                          part="tail", chunk=item))
    return KernelPlan("wide", stages, output.element_count, scalar_bits=fp32_bits(scalars), interface=interface,
                      reason=f"{output.element_count} elements, {item} an invocation in whole 16-byte vectors of each "
                             f"tensor{', each moved as two 64-bit words' if interface.vector_words_64 else ''} (the "
                             f"last {output.element_count % item} one an invocation), {how} in 32-bit integer "
                             f"arithmetic{windows}", windowable=True, window_alignment=4 if narrow else 2)


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
    return _plan(inputs, output, _arithmetic_defines(data_type), f"{data_type.name} math", adapter,
                 _math_body(result, inputs, data_type), scalars)


def plan_elementwise_any_width(inputs: list[BufferTensorDesc], output: BufferTensorDesc, adapter: AdapterInfo,
                               result: e.Expr, scalars: tuple[float, ...] = ()) -> KernelPlan:
    """plan_wide_math where a tensor is 64-bit (an operator's or a fused chain's math), else
    plan_elementwise."""
    planner = plan_wide_math if any(is_wide(t) for t in (*inputs, output)) else plan_elementwise
    return planner(inputs, output, adapter, result, scalars)


def check_wide_math(result: e.Expr, inputs: list[BufferTensorDesc], output: BufferTensorDesc) -> None:
    """Raises UnsupportedError where plan_wide_math cannot compute `result` (a primitive with
    no 64-bit form): what a front end checks before it defers the operator."""
    data_type = next(t.data_type for t in (*inputs, output) if is_wide(t))
    _math_body(result, inputs, data_type)


def _arithmetic_defines(data_type: TensorDataType) -> dict[str, object]:
    return {"ARITHMETIC": "", **({"VALUES_SIGNED": ""} if data_type_info(data_type).signed_integer else {})}


def _math_body(result: e.Expr, inputs: list[BufferTensorDesc], data_type: TensorDataType) -> tuple[str, ...]:
    """wide_math(words): `result` over the inputs' words, rendered by render.WIDE_RENDER."""
    return ("uvec2 wide_math(uvec2 words[INPUT_COUNT]) {", "    uvec2 result;",
            *(f"    {line}" for line in render.render_wide(result, tuple(t.data_type for t in inputs), data_type)),
            "    return result;", "}")


# How each reduce primitive folds a row in ROWS (shaders/wide.comp), and whether the output is
# the extreme's index.
WIDE_FOLDS = {"reduce_wrapping_sum": ("COMBINE_SUM", False), "reduce_wrapping_product": ("COMBINE_PRODUCT", False),
              "reduce_integer_max": ("COMBINE_LARGEST", False), "reduce_integer_min": ("COMBINE_SMALLEST", False),
              "index_of_max": ("COMBINE_LARGEST", True), "index_of_min": ("COMBINE_SMALLEST", True)}


def plan_wide_reduction(inputs: list[BufferTensorDesc], output: BufferTensorDesc, value: e.Expr,
                        kept: tuple[tuple[int, ...], list[tuple[int, ...]]],
                        reduced: tuple[tuple[int, ...], list[tuple[int, ...]]], chunk: int,
                        adapter: AdapterInfo, scalars: tuple[float, ...] = ()) -> KernelPlan:
    """One reduction a row of integers of one 64-bit type (shaders/wide.comp ROWS): `value`, a
    reduce node over the inputs, stored as it is at each row's place in `output`. `kept` and
    `reduced` are the (sizes, per-tensor strides) of the row and element dims (inputs, then the
    output: 0 along the reduced dims), `chunk` the elements a partial folds, `scalars` the
    term's (a fused prologue's), as plan_wide_math's. Wrapping sums and
    products and exact extremes give the same result in any order of combination."""
    data_type = next(t.data_type for t in inputs if is_wide(t))
    if value.op not in WIDE_FOLDS or data_type not in (TensorDataType.INT64, TensorDataType.UINT64):
        raise UnsupportedError(f"the 64-bit reduction kernel folds rows of INT64 or UINT64 integers, one sum, "
                               f"product, extreme or extreme's index a row, not {data_type.name} ({value.op})",
                               "data_type")
    combine, index = WIDE_FOLDS[value.op]
    (kept_sizes, kept_strides), (reduced_sizes, reduced_strides) = kept, reduced
    row_count, reduced_count = math.prod(kept_sizes), math.prod(reduced_sizes)
    chunk_count = math.ceil(reduced_count / chunk)
    tensors = [*inputs, output]
    interface = KernelInterface(tuple(bound_type(t) for t in inputs), (bound_type(output),), scratch=chunk_count > 1,
                                scalar_count=len(scalars))
    interface.check(adapter)
    workgroup_size = workgroup_size_for(adapter)
    defines = {
        f"DTYPE_{bound_type(output).name}": "",
        "ELEMENT_BITS": data_type_info(bound_type(output)).bits,
        "WORKGROUP_SIZE": workgroup_size,
        **float_controls_defines(adapter),
        **_arithmetic_defines(data_type),
        "ROWS": "", combine: "",
        **({"WRITE_INDEX": ""} if index else {}),
        **({"TIES_LAST": ""} if value.value == "last" else {}),
        "WIDE_TENSORS": sum(1 << k for k, t in enumerate(tensors) if is_wide(t)),
        "ROW_COUNT": f"{row_count}u", "REDUCED_COUNT": f"{reduced_count}u",
        "CHUNK": f"{chunk}u", "CHUNK_COUNT": f"{chunk_count}u",
        "KEPT_RANK": len(kept_sizes), "KEPT_SIZES": uint_list(kept_sizes),
        "KEPT_STRIDES": uint_list(s[d] for d in range(len(kept_sizes)) for s in kept_strides),
        "REDUCED_RANK": len(reduced_sizes), "REDUCED_SIZES": uint_list(reduced_sizes),
        "REDUCED_STRIDES": uint_list(s[d] for d in range(len(reduced_sizes)) for s in reduced_strides),
    }
    generated = (("kernel_interface.glsl", interface.header()),
                 ("operator_body.glsl", _math_body(value.args[0], inputs, data_type)))
    partial = KernelStage("partial", "wide.comp", {**defines, "STAGE_PARTIAL": "",
                                                   **({"WRITES_PARTIALS": ""} if chunk_count > 1 else {})},
                          workgroup_size, invocations=row_count * chunk_count, generated=generated)
    total = KernelStage("total", "wide.comp", {**defines, "STAGE_TOTAL": ""}, workgroup_size,
                        invocations=row_count, generated=generated)
    stages = (partial, total) if chunk_count > 1 else (partial,)
    return KernelPlan("reduction", stages, inputs[0].element_count,
                      temporary_size=4 * 3 * row_count * chunk_count if chunk_count > 1 else 0, interface=interface,
                      scalar_bits=fp32_bits(scalars),
                      reason=f"{row_count} rows of {reduced_count} {data_type.name} elements, {chunk_count} chunk(s) "
                             f"of at most {chunk} a row, in 32-bit integer arithmetic: {len(stages)} stage(s)")
