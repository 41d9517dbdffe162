"""The selection planner: the K first elements of each row along one axis in a total order
on their stored bits (shaders/select.comp)."""

from __future__ import annotations

import math

from ..base.adapter import AdapterInfo
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType as T
from ..base.types import data_type_info
from .codegen import (
    KernelPlan,
    KernelStage,
    bound_type,
    is_wide,
    merge_dims,
    uint_list,
    workgroup_size_for,
)
from .interface import KernelInterface

# The bits of +infinity in each float type: a magnitude above it is a NaN.
INFINITY_BITS = {T.FLOAT32: 0x7F800000, T.FLOAT16: 0x7C00, T.BFLOAT16: 0x7F80}


# The row elements one invocation may compare in one stage: lavapipe ends an invocation's
# loops after 65,535 iterations in all, so K elements of a long row are selected over several
# stages (dispatches of one shader), the last one selected carried between them in the scratch.
SELECTION_BUDGET = 32768


def plan_selection(source: BufferTensorDesc, values: BufferTensorDesc, indices: BufferTensorDesc, axis: int,
                   smallest: bool, adapter: AdapterInfo) -> KernelPlan:
    """Write, for each row along `axis`, its `values.sizes[axis]` largest elements (or
    smallest) in order, and their indices in the row; ties by increasing index. One
    invocation per row selects one element after another, each the first in the order
    after the one before (one pass over the row per element, as many a stage as
    SELECTION_BUDGET allows)."""
    sizes = source.sizes
    length, k = sizes[axis], values.sizes[axis]
    if length > SELECTION_BUDGET:
        raise UnsupportedError(
            f"a row of {length} elements along axis {axis}: the selection kernel takes rows of at most "
            f"{SELECTION_BUDGET} elements (lavapipe ends a longer invocation's loops early)", "sizes")
    kept = [d for d in range(len(sizes)) if d != axis]
    tensors = (source, values, indices)
    kept_sizes, kept_strides = merge_dims(tuple(sizes[d] for d in kept),
                                          [tuple(t.element_strides[d] for d in kept) for t in tensors])
    per_stage = min(k, max(1, SELECTION_BUDGET // length))
    stage_count = math.ceil(k / per_stage)
    interface = KernelInterface((bound_type(source),), (bound_type(values), bound_type(indices)),
                                scratch=stage_count > 1)
    interface.check(adapter)
    info = data_type_info(source.data_type)
    wide = is_wide(source)
    if wide and source.data_type not in (T.INT64, T.UINT64):
        raise UnsupportedError(f"the selection kernel orders no {source.data_type.name} values", "data_type")
    workgroup_size = workgroup_size_for(adapter)
    row_count = math.prod(kept_sizes)
    defines = {
        f"DTYPE_{bound_type(values).name}": "",
        "ELEMENT_BITS": data_type_info(bound_type(values)).bits,
        "WORKGROUP_SIZE": workgroup_size,
        "ROW_COUNT": f"{row_count}u",
        "LENGTH": f"{length}u",
        "K": f"{k}u",
        "PER_STAGE": f"{per_stage}u",
        "AXIS_STRIDES": uint_list(t.element_strides[axis] for t in tensors),
        "KEPT_RANK": len(kept_sizes),
        "KEPT_SIZES": uint_list(kept_sizes),
        "KEPT_STRIDES": uint_list(s[d] for d in range(len(kept_sizes)) for s in kept_strides),
        "VALUE_BITS": f"{info.bits}u",
        **({"KEY_FLOAT": "", "INFINITY_BITS": f"{INFINITY_BITS[source.data_type]:#x}u"}
           if source.data_type in INFINITY_BITS else {}),
        **({"KEY_SIGNED": ""} if info.signed_integer else {}),
        **({"SMALLEST": ""} if smallest else {}),
        **({"STAGED": ""} if stage_count > 1 else {}),
        **({"WIDE_VALUES": ""} if wide else {}),
        **({"WIDE_INDICES": ""} if is_wide(indices) else {}),
    }
    generated = (("kernel_interface.glsl", interface.header()),)
    stages = tuple(KernelStage(f"select{min(j, 1)}", "select.comp",
                               {**defines, **({"FIRST_STAGE": ""} if j == 0 else {})}, workgroup_size,
                               invocations=row_count, generated=generated)
                   for j in range(stage_count))
    return KernelPlan("selection", stages, source.element_count,
                      temporary_size=4 * (4 if wide else 3) * row_count if stage_count > 1 else 0,
                      interface=interface,
                      reason=f"{row_count} rows of {length}, {k} selected by one invocation each, {per_stage} a stage")
