"""From a validated desc to a specialised shader: the layout path, defines and dispatch grid.

Shapes and strides are known when an operator is compiled (DirectML's model), so they
become `#define`s: the driver sees constant sizes and strength-reduces the index math.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import UnsupportedError
from .tensor_desc import BufferTensorDesc
from .types import data_type_info
from .vulkan_info import AdapterInfo

PREFERRED_WORKGROUP_SIZE = 256


@dataclass(frozen=True)
class KernelPlan:
    shader: str
    path: str  # "packed", "gather" or "strided": which specialisation the desc took
    defines: dict[str, object]
    workgroups: tuple[int, int, int]


def merge_dims(sizes: tuple[int, ...], strides: list[tuple[int, ...]]):
    """Drop size-1 dims and merge neighbours that are contiguous in every tensor.

    Returns (sizes, per-tensor strides) describing the same element mapping with as few
    dims as possible; at least one dim remains.
    """
    kept = [(size, [s[d] for s in strides]) for d, size in enumerate(sizes) if size > 1]
    merged: list[tuple[int, list[int]]] = []
    for size, dim_strides in kept:
        if merged:
            outer_size, outer_strides = merged[-1]
            if all(o == i * size for o, i in zip(outer_strides, dim_strides)):
                merged[-1] = (outer_size * size, dim_strides)
                continue
        merged.append((size, dim_strides))
    if not merged:
        merged = [(1, [0] * len(strides))]
    return tuple(m[0] for m in merged), [tuple(m[1][t] for m in merged) for t in range(len(strides))]


def _is_dense(sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """True when the elements fill [0, count) with no gap or repeat, in some dim order."""
    expected = 1
    for stride, size in sorted(zip(strides, sizes)):
        if size > 1 and stride != expected:
            return False
        expected *= size
    return True


def dispatch_grid(item_count: int, adapter: AdapterInfo) -> tuple[int, tuple[int, int, int], int]:
    """Workgroup size, 2-D grid within the device's limits, and the number of real groups."""
    workgroup_size = min(PREFERRED_WORKGROUP_SIZE, adapter.max_compute_work_group_invocations,
                         adapter.max_compute_work_group_size[0])
    group_count = max(1, math.ceil(item_count / workgroup_size))
    groups_x = min(group_count, adapter.max_compute_work_group_count[0])
    groups_y = math.ceil(group_count / groups_x)
    if groups_y > adapter.max_compute_work_group_count[1]:
        raise UnsupportedError(
            f"{item_count} work items need {group_count} workgroups of {workgroup_size}: more than "
            f"maxComputeWorkGroupCount {adapter.max_compute_work_group_count[:2]} allows")
    return workgroup_size, (groups_x, groups_y, 1), group_count


def plan_elementwise(shader: str, inputs: list[BufferTensorDesc], output: BufferTensorDesc,
                     adapter: AdapterInfo) -> KernelPlan:
    """Plan `output = op(inputs...)` for tensors with equal sizes and data type."""
    info = data_type_info(output.data_type)
    elements_per_word = 32 // info.bits
    tensors = [*inputs, output]
    sizes, strides = merge_dims(output.sizes, [t.element_strides for t in tensors])
    element_count = output.element_count
    output_sizes, (output_strides,) = merge_dims(output.sizes, [output.element_strides])
    output_row_major = len(output_sizes) == 1 and (output_sizes[0] == 1 or output_strides == (1,))
    if all(s == strides[0] for s in strides) and _is_dense(sizes, strides[0]):
        path = "packed"
    elif elements_per_word > 1 and output_row_major:
        path = "gather"
    else:
        path = "strided"
    item_count = element_count if path == "strided" else math.ceil(element_count / elements_per_word)
    workgroup_size, workgroups, group_count = dispatch_grid(item_count, adapter)
    defines: dict[str, object] = {
        f"DTYPE_{output.data_type.name}": "",
        "ELEMENT_BITS": info.bits,
        f"PATH_{path.upper()}": "",
        "WORKGROUP_SIZE": workgroup_size,
        "GROUP_COUNT": f"{group_count}u",
        "ITEM_COUNT": f"{item_count}u",
        "ELEMENT_COUNT": f"{element_count}u",
    }
    if path != "packed":
        defines["RANK"] = len(sizes)
        defines["SIZES"] = ", ".join(f"{s}u" for s in sizes)
        defines["STRIDES"] = ", ".join(
            "uvec3(" + ", ".join(f"{s[d]}u" for s in strides) + ")" for d in range(len(sizes)))
    return KernelPlan(shader, path, defines, workgroups)


def compile_desc(desc, adapter: AdapterInfo):
    """The kernel plan for a validated desc on `adapter`, and its compiled shader."""
    from .shader_compiler import compile_glsl, shader_source

    plan = desc.schema.kernel(desc, adapter)
    return plan, compile_glsl(shader_source(plan.shader, plan.defines))


def plan_copy(word_count: int, adapter: AdapterInfo) -> KernelPlan:
    """A word-for-word copy with the operators' dispatch shape (the benchmark's yardstick)."""
    workgroup_size, workgroups, group_count = dispatch_grid(word_count, adapter)
    defines = {"WORKGROUP_SIZE": workgroup_size, "GROUP_COUNT": f"{group_count}u", "ITEM_COUNT": f"{word_count}u"}
    return KernelPlan("copy.comp", "copy", defines, workgroups)
