"""The point-wise planner: several outputs of one shape, each an expression (dmlpy/ir) of the
inputs' elements at its index, computed together in one pass over shaders/pointwise.comp.

What the element-wise planner (codegen.plan_elementwise) does for one output, this does for
an update that writes several tensors from the same operands (an optimizer's parameters and
moments): each invocation loads every input's element once, evaluates every output's
expression in one SSA body, then stores each. An input may broadcast (zero strides: a scalar
read by every element). Every load comes before the first store, so an output may be bound
in place over an input of the same layout.

Two paths: "packed" where every tensor is dense in one row-major layout (a broadcast input
excepted: one element, read once an invocation), of one element width, starting on 16 bytes
and a whole number of 16-byte vectors long: each invocation maps PACKED_VECTORS_PER_ITEM
vectors of every tensor (lavapipe's per-element loads cost several times a vector's);
"strided" otherwise: RUN_LENGTH elements an invocation, each found through the strides.
"""

from __future__ import annotations

from ..base.adapter import AdapterInfo
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import data_type_info
from ..ir import expr as e
from ..ir import render
from .codegen import (
    PACKED_VECTORS_PER_ITEM,
    KernelPlan,
    KernelStage,
    float_controls_defines,
    fp32_bits,
    merge_dims,
    starts_on,
    strided_run_length,
    uint_at,
    uint_list,
    workgroup_size_for,
)
from .interface import KernelInterface, moves_vectors_in_64bit_words


def plan_pointwise(inputs: list[BufferTensorDesc], outputs: list[BufferTensorDesc], results: list[e.Expr],
                   adapter: AdapterInfo, scalars: tuple[float, ...] = ()) -> KernelPlan:
    """Plan `outputs[o] = results[o](inputs...)` element by element: every output has the same
    sizes and data type; each input has those sizes (its strides may be 0 to broadcast).
    `scalars` are the expressions' FP32 scalars (e.scalar(k)), pushed at run time."""
    if len(outputs) != len(results) or not outputs:
        raise ValueError(f"{len(outputs)} outputs for {len(results)} expressions")
    data_type = outputs[0].data_type
    if any(t.data_type != data_type or t.sizes != outputs[0].sizes for t in outputs):
        raise UnsupportedError("the point-wise kernel writes outputs of one data type and one shape", "data_type")
    tensors = [*inputs, *outputs]
    sizes, strides = merge_dims(outputs[0].sizes, [t.element_strides for t in tensors])
    bits = data_type_info(data_type).bits
    vector_elements = 4 * 32 // bits
    uniform = [all(stride == 0 for stride in s) for s in strides[:len(inputs)]]
    packed = len(sizes) == 1 and all(s == (1,) for s, once in zip(strides, uniform + [False] * len(outputs))
                                     if not once) \
        and all(data_type_info(t.data_type).bits == bits for t, once in zip(inputs, uniform) if not once) \
        and all(starts_on(t, 16) for t in tensors) and outputs[0].element_count % vector_elements == 0
    workgroup_size = workgroup_size_for(adapter)
    run_length = PACKED_VECTORS_PER_ITEM * vector_elements if packed else strided_run_length(adapter)
    input_types = tuple(t.data_type for t in inputs)
    interface = KernelInterface(input_types, tuple(t.data_type for t in outputs), scalar_count=len(scalars),
                                vector_views=packed, vector_words_64=packed and moves_vectors_in_64bit_words(adapter))
    interface.check(adapter)
    targets = [(f"results[{o}]", result, e.STORED) for o, result in enumerate(results)]
    body = ("void pointwise_outputs(uint bits[INPUT_COUNT], out uint results[OUTPUT_COUNT]) {",
            *(f"    {line}" for line in render.render_assignments(targets, input_types, data_type)), "}")
    defines = {
        f"DTYPE_{data_type.name}": "",
        "ELEMENT_BITS": bits,
        "WORKGROUP_SIZE": workgroup_size,
        **float_controls_defines(adapter),
        **render.transcendental_defines(*results),
        **interface.defines,
    }
    if packed:
        defines.update({"PACKED": "", "VECTORS_PER_ITEM": f"{PACKED_VECTORS_PER_ITEM}u",
                        "INPUT_UNIFORM(t)": uint_at("t", map(int, uniform))})
        reason = (f"every tensor dense in one layout: {PACKED_VECTORS_PER_ITEM} 16-byte vectors of each an "
                  "invocation" + (", the broadcast input read once" if any(uniform) else ""))
    else:
        defines.update({"RUN_LENGTH": f"{run_length}u", "RANK": len(sizes), "SIZES": uint_list(sizes),
                        "STRIDES": uint_list(s[d] for d in range(len(sizes)) for s in strides)})
        reason = f"{run_length} element(s) an invocation, each through the strides"
    generated = (("kernel_interface.glsl", interface.header()), ("pointwise_body.glsl", body))
    stage = KernelStage("main", "pointwise.comp", defines, workgroup_size, run_length, generated=generated)
    return KernelPlan("pointwise", (stage,), outputs[0].element_count, scalar_bits=fp32_bits(scalars),
                      interface=interface,
                      reason=f"{len(outputs)} outputs from {len(inputs)} inputs; {reason}; every input loaded before "
                             "any output is stored")
