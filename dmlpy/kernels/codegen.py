"""From a validated desc to a specialised shader: the layout path, defines and dispatch grid.

Shapes and strides are known when an operator is compiled (DirectML's model), so they
become `#define`s: the driver sees constant sizes and strength-reduces the index math.
Element counts and binding offsets are push constants, so one compiled shader serves every
window of a tensor that is split across bindings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..base.adapter import AdapterInfo, AdapterType
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType, data_type_info
from ..ir import expr as e
from ..ir import render
from .interface import MAX_ELEMENTWISE_INPUTS, KernelInterface, moves_vectors_in_64bit_words

PREFERRED_WORKGROUP_SIZE = 256


def strided_run_length(adapter: AdapterInfo) -> int:
    """Consecutive elements one invocation maps on the strided and gather paths.

    A GPU wants neighbouring invocations on neighbouring elements (coalesced access); a CPU
    device (lavapipe) runs invocations as SIMD lanes of a loop, where the per-invocation
    cost dominates: on lavapipe runs of 16 are 3-8x faster than runs of 1 (tools/bench.py).
    """
    return 16 if adapter.adapter_type == AdapterType.CPU else 1


# Units (16-byte vectors, or words) one invocation of the packed path maps. One vector is too
# little work to hide a load's latency; four reach the copy limit on lavapipe and on GPUs.
PACKED_VECTORS_PER_ITEM = 4
# Units a period apart need whole chunks of PACKED_VECTORS_PER_ITEM periods; the rest is the
# tail's, one word an invocation, so they are planned only where the tail is at most a quarter.
PERIOD_CHUNKS_AT_LEAST = 4
# On a CPU device a mixed item beside a one-value input covers this many vectors of the
# narrowest tensor: the value is loaded once an item, lane by lane, and a load per vector
# cost lavapipe 8% of a FP32 comparison-and-select chain.
MIXED_VECTORS_BESIDE_SCALARS = 4


def packed_units_interleaved(adapter: AdapterInfo) -> bool:
    """How an invocation's units lie on the packed path: a workgroup apart on a GPU, so that
    neighbouring invocations touch neighbouring vectors (coalesced); consecutive on a CPU
    device, where an invocation is a SIMD lane and a contiguous run streams best (a lane
    per vector there strides every load across lanes)."""
    return adapter.adapter_type != AdapterType.CPU


def float_controls_defines(adapter: AdapterInfo) -> dict[str, object]:
    """How a kernel's FP32 arithmetic meets subnormals on `adapter` (shaders/numeric.glsl,
    shaders/float_controls.glsl): the DenormPreserve execution mode where the device offers
    it; the hardware's arithmetic where the device keeps subnormals without it; else dmlpy's
    exact arithmetic, which hands the hardware no subnormal (and, planned under a profile of
    a flushing GPU, flushes the hardware's operands and results as that GPU does)."""
    defines: dict[str, object] = {}
    if adapter.denorm_preserve_float32:
        defines["DENORM_PRESERVE"] = ""
    elif adapter.denormals != "preserve":
        defines["DENORMALS_EXACT"] = ""
        if adapter.profile is not None and adapter.denormals == "flush":
            defines["EMULATE_FLUSH"] = ""
    if adapter.signed_zero_inf_nan_preserve_float32:
        defines["SIGNED_ZERO_INF_NAN_PRESERVE"] = ""
    return defines


@dataclass(frozen=True)
class KernelStage:
    """One compute shader of a plan, dispatched after the stages before it have finished."""

    name: str
    shader: str
    defines: dict[str, object]
    workgroup_size: int
    elements_per_item: int = 1  # elements one invocation maps
    invocations: int | None = None  # a fixed grid; None: one invocation per item of the window
    generated: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (header name, its lines), rendered for the desc
    # Which elements of a window it maps: "all"; "whole" chunks of `chunk` elements only; or
    # the "tail" past the last whole chunk, which runs beside the "whole" stage before it
    # (disjoint writes: no barrier between them).
    part: str = "all"
    chunk: int = 0

    def source(self) -> str:
        """The self-contained GLSL of this stage."""
        from .glsl import shader_source

        return shader_source(self.shader, self.defines, dict(self.generated))

    @property
    def independent(self) -> bool:
        """Whether it may run beside the stage before it (no barrier between them)."""
        return self.part == "tail"

    def items(self, element_count: int) -> int:
        """Invocations needed for a window of element_count elements."""
        if self.invocations is not None:
            return self.invocations
        if self.part == "whole":
            return element_count // self.chunk * (self.chunk // self.elements_per_item)
        if self.part == "tail":
            return math.ceil(element_count % self.chunk / self.elements_per_item)
        return math.ceil(element_count / self.elements_per_item)

    def workgroups(self, adapter: AdapterInfo, element_count: int) -> tuple[int, int, int] | None:
        """The grid for a window of element_count elements; None where a "whole" or "tail"
        stage has nothing to do in it (the dispatch is left out)."""
        items = self.items(element_count)
        if items == 0 and self.part != "all":
            return None
        return dispatch_grid(items, self.workgroup_size, adapter)


@dataclass(frozen=True)
class KernelPlan:
    # which specialisation the desc took: "packed", "broadcast", "mixed", "tiled", "gather", "strided" (element-wise),
    # "reduction", "scan", "selection"
    path: str
    stages: tuple[KernelStage, ...]
    element_count: int
    temporary_size: int = 0  # scratch bytes, bound as the temporary resource
    scalar_bits: tuple[int, ...] = ()  # FP32 scalars, pushed after the bases and count (push_constants)
    interface: KernelInterface | None = None  # None: copy.comp, whose caller pushes its word count
    reason: str = ""  # why this path and dispatch shape (tools/dump_shaders.py prints it)
    # Whether the dispatch may be split into windows of elements (windows.py): each stage
    # covers the elements its push constants name, element i of every tensor at base + i.
    windowable: bool = False
    # Where each window must start, in elements (every tensor's stage reads whole vectors from
    # there); a window shorter than this may start anywhere (its stages run it element by element).
    window_alignment: int = 1

    def workgroups(self, adapter: AdapterInfo) -> list[tuple[int, int, int] | None]:
        """The grid of each stage over the whole tensor (None: the stage has nothing to do)."""
        return [stage.workgroups(adapter, self.element_count) for stage in self.stages]

    def push_constants(self, base_elements: tuple[int, ...], element_count: int) -> np.ndarray:
        """The Params block of the plan's shaders, in the order its interface lays out."""
        return self.interface.push_constants(base_elements, element_count, self.scalar_bits)


class ScalarBits(int):
    """A scalar pushed as these 32 bits as they are (an integer's, e.g. CLIP1's INT32 Min), not
    as an FP32 number."""


def fp32_bits(scalars: tuple[float, ...]) -> tuple[int, ...]:
    """Each scalar's bits as an FP32 number (push constants hold bits), a ScalarBits' as they are."""
    return tuple(int(s) if isinstance(s, ScalarBits) else int(np.float32(s).view(np.uint32)) for s in scalars)


def workgroup_size_for(adapter: AdapterInfo) -> int:
    """The largest power of two up to 256 the device allows (reductions halve it evenly)."""
    limit = min(PREFERRED_WORKGROUP_SIZE, adapter.max_compute_work_group_invocations,
                adapter.max_compute_work_group_size[0])
    return 1 << (limit.bit_length() - 1)


def dispatch_grid(item_count: int, workgroup_size: int, adapter: AdapterInfo) -> tuple[int, int, int]:
    """A 2-D grid of at least item_count invocations within maxComputeWorkGroupCount."""
    group_count = max(1, math.ceil(item_count / workgroup_size))
    groups_x = min(group_count, adapter.max_compute_work_group_count[0])
    groups_y = math.ceil(group_count / groups_x)
    if groups_y > adapter.max_compute_work_group_count[1]:
        raise UnsupportedError(
            f"{item_count} work items need {group_count} workgroups of {workgroup_size}: more than "
            f"maxComputeWorkGroupCount {adapter.max_compute_work_group_count[:2]} allows")
    return groups_x, groups_y, 1


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


def is_dense(sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """True when the elements fill [0, count) with no gap or repeat, in some dim order."""
    expected = 1
    for stride, size in sorted(zip(strides, sizes)):
        if size > 1 and stride != expected:
            return False
        expected *= size
    return True


def starts_on(tensor: BufferTensorDesc, boundary: int) -> bool:
    """Whether every binding of this desc starts on a multiple of `boundary` bytes (bindings
    start on multiples of the guaranteed alignment, or of 16 when it is 0)."""
    alignment = tensor.guaranteed_base_offset_alignment
    return alignment == 0 or alignment >= boundary


def lies_in_blocks(tensor: BufferTensorDesc, kept_strides: tuple[int, ...], reduced_sizes: tuple[int, ...],
                   reduced_strides: tuple[int, ...]) -> bool:
    """Whether a tensor's rows lie in whole blocks of eight elements that one or two loads
    read (or stores write): contiguous along the innermost reduced dim, which is whole blocks,
    and every other step (and the binding's start) a multiple of the elements one load takes
    (a 16-byte vector, or a word of 8-bit elements)."""
    bits = data_type_info(tensor.data_type).bits
    load_elements = 4 if bits == 8 else 128 // bits
    return (reduced_strides[-1] == 1 and reduced_sizes[-1] % 8 == 0 and starts_on(tensor, 16)
            and all(s % load_elements == 0 for s in (*kept_strides, *reduced_strides[:-1])))


def is_wide(tensor: BufferTensorDesc) -> bool:
    """A 64-bit tensor: bound as 32-bit words, element k at words 2k (low) and 2k + 1 (high)."""
    return data_type_info(tensor.data_type).bits == 64


def bound_type(tensor: BufferTensorDesc) -> TensorDataType:
    """The data type a kernel binds `tensor` as: UINT32 words for a 64-bit tensor."""
    return TensorDataType.UINT32 if is_wide(tensor) else tensor.data_type


def uint_list(values) -> str:
    return ", ".join(f"{v}u" for v in values)


def uint_at(index: str, values) -> str:
    """GLSL for element `index` of `values` (a constant once loops unroll), as a function-like
    macro's body: selections, never a constant array, since lavapipe folds a constant array's
    element only at index 0 and left the others (and the divisions, branches and vector
    indices they fed) to run time."""
    *firsts, last = list(values)
    expression = f"{last}u"
    for k in reversed(range(len(firsts))):
        expression = f"(({index}) == {k}u ? {firsts[k]}u : {expression})"
    return expression


def uvec_list(strides: list[tuple[int, ...]]) -> str:
    """One uvecN per dim, holding that dim's stride in each of N tensors."""
    width = len(strides)
    return ", ".join(f"uvec{width}({uint_list(s[d] for s in strides)})" for d in range(len(strides[0])))


@dataclass(frozen=True)
class KernelTensor:
    """Where a tensor a kernel binds lies: input or output `index` of the compiled operator (or
    graph), or `size` bytes at `offset` in its temporary resource (`desc` None: raw scratch)."""

    role: str  # "input", "output" or "temporary"
    index: int = 0
    offset: int = 0
    size: int = 0
    desc: BufferTensorDesc | None = None


@dataclass(frozen=True)
class CompiledKernel:
    """A plan with each stage's SPIR-V (and GLSL), and where each tensor it binds lies."""

    plan: KernelPlan
    sources: tuple[str, ...]
    spirv: tuple[bytes, ...]
    tensors: tuple[KernelTensor, ...]
    nodes: tuple[int, ...] = ()  # the graph nodes it runs (a graph's kernels only)


@dataclass(frozen=True)
class ElementwiseMath:
    """An operator's output element by element: `result` over its inputs (e.tensor(k), in the
    schema's order) and its FP32 scalars (e.scalar(k) is `scalars[k]`)."""

    result: e.Expr
    scalars: tuple[float, ...] = ()


def plan_elementwise(inputs: list[BufferTensorDesc], output: BufferTensorDesc, adapter: AdapterInfo,
                     result: e.Expr, scalars: tuple[float, ...] = ()) -> KernelPlan:
    """Plan `output = result(inputs...)` for tensors with equal sizes, each of its own data
    type; `scalars` are the expression's FP32 scalars, pushed at run time. Where element
    widths differ, only the paths that read each tensor by its own width are taken."""
    if not 1 <= len(inputs) <= MAX_ELEMENTWISE_INPUTS:
        raise UnsupportedError(f"{len(inputs)} inputs: the element-wise kernel takes 1 to {MAX_ELEMENTWISE_INPUTS}")
    info = data_type_info(output.data_type)
    elements_per_word = 32 // info.bits
    tensors = [*inputs, output]
    one_width = all(data_type_info(t.data_type).bits == info.bits for t in inputs)
    sizes, strides = merge_dims(output.sizes, [t.element_strides for t in tensors])
    output_sizes, (output_strides,) = merge_dims(output.sizes, [output.element_strides])
    output_row_major = len(output_sizes) == 1 and (output_sizes[0] == 1 or output_strides == (1,))
    periods = [input_period(s, strides[-1], sizes) for s in strides[:-1]]
    # A period of 1 is one value for every element (a scalar): the broadcast path reads its
    # element once and repeats it across words and vectors, so it needs no alignment of its own.
    read_by_words = [t for t, p in zip(inputs, periods) if p != 1] + [output]
    aligned = all(starts_on(t, 4) for t in tensors)
    one_layout = all(s == strides[-1] for s in strides) and is_dense(sizes, strides[-1])
    # Inputs that are one value (a Python scalar's zero strides) in otherwise one dense layout.
    scalar_inputs = [p == 1 and s != strides[-1] for s, p in zip(strides[:-1], periods)]
    layout_or_scalar = is_dense(sizes, strides[-1]) and \
        all(s == strides[-1] or scalar for s, scalar in zip(strides[:-1], scalar_inputs))
    if not one_width and layout_or_scalar and all(starts_on(t, 16) for t in read_by_words):
        path, reason = "mixed", ("every tensor has one dense layout (or is one value, read once), its elements of its "
                                 "own width: each invocation maps the elements of one 16-byte vector of the "
                                 "narrowest, whole vectors of every tensor")
    elif not one_width:
        path, reason = "strided", "the tensors' elements differ in width: each is read by its own"
    elif one_layout and aligned:
        path, reason = "packed", "every tensor has one dense layout"
    elif is_dense(sizes, strides[-1]) and all(starts_on(t, 4) for t in read_by_words) and None not in periods \
            and any(periods) and all(p == 1 or p % elements_per_word == 0 for p in periods):
        path, reason = "broadcast", ("the output is dense and each input is either in its layout or one block of "
                                     f"it repeated (periods {periods} elements; 0: not repeated; 1: one value, read "
                                     "once and repeated across each word)")
    elif tiled_transpose(*column_run_order(sizes, strides)[:2], info.bits, tensors):
        path, reason = "tiled", (f"a 2-D transpose in whole 16-byte vectors: each invocation transposes a "
                                 f"{4 * elements_per_word} x {4 * elements_per_word} block in registers, neighbouring "
                                 "invocations neighbouring blocks along the output's contiguous dim")
    elif elements_per_word > 1 and output_row_major and starts_on(output, 4):
        path, reason = "gather", "a sub-word output in row-major order, strided inputs: whole output words"
    else:
        path, reason = "strided", "no dense layout shared by the output and its inputs"
    workgroup_size = workgroup_size_for(adapter)
    defines: dict[str, object] = {
        f"DTYPE_{output.data_type.name}": "",
        "ELEMENT_BITS": info.bits,
        f"PATH_{'PACKED' if path == 'broadcast' else path.upper()}": "",
        "WORKGROUP_SIZE": workgroup_size,
        **float_controls_defines(adapter),
        **render.transcendental_defines(result),
    }
    input_types = tuple(t.data_type for t in inputs)
    packed = path in ("packed", "broadcast")
    # The packed paths move 16-byte vectors where every tensor starts on 16 bytes (segments
    # are cut on 16 too) and every repeated block is whole vectors, else words.
    vector_words = 4 if packed and all(starts_on(t, 16) for t in read_by_words) \
        and all(p == 1 or p % (4 * elements_per_word) == 0 for p in periods) else 1
    vector_views = path in ("tiled", "mixed") or vector_words == 4
    interface = KernelInterface(input_types, (output.data_type,), scalar_count=len(scalars), vector_views=vector_views,
                                vector_words_64=vector_views and moves_vectors_in_64bit_words(adapter))
    interface.check(adapter)
    defines.update(interface.defines)
    generated = (("kernel_interface.glsl", interface.header()),
                 ("operator_body.glsl", tuple(render.render(result, input_types, output.data_type))))
    scalar_bits = fp32_bits(scalars)
    shader = "elementwise.comp"
    if packed:
        # Whole chunks in the main dispatch, the words past them in a tail dispatch.
        interleaved = packed_units_interleaved(adapter)
        defines.update({"VECTOR_WORDS": vector_words, "VECTORS_PER_ITEM": PACKED_VECTORS_PER_ITEM})
        elements_per_item = PACKED_VECTORS_PER_ITEM * vector_words * elements_per_word
        chunk = elements_per_item * (workgroup_size if interleaved else 1)
        if path == "broadcast":
            defines["INPUT_PERIOD(t)"] = uint_at("t", periods)
            # On a CPU device (consecutive units) an item's units may lie a period apart, so
            # that it loads each repeated input's vector once for all of them, where every
            # repeated input has the one period and whole chunks cover most of the tensor.
            repeated = {p for p in periods if p not in (0, 1)}
            period = max(repeated, default=0)
            if not interleaved and vector_words == 4 and len(repeated) == 1 \
                    and output.element_count >= PERIOD_CHUNKS_AT_LEAST * PACKED_VECTORS_PER_ITEM * period:
                defines["PERIOD_UNITS"] = f"{period // (vector_words * elements_per_word)}u"
                chunk = PACKED_VECTORS_PER_ITEM * period
                reason += f"; an item's units a period ({period} elements) apart, each repeated vector read once"
        if interleaved:
            defines["UNITS_INTERLEAVED"] = ""
        stages = (KernelStage("main", shader, defines, workgroup_size, elements_per_item, generated=generated,
                              part="whole", chunk=chunk),
                  KernelStage("tail", shader, {**defines, "PACKED_TAIL": ""}, workgroup_size, elements_per_word,
                              generated=generated, part="tail", chunk=chunk))
        reason += (f"; {PACKED_VECTORS_PER_ITEM} units of {vector_words} word(s) per invocation, "
                   f"{'a workgroup apart (a GPU: coalesced)' if interleaved else 'consecutive (a CPU device)'}"
                   f"{', each vector moved as two 64-bit words' if interface.vector_words_64 else ''}")
        return KernelPlan(path, stages, output.element_count, scalar_bits=scalar_bits, reason=reason,
                          interface=interface, windowable=path == "packed")
    if path == "mixed":
        # Whole items in the main dispatch, the elements past them one an invocation in a tail.
        item = 128 // min(data_type_info(t.data_type).bits for t in read_by_words)
        if any(scalar_inputs) and not packed_units_interleaved(adapter):
            item *= MIXED_VECTORS_BESIDE_SCALARS
        defines.update({"MIXED_ELEMENTS": f"{item}u", "MIXED_SCALARS": sum(1 << t for t, scalar in
                                                                           enumerate(scalar_inputs) if scalar)})
        stages = (KernelStage("main", shader, defines, workgroup_size, item, generated=generated, part="whole",
                              chunk=item),
                  KernelStage("tail", shader, {**defines, "MIXED_TAIL": ""}, workgroup_size, 1, generated=generated,
                              part="tail", chunk=item))
        return KernelPlan(path, stages, output.element_count, scalar_bits=scalar_bits, reason=reason,
                          interface=interface)
    if path == "tiled":
        sizes, strides, _ = column_run_order(sizes, strides)
        tile = 4 * elements_per_word
        defines.update({"TILE_LANE_SIZE": f"{sizes[0]}u", "TILE_RUN_SIZE": f"{sizes[1]}u",
                        "INPUT_PITCH": f"{strides[0][1]}u", "OUTPUT_PITCH": f"{strides[-1][0]}u"})
        stage = KernelStage("main", shader, defines, workgroup_size, tile * tile,
                            invocations=sizes[0] // tile * (sizes[1] // tile), generated=generated)
        return KernelPlan(path, (stage,), output.element_count, scalar_bits=scalar_bits, reason=reason,
                      interface=interface)
    run_length = max(strided_run_length(adapter), elements_per_word)  # whole output words on the gather path
    invocations = None
    if path == "strided" and len(sizes) > 1:
        sizes, strides, column_run = column_run_order(sizes, strides)
        if column_run:
            run_length = column_run_length(adapter)
            runs = math.ceil(sizes[-1] / run_length)
            invocations = output.element_count // sizes[-1] * runs
            defines["COLUMN_RUN"] = ""
            reason += (f"; the output is contiguous along a dim where the inputs are not: each invocation walks "
                       f"{run_length} elements along the output's contiguous dim, neighbouring invocations "
                       "along the inputs' (both sides touch whole cache lines)")
    defines.update({"RUN_LENGTH": f"{run_length}u", "RANK": len(sizes), "SIZES": uint_list(sizes),
                    "STRIDES": uint_list(s[d] for d in range(len(sizes)) for s in strides)})
    stage = KernelStage("main", shader, defines, workgroup_size, run_length, invocations=invocations,
                        generated=generated)
    return KernelPlan(path, (stage,), output.element_count, scalar_bits=scalar_bits, reason=reason,
                      interface=interface)


def input_period(input_strides: tuple[int, ...], output_strides: tuple[int, ...], sizes: tuple[int, ...]) -> int | None:
    """For a dense output: 0 where the input has the output's layout; P where the input's
    element for the output's element at memory position m is at m % P (the input is dense
    over the output's innermost dims and broadcast along the others); None otherwise."""
    if input_strides == output_strides:
        return 0
    period, inner = 1, True
    for d in sorted(range(len(sizes)), key=lambda d: output_strides[d]):  # innermost first
        if inner and input_strides[d] == output_strides[d]:
            period *= sizes[d]
        elif input_strides[d] == 0:
            inner = False
        else:
            return None
    return period


def column_run_order(sizes: tuple[int, ...], strides: list[tuple[int, ...]]):
    """The dims reordered for the strided path, and whether to walk columns: the output's
    most contiguous dim goes last (an invocation walks along it); where the inputs are most
    contiguous along another dim, that one goes second to last and neighbouring invocations
    step along it (COLUMN_RUN), so reads and writes both stay within cache lines."""
    output = strides[-1]
    run_dim = min(range(len(sizes)), key=lambda d: output[d])
    lane_dim = min(range(len(sizes)), key=lambda d: max(s[d] for s in strides[:-1]))
    column_run = lane_dim != run_dim
    order = [d for d in range(len(sizes)) if d not in (run_dim, lane_dim)] + ([lane_dim] if column_run else []) \
        + [run_dim]
    return tuple(sizes[d] for d in order), [tuple(s[d] for d in order) for s in strides], column_run


def tiled_transpose(sizes: tuple[int, ...], strides: list[tuple[int, ...]], bits: int, tensors) -> bool:
    """Whether a layout (in column_run_order) is a 2-D transpose in whole 16-byte vectors:
    every input contiguous along the first dim with one pitch, the output along the second,
    sizes and pitches multiples of a vector's elements (4 FP32, 8 16-bit, 16 8-bit), every
    tensor starting on 16 bytes."""
    tile = 4 * 32 // bits
    if len(sizes) != 2 or sizes[0] % tile or sizes[1] % tile or not all(starts_on(t, 16) for t in tensors):
        return False
    inputs, output = strides[:-1], strides[-1]
    return all(s == inputs[0] for s in inputs) and inputs[0][0] == 1 and inputs[0][1] % tile == 0 \
        and output[1] == 1 and output[0] % tile == 0


def column_run_length(adapter: AdapterInfo) -> int:
    """Elements an invocation walks down a column: whole cache lines of the output on a CPU
    device; one 32-byte sector's worth of FP32 on a GPU."""
    return 64 if adapter.adapter_type == AdapterType.CPU else 8


# plan_copy's directions: both ways, or one (the words read and none written, or written and
# none read), the defines of shaders/copy.comp that select them.
COPY_DIRECTIONS = {"copy": {}, "read": {"READ_ONLY": ""}, "write": {"WRITE_ONLY": ""}}


def plan_copy(word_count: int, adapter: AdapterInfo, workgroup_size: int | None = None, vectors_per_invocation: int = 1,
              interleaved: bool = False, words_64: bool = False, direction: str = "copy") -> KernelPlan:
    """A copy of word_count words (a multiple of 4) as 16-byte vectors, in one of several
    dispatch shapes (the benchmark's yardstick takes the fastest); `words_64` moves each
    vector as two 64-bit components (the device must have shaderInt64). `direction` (a key of
    COPY_DIRECTIONS): "read" reads the words and writes none, "write" writes them and reads
    none, the one-way yardsticks of kernels that read and write different amounts."""
    if words_64 and not adapter.shader_int64:
        raise UnsupportedError("a copy in 64-bit components needs shaderInt64, which the device lacks")
    if direction not in COPY_DIRECTIONS:
        raise ValueError(f"direction {direction!r} is not one of {sorted(COPY_DIRECTIONS)}")
    workgroup_size = workgroup_size or workgroup_size_for(adapter)
    defines = {"WORKGROUP_SIZE": workgroup_size, "VECTORS_PER_INVOCATION": f"{vectors_per_invocation}u",
               **({"INTERLEAVED": ""} if interleaved else {}), **({"WORDS_64": ""} if words_64 else {}),
               **COPY_DIRECTIONS[direction]}
    stage = KernelStage("main", "copy.comp", defines, workgroup_size, elements_per_item=4 * vectors_per_invocation)
    return KernelPlan("copy", (stage,), word_count)


def broadcast_dims(slope: BufferTensorDesc) -> tuple[bool, ...]:
    """Per dim: whether a slope broadcasts along it (zero stride over more than one element)."""
    return tuple(size > 1 and stride == 0 for size, stride in zip(slope.sizes, slope.element_strides))


