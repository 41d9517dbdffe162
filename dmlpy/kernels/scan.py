"""The scan planner: running sums and products along one axis (shaders/scan.comp)."""

from __future__ import annotations

import math

from ..base.adapter import AdapterInfo
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import data_type_info
from ..ir import render
from .codegen import KernelPlan, KernelStage, float_controls_defines, merge_dims, uint_list, workgroup_size_for
from .interface import KernelInterface

# How each scan combines, FP32 (numeric.glsl's exact operations) and wrapping integers, and
# what an exclusive scan writes first (+0 and 1, as DirectML's examples show).
COMBINE = {"sum": ("dml_add", "+", "0u", "0u"), "product": ("dml_mul", "*", "0x3F800000u", "1u")}


def _scan_body(data_type, combine: str) -> tuple[str, ...]:
    """The running value's type and its three operations, from the stored forms of
    render.py's table: floats in FP32, rounded to the data type as each is written;
    integers wrapping in 32 bits, stored as their low bits."""
    float_op, integer_op, float_identity, integer_identity = COMBINE[combine]
    form = render.STORED_FORMS[data_type]
    if form.from_float is not None:
        return ("#define SCAN_VALUE float", f"#define SCAN_IDENTITY uintBitsToFloat({float_identity})",
                f"float scan_value(uint bits) {{ return {form.to_float.format('bits')}; }}",
                f"float scan_combine(float a, float b) {{ return {float_op}(a, b); }}",
                f"uint scan_stored(float value) {{ return {form.from_float.format('value')}; }}")
    return ("#define SCAN_VALUE uint", f"#define SCAN_IDENTITY {integer_identity}",
            "uint scan_value(uint bits) { return bits; }",
            f"uint scan_combine(uint a, uint b) {{ return a {integer_op} b; }}",
            "uint scan_stored(uint value) { return value & ELEMENT_MASK; }")


def plan_scan(source: BufferTensorDesc, target: BufferTensorDesc, axis: int, combine: str, reverse: bool,
              exclusive: bool, adapter: AdapterInfo) -> KernelPlan:
    """The running `combine` ("sum" or "product") of `source` along `axis`, into `target`
    (same sizes and data type): one invocation per row, walking it in order (backwards where
    `reverse`), so each result is the plain running value NumPy's cumsum gives, rounded once
    from FP32; `exclusive` writes each value before its element joins it."""
    sizes = source.sizes
    kept = [d for d in range(len(sizes)) if d != axis]
    kept_sizes, kept_strides = merge_dims(tuple(sizes[d] for d in kept),
                                          [tuple(t.element_strides[d] for d in kept) for t in (source, target)])
    interface = KernelInterface((source.data_type,), (target.data_type,))
    interface.check(adapter)
    workgroup_size = workgroup_size_for(adapter)
    row_count = math.prod(kept_sizes)
    defines = {
        f"DTYPE_{target.data_type.name}": "",
        "ELEMENT_BITS": data_type_info(target.data_type).bits,
        "WORKGROUP_SIZE": workgroup_size,
        **float_controls_defines(adapter),
        "ROW_COUNT": f"{row_count}u",
        "LENGTH": f"{sizes[axis]}u",
        "AXIS_STRIDES": uint_list(t.element_strides[axis] for t in (source, target)),
        "KEPT_RANK": len(kept_sizes),
        "KEPT_SIZES": uint_list(kept_sizes),
        "KEPT_STRIDES": uint_list(s[d] for d in range(len(kept_sizes)) for s in kept_strides),
        **({"REVERSE": ""} if reverse else {}),
        **({"EXCLUSIVE": ""} if exclusive else {}),
    }
    stage = KernelStage("scan", "scan.comp", defines, workgroup_size, invocations=row_count,
                        generated=(("kernel_interface.glsl", interface.header()),
                                   ("scan_body.glsl", _scan_body(target.data_type, combine))))
    return KernelPlan("scan", (stage,), source.element_count, interface=interface,
                      reason=f"{row_count} rows of {sizes[axis]}, one invocation each")
