"""The scan planner: running sums and products along one axis (shaders/scan.comp)."""

from __future__ import annotations

import math

from ..base.adapter import AdapterInfo
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import data_type_info
from ..ir import render
from .codegen import (
    KernelPlan,
    KernelStage,
    bound_type,
    float_controls_defines,
    is_wide,
    lies_in_blocks,
    merge_dims,
    uint_list,
    workgroup_size_for,
)
from .interface import KernelInterface, moves_vectors_in_64bit_words

# How each scan combines, FP32 (numeric.glsl's exact operations), wrapping integers and wrapping
# 64-bit integers, and what an exclusive scan writes first (+0 and 1, as DirectML's examples show).
COMBINE = {"sum": ("dml_add", "+", "dml_wide_add", "0u", "0u"),
           "product": ("dml_mul", "*", "dml_wide_mul_low", "0x3F800000u", "1u")}


def _scan_body(data_type, combine: str) -> tuple[str, ...]:
    """The running value's type and its three operations, from the stored forms of
    render.py's table: floats in FP32, rounded to the data type as each is written;
    integers wrapping in 32 bits, stored as their low bits; 64-bit integers wrapping in 64
    bits (a uvec2 of low and high words)."""
    float_op, integer_op, wide_op, float_identity, integer_identity = COMBINE[combine]
    if data_type_info(data_type).bits == 64:
        return ("#define SCAN_VALUE uvec2", f"#define SCAN_IDENTITY uvec2({integer_identity}, 0u)",
                "uvec2 scan_value(uvec2 bits) { return bits; }",
                f"uvec2 scan_combine(uvec2 a, uvec2 b) {{ return {wide_op}(a, b); }}",
                "uvec2 scan_stored(uvec2 value) { return value; }",
                "uvec2 scan_carry(uvec2 value) { return value; }", "uvec2 scan_carried(uvec2 bits) { return bits; }")
    form = render.STORED_FORMS[data_type]
    if form.from_float is not None:
        return ("#define SCAN_VALUE float", f"#define SCAN_IDENTITY uintBitsToFloat({float_identity})",
                f"float scan_value(uint bits) {{ return {form.to_float.format('bits')}; }}",
                f"float scan_combine(float a, float b) {{ return {float_op}(a, b); }}",
                f"uint scan_stored(float value) {{ return {form.from_float.format('value')}; }}",
                "uint scan_carry(float value) { return floatBitsToUint(value); }",
                "float scan_carried(uint word) { return uintBitsToFloat(word); }")
    return ("#define SCAN_VALUE uint", f"#define SCAN_IDENTITY {integer_identity}",
            "uint scan_value(uint bits) { return bits; }",
            f"uint scan_combine(uint a, uint b) {{ return a {integer_op} b; }}",
            "uint scan_stored(uint value) { return value & ELEMENT_MASK; }",
            "uint scan_carry(uint value) { return value; }", "uint scan_carried(uint word) { return word; }")


# Elements one invocation walks in one stage: lavapipe ends an invocation's loops after 65,535
# iterations in all, so a long row is walked over several stages, its running value carried
# between them in the scratch.
SCAN_STAGE_LENGTH = 4096


def plan_scan(source: BufferTensorDesc, target: BufferTensorDesc, axis: int, combine: str, reverse: bool,
              exclusive: bool, adapter: AdapterInfo) -> KernelPlan:
    """The running `combine` ("sum" or "product") of `source` along `axis`, into `target`
    (same sizes and data type): one invocation per row, walking it in order (backwards where
    `reverse`), so each result is the plain running value NumPy's cumsum gives, rounded once
    from FP32; `exclusive` writes each value before its element joins it. A row longer than
    SCAN_STAGE_LENGTH is walked in several stages, in order."""
    sizes = source.sizes
    kept = [d for d in range(len(sizes)) if d != axis]
    kept_sizes, kept_strides = merge_dims(tuple(sizes[d] for d in kept),
                                          [tuple(t.element_strides[d] for d in kept) for t in (source, target)])
    length = sizes[axis]
    stage_count = math.ceil(length / SCAN_STAGE_LENGTH)
    # Rows in whole aligned blocks of eight 16- or 32-bit elements, in both tensors: a block is
    # one or two 16-byte loads and stores (in 64-bit words where the device moves vectors by
    # component).
    wide = is_wide(target)
    blocks = not wide and data_type_info(target.data_type).bits >= 16 and all(
        lies_in_blocks(t, s, (length,), (t.element_strides[axis],)) for t, s in zip((source, target), kept_strides))
    interface = KernelInterface((bound_type(source),), (bound_type(target),), scratch=stage_count > 1,
                                vector_views=blocks, vector_words_64=blocks and moves_vectors_in_64bit_words(adapter))
    interface.check(adapter)
    workgroup_size = workgroup_size_for(adapter)
    row_count = math.prod(kept_sizes)
    common = {
        f"DTYPE_{bound_type(target).name}": "",
        "ELEMENT_BITS": data_type_info(bound_type(target)).bits,
        "WORKGROUP_SIZE": workgroup_size,
        **float_controls_defines(adapter),
        "ROW_COUNT": f"{row_count}u",
        "LENGTH": f"{length}u",
        "AXIS_STRIDES": uint_list(t.element_strides[axis] for t in (source, target)),
        "KEPT_RANK": len(kept_sizes),
        "KEPT_SIZES": uint_list(kept_sizes),
        "KEPT_STRIDES": uint_list(s[d] for d in range(len(kept_sizes)) for s in kept_strides),
        **({"REVERSE": ""} if reverse else {}),
        **({"EXCLUSIVE": ""} if exclusive else {}),
        **({"BLOCKS": ""} if blocks else {}),
        **({"WIDE_ELEMENTS": ""} if wide else {}),
        **interface.defines,
    }
    generated = (("kernel_interface.glsl", interface.header()),
                 ("scan_body.glsl", _scan_body(target.data_type, combine)))
    stages = tuple(
        KernelStage(f"scan{k}", "scan.comp", {
            **common, "WALK_FIRST": f"{k * SCAN_STAGE_LENGTH}u",
            "WALK_END": f"{min(length, (k + 1) * SCAN_STAGE_LENGTH)}u",
            **({"CARRY_IN": ""} if k > 0 else {}), **({"CARRY_OUT": ""} if k < stage_count - 1 else {})},
            workgroup_size, invocations=row_count, generated=generated)
        for k in range(stage_count))
    carry_words = 2 if wide else 1
    return KernelPlan("scan", stages, source.element_count,
                      temporary_size=4 * carry_words * row_count if stage_count > 1 else 0,
                      interface=interface,
                      reason=f"{row_count} rows of {length}, one invocation each, in {stage_count} stage(s)"
                             f"{', blocks of eight elements a load and a store' if blocks else ''}")
