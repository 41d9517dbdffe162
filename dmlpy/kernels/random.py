"""The Philox planner: counter-based random bits (shaders/philox.comp), one invocation per
128-bit block of output."""

from __future__ import annotations

import math

from ..base.adapter import AdapterInfo
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType
from .codegen import KernelPlan, KernelStage, merge_dims, uint_list, workgroup_size_for
from .interface import KernelInterface

WORDS_PER_BLOCK = 4  # Philox 4x32: each counter value gives four 32-bit words


def philox_block_count(element_count: int) -> int:
    """The blocks `element_count` words take: ceil(element_count / 4), what the counter advances by."""
    return math.ceil(element_count / WORDS_PER_BLOCK)


def plan_philox(state: BufferTensorDesc, output: BufferTensorDesc, output_state: BufferTensorDesc | None,
                adapter: AdapterInfo) -> KernelPlan:
    """Philox 4x32-10 bits into `output` (UINT32, any layout) from `state`'s six words (counter
    words 0 to 3, least significant first; key words 4 and 5), block j = counter + j written to
    elements 4j to 4j + 3 in row-major order; `output_state`, where given, gets the counter
    advanced by the block count and the same key."""
    outputs = (output.data_type,) if output_state is None else (output.data_type, output_state.data_type)
    interface = KernelInterface((state.data_type,), outputs)
    interface.check(adapter)
    sizes, (strides,) = merge_dims(output.sizes, [output.element_strides])
    blocks = philox_block_count(output.element_count)
    workgroup_size = workgroup_size_for(adapter)
    state_strides = (state.element_strides[-1], (output_state or state).element_strides[-1])
    defines = {
        f"DTYPE_{TensorDataType.UINT32.name}": "",
        "ELEMENT_BITS": 32,
        "WORKGROUP_SIZE": workgroup_size,
        "ELEMENT_COUNT": f"{output.element_count}u",
        "BLOCK_COUNT": f"{blocks}u",
        "STATE_STRIDES": uint_list(state_strides),
        "OUTPUT_RANK": len(sizes),
        "OUTPUT_SIZES": uint_list(sizes),
        "OUTPUT_STRIDES": uint_list(strides),
        **({"OUTPUT_STATE": ""} if output_state is not None else {}),
    }
    stage = KernelStage("philox", "philox.comp", defines, workgroup_size, invocations=blocks,
                        generated=(("kernel_interface.glsl", interface.header()),))
    return KernelPlan("random", (stage,), output.element_count, interface=interface,
                      reason=f"{blocks} Philox 4x32-10 block(s) of 4 words, one invocation each, for "
                             f"{output.element_count} output elements")
