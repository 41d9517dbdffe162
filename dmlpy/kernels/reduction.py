"""The reduction planner: outputs that depend on reductions over rows (the softmax family,
PReLU's slope gradient), as a sequence of stages of shaders/reduce.comp; a reduction of 64-bit
integers, by the 64-bit kernel family's row reduction (wide.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base.adapter import AdapterInfo, AdapterType
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import data_type_info
from ..ir import expr as e
from ..ir import render
from .codegen import (
    KernelPlan,
    KernelStage,
    bound_type,
    dispatch_grid,
    float_controls_defines,
    fp32_bits,
    is_wide,
    lies_in_blocks,
    merge_dims,
    starts_on,
    uint_list,
    workgroup_size_for,
)
from .interface import (
    MAX_REDUCTION_INPUTS,
    MAX_REDUCTION_OUTPUTS,
    KernelInterface,
    moves_vectors_in_64bit_words,
)
from .wide import plan_wide_reduction

# Elements one invocation of a reduction stage takes: a power of two, so that chunks are
# subtrees of the row's pairwise tree and the bits do not depend on it. Large enough that
# most rows are one chunk (no combining stage), small enough to spread long rows out.
MAX_REDUCTION_CHUNK = 4096
# A GPU runs tens of thousands of invocations at once (an H100: 132 multiprocessors of 2,048
# each), and a partial stage has one a chunk of a row (or of a group of rows): on a GPU a
# row's chunks are halved, down to GPU_MIN_CHUNK elements, until the stage has
# GPU_INVOCATIONS, while the total stage walks at most MAX_REDUCTION_CHUNK of them a row.
# Only from GPU_SPREAD_ELEMENTS elements: below, the dispatches cost more than the walks (4
# MiB of FP32 is microseconds of a GPU's bandwidth), and a second one would not pay. No GPU
# has measured these yet (docs/benchmarks.md).
GPU_INVOCATIONS = 1 << 17
GPU_MIN_CHUNK = 128
GPU_SPREAD_ELEMENTS = 1 << 20
# Loop iterations an invocation may spend: lavapipe ends its loops after 65,535 in all (the
# elements of a chunk, the stack's merges, the loops inside the math, a sub-word store's
# retries), so a chunk's elements and a total's chunks stay well under it.
LOOP_BUDGET = 16384
ARG_REDUCTIONS = ("index_of_max", "index_of_min")  # partials of (index, rank): two words
# A group of rows takes one reduced index of its rows in this many vectors where it can: on a
# CPU device the more bytes of a row a step reads, the fewer pages the walk down its column
# visits (one vector: 0.34 of the copy limit for FP32 columns, two: 0.50, four: no faster).
GROUP_VECTORS = 2
# On a CPU device a workgroup's SIMD slices run one after another, each to its end or to a
# barrier, so a walk down columns (ROW_GROUP > 1) reads a few bytes of each row, a page
# apart, slice after slice. A barrier every LOCKSTEP_ROWS reduced indices keeps the slices
# on the same rows, and together they sweep each row's span (lavapipe, REDUCE SUM over the
# first axis of 4096 x 4096 FP32: 33 ms without; 14-23 ms with a barrier every 8, 32 or 128).
LOCKSTEP_ROWS = 32
# On a CPU device a storage buffer's loads cost several times a private array's (lavapipe
# loads lane by lane), so a row whose inputs, terms and kept values fit in this many words a
# lane is read once into private memory, and its reductions and outputs walk that copy
# (STAGE_ROW): a softmax reads its input once, not three times.
ROW_PRIVATE_WORDS = 4096
ROW_STAGE_REDUCTIONS = ("reduce_sum", "reduce_product", "reduce_max", "reduce_min")
# Values cheaper to recompute from a private row than to keep beside it.
LEAF_OPS = frozenset(("input", "float", "scalar", "const", "zero"))


def row_group(lines: list[tuple[BufferTensorDesc, tuple[int, ...], tuple[int, ...]]], kept_size: int,
              adapter: AdapterInfo) -> int:
    """The rows a partial stage's invocation reduces side by side (ROW_GROUP in
    shaders/reduce.comp), given the (tensor, kept strides, reduced strides) of the inputs and
    of the element outputs the stage writes: on a device that loads a vector in 64-bit words,
    where each reduced index's elements of a group of adjacent rows lie in whole 16-byte
    vectors of every one of them (a reduction over a leading axis, whose rows are not
    contiguous), GROUP_VECTORS or one vector of the widest elements' rows; else 1."""
    bits = [data_type_info(tensor.data_type).bits for tensor, _, _ in lines]
    if not moves_vectors_in_64bit_words(adapter) or not set(bits) <= {16, 32}:
        return 1

    def fits(group: int) -> bool:
        return kept_size % group == 0 and all(
            group % (128 // b) == 0 and starts_on(tensor, 16) and kept[-1] == 1 and reduced[-1] != 1
            and all(s % (128 // b) == 0 for s in (*kept[:-1], *reduced))
            for (tensor, kept, reduced), b in zip(lines, bits))
    per_vector = 128 // max(bits)
    return next((group for group in (GROUP_VECTORS * per_vector, per_vector) if fits(group)), 1)


def lockstep_workgroup(row_groups: int, chunk_count: int, reduced_count: int, chunk: int, checked_sums: bool,
                       workgroup_size: int, adapter: AdapterInfo) -> int:
    """The workgroup size of a grouped partial stage (`row_groups` groups of rows, each in
    `chunk_count` chunks) whose invocations walk in lockstep (LOCKSTEP_ROWS), or 0. Only
    where it helps: on a CPU device, where a workgroup holds adjacent groups of one chunk, at
    least two subgroups of them. Only where every invocation meets every barrier: each walks
    a chunk of the same length (whole chunks), the grid holds no invocation past the last,
    and none walks its chunk again (CHECKED_SUMS redoes a chunk where a term was not plain)."""
    size = math.gcd(row_groups, workgroup_size)
    invocations = row_groups * chunk_count
    if (adapter.adapter_type != AdapterType.CPU or checked_sums or reduced_count % min(chunk, reduced_count)
            or size < 2 * adapter.subgroup_size):
        return 0
    try:
        exact = math.prod(dispatch_grid(invocations, size, adapter)) * size == invocations
    except UnsupportedError:  # more workgroups of `size` than the grid holds
        return 0
    return size if exact else 0


def reduction_chunk(reduced_count: int, loops_per_element: int = 0) -> int:
    """The chunk for rows of `reduced_count` elements whose math loops `loops_per_element`
    times an element: at most MAX_REDUCTION_CHUNK, and within LOOP_BUDGET."""
    within_budget = 1 << (LOOP_BUDGET // (4 + loops_per_element)).bit_length() - 1
    return min(MAX_REDUCTION_CHUNK, within_budget, 1 << max(0, reduced_count - 1).bit_length())


def spread_chunk(chunk: int, row_count: int, reduced_count: int) -> int:
    """A GPU's chunk for `row_count` rows of `reduced_count` elements: from
    GPU_SPREAD_ELEMENTS elements, `chunk` halved while the partial stage has fewer than
    GPU_INVOCATIONS invocations, down to GPU_MIN_CHUNK and to at most MAX_REDUCTION_CHUNK
    chunks a row. Still a power of two: an aligned subtree of each row's tree, so the bits
    do not change."""
    if row_count * reduced_count < GPU_SPREAD_ELEMENTS:
        return chunk
    while (chunk > GPU_MIN_CHUNK and row_count * math.ceil(reduced_count / chunk) < GPU_INVOCATIONS
           and math.ceil(reduced_count / (chunk // 2)) <= MAX_REDUCTION_CHUNK):
        chunk //= 2
    return chunk


def row_chunks(row_count: int, reduced_count: int, loops_per_element: int, adapter: AdapterInfo) -> tuple[int, int]:
    """(chunk, chunks a row) for `row_count` rows of `reduced_count` elements: reduction_chunk,
    spread on a GPU; at most LOOP_BUDGET chunks, which the total stage walks in one invocation."""
    chunk = reduction_chunk(reduced_count, loops_per_element)
    if adapter.adapter_type != AdapterType.CPU:
        chunk = spread_chunk(chunk, row_count, reduced_count)
    chunk_count = math.ceil(reduced_count / chunk)
    if chunk_count > LOOP_BUDGET:
        raise UnsupportedError(
            f"rows of {reduced_count} elements: the reduction kernel takes rows of at most {LOOP_BUDGET * chunk} "
            f"elements with this math ({chunk} a chunk, {LOOP_BUDGET} chunks)", "sizes")
    return chunk, chunk_count


@dataclass(frozen=True)
class ReducedOutput:
    """An output of a reduction plan: `value` for each element (per_row False), or one value
    per row, stored where the row's reduced indices are 0 (per_row True)."""

    desc: BufferTensorDesc
    value: e.Expr
    per_row: bool = False


@dataclass(frozen=True)
class ReductionMath:
    """An operator's reduction as expressions over its inputs (e.tensor(k)): each output's
    value (per row, or per element) and the dims of the first input a row spans. Graphs
    substitute an element-wise prologue for an input and plan the whole as one kernel."""

    outputs: tuple[tuple[e.Expr, bool], ...]  # (value, per_row) of each output, in the operator's order
    reduced: tuple[bool, ...]
    scalars: tuple[float, ...] = ()  # the values of its e.scalar(k)


def plan_reduction_math(math: ReductionMath, inputs: list[BufferTensorDesc], outputs: list[BufferTensorDesc],
                        adapter: AdapterInfo) -> KernelPlan:
    return plan_reduction(inputs, [ReducedOutput(desc, value, per_row) for desc, (value, per_row)
                                   in zip(outputs, math.outputs)], math.reduced, adapter, math.scalars)


def _is_leaf(node: e.Expr) -> bool:
    return node.op in LEAF_OPS and all(_is_leaf(arg) for arg in node.args)


def kept_between_passes(passes: list[list[e.Expr]]) -> dict[int, tuple[int, e.Expr]]:
    """The values a pass over a private row reads from an earlier pass, given each pass's
    expressions (a reduction's term, or the element outputs): each FP32 value that is more than
    an input, scalar or constant, computed by one pass and needed by a later one. Maps its
    serial to (the pass that computes it, the node)."""
    computed: dict[int, int] = {}
    kept: dict[int, tuple[int, e.Expr]] = {}
    for number, roots in enumerate(passes):
        here: set[int] = set()
        stack = list(roots)
        while stack:
            node = stack.pop()
            if node.serial in here or node.serial in kept or node.op in e.REDUCTIONS:
                continue
            if node.serial in computed and node.kind == e.FLOAT and not _is_leaf(node):
                kept[node.serial] = (computed[node.serial], node)
                continue
            here.add(node.serial)
            stack.extend(node.args)
        computed.update((serial, number) for serial in here if serial not in computed)
    return kept


def _reduction_body(lines_element: list[str], lines_row: list[str]) -> tuple[str, ...]:
    return ("void element_math(uint bits[INPUT_COUNT], uint totals[TOTAL_SLOTS], uint element,",
            "                  out REDUCE_VALUE reduce_value, out uint output_bits[OUTPUT_COUNT]) {",
            *(f"    {line}" for line in lines_element), "}",
            "void row_math(uint totals[TOTAL_SLOTS], out uint output_bits[OUTPUT_COUNT]) {",
            *(f"    {line}" for line in lines_row), "}")


def plan_reduction(inputs: list[BufferTensorDesc], outputs: list[ReducedOutput], reduced: tuple[bool, ...],
                   adapter: AdapterInfo, scalars: tuple[float, ...] = ()) -> KernelPlan:
    """Plan outputs that depend on reductions over rows (shaders/reduce.comp): `reduced`
    marks the dims of the first input's sizes a row spans. Each reduce node in the outputs'
    expressions becomes a stage (and a stage combining chunk partials where rows are long);
    an element output is written by the first stage that knows the totals it reads. Where an
    input is 64-bit, one reduction a row, stored as it is, is the 64-bit family's."""
    if not 1 <= len(inputs) <= MAX_REDUCTION_INPUTS or not 1 <= len(outputs) <= MAX_REDUCTION_OUTPUTS:
        raise UnsupportedError(f"{len(inputs)} inputs and {len(outputs)} outputs: the reduction kernel takes 1 to "
                               f"{MAX_REDUCTION_INPUTS} inputs and 1 to {MAX_REDUCTION_OUTPUTS} outputs")
    sizes = inputs[0].sizes
    tensors = [*inputs, *(o.desc for o in outputs)]
    per_row = [False] * len(inputs) + [o.per_row for o in outputs]
    kept_dims = [d for d, r in enumerate(reduced) if not r]
    reduced_dims = [d for d, r in enumerate(reduced) if r]
    kept_sizes, kept_strides = merge_dims(
        tuple(sizes[d] for d in kept_dims), [tuple(t.element_strides[d] for d in kept_dims) for t in tensors])
    reduced_sizes, reduced_strides = merge_dims(
        tuple(sizes[d] for d in reduced_dims),
        [tuple(0 if row else t.element_strides[d] for d in reduced_dims) for t, row in zip(tensors, per_row)])
    row_count, reduced_count = math.prod(kept_sizes), math.prod(reduced_sizes)
    if any(is_wide(t) for t in inputs):
        value = outputs[0].value
        if len(outputs) != 1 or not outputs[0].per_row or e.reductions(value) != [value]:
            raise UnsupportedError("the reduction kernel reads 64-bit elements for one reduction a row, stored as "
                                   "it is", "data_type")
        chunk, _ = row_chunks(row_count, reduced_count, render.loop_iterations(value), adapter)
        return plan_wide_reduction(inputs, outputs[0].desc, value, (kept_sizes, kept_strides),
                                   (reduced_sizes, reduced_strides), chunk, adapter, scalars)
    nodes = e.reductions(*(o.value for o in outputs))
    slot = {node.serial: k for k, node in enumerate(nodes)}
    written_by = [len(nodes) if o.per_row else max((slot[n] + 1 for n in e.needed_reductions(o.value)), default=0)
                  for o in outputs]
    partial_writes = [len(inputs) + o for o, (at, out) in enumerate(zip(written_by, outputs))
                      if at < len(nodes) and not out.per_row]
    group = row_group([(tensors[t], kept_strides[t], reduced_strides[t])
                       for t in (*range(len(inputs)), *partial_writes)], kept_sizes[-1], adapter)
    # Each row of a group spends an element's loops (the math's, its stack's merges) on it.
    loops = render.loop_iterations(*(o.value for o in outputs))
    chunk, chunk_count = row_chunks(row_count, reduced_count, (4 + loops) * group - 4, adapter)
    totals_words = len(nodes) * row_count
    partials_words = row_count * chunk_count if chunk_count > 1 else 0
    # Each reduction's partials region: an index of an extreme keeps its rank beside it.
    regions = [2 if node.op in ARG_REDUCTIONS else 1 for node in nodes]
    partials_at = [totals_words + sum(regions[:k]) * partials_words for k in range(len(nodes))]
    workgroup_size = workgroup_size_for(adapter)
    input_types = tuple(t.data_type for t in inputs)
    if any(is_wide(o.desc) and not o.per_row for o in outputs):
        raise UnsupportedError("the reduction kernel writes 64-bit elements only as one value a row (an index, "
                               "zero-extended)", "data_type")
    output_types = tuple(bound_type(o.desc) for o in outputs)
    output_type = output_types[0]  # what numbers round to, and integer math saturates to
    if any(t != output_type for t in output_types):
        raise UnsupportedError("the reduction kernel writes its outputs in one data type")
    block_loads = sum(1 << t for t, tensor in enumerate(inputs)
                      if lies_in_blocks(tensor, kept_strides[t], reduced_sizes, reduced_strides[t]))
    # Element outputs of 16 or 32 bits whose rows lie in blocks are stored a block at a time
    # (8-bit ones share their words with neighbours another invocation may write).
    block_stores = sum(1 << o for o, out in enumerate(outputs)
                       if not out.per_row and data_type_info(out.desc.data_type).bits >= 16
                       and lies_in_blocks(out.desc, kept_strides[len(inputs) + o], reduced_sizes,
                                          reduced_strides[len(inputs) + o]))
    vectors = block_loads != 0 or block_stores != 0 or group > 1
    interface = KernelInterface(input_types, output_types, scratch=True, scalar_count=len(scalars),
                                vector_views=vectors, vector_words_64=vectors and moves_vectors_in_64bit_words(adapter))
    interface.check(adapter)
    info = data_type_info(output_type)
    common = {
        f"DTYPE_{output_type.name}": "",
        **({"REDUCED_INPUT_SIGNED": ""} if data_type_info(inputs[0].data_type).signed_integer else {}),
        "ELEMENT_BITS": info.bits,
        "WORKGROUP_SIZE": workgroup_size,
        "REDUCTION_COUNT": len(nodes),
        "ROW_COUNT": f"{row_count}u",
        "CHUNK": f"{chunk}u",
        "CHUNK_COUNT": f"{chunk_count}u",
        **float_controls_defines(adapter),
        "REDUCED_COUNT": f"{reduced_count}u",
        "KEPT_RANK": len(kept_sizes),
        "KEPT_SIZES": uint_list(kept_sizes),
        "KEPT_STRIDES": uint_list(s[d] for d in range(len(kept_sizes)) for s in kept_strides),
        "REDUCED_RANK": len(reduced_sizes),
        "REDUCED_SIZES": uint_list(reduced_sizes),
        "REDUCED_STRIDES": uint_list(s[d] for d in range(len(reduced_sizes)) for s in reduced_strides),
        "BLOCK_LOADS": 0,
        "BLOCK_STORES": 0,
        "ROW_INPUTS": sum(1 << t for t in range(len(inputs)) if not any(reduced_strides[t])),
        "WIDE_OUTPUTS": sum(1 << o for o, out in enumerate(outputs) if is_wide(out.desc)),
        **interface.defines,
    }
    common.update(render.transcendental_defines(*(o.value for o in outputs)))

    final_elements = any(at == len(nodes) and not o.per_row for at, o in zip(written_by, outputs))
    element_values = [o.value for o in outputs if not o.per_row]
    kept = kept_between_passes([*([node.args[0]] for node in nodes), element_values])
    walks = len(nodes) + (1 if final_elements else 0)  # the staged plan's walks over each row
    # A row stage's invocation walks its row once a reduction and once for the outputs, each
    # walk at most an iteration an element (eight an iteration, the stack's merges, a sub-word
    # store's retries) and the math's loops.
    if (adapter.adapter_type == AdapterType.CPU and walks >= 2 and chunk_count == 1 and group == 1
            and all(node.op in ROW_STAGE_REDUCTIONS for node in nodes)
            and reduced_count * (len(inputs) + len(kept)) <= ROW_PRIVATE_WORDS
            and reduced_count * ((2 + loops) * (len(nodes) + 1) + 1) <= LOOP_BUDGET):
        slots = {serial: slot for slot, serial in enumerate(kept)}

        def kept_before(number: int) -> dict[int, str]:
            return {serial: f"row_values[{slots[serial]}][element]" for serial, (at, _) in kept.items() if at < number}

        def keeps(number: int) -> list[tuple[str, e.Expr, str]]:
            return [(f"row_values[{slots[serial]}][element]", node, e.FLOAT)
                    for serial, (at, node) in kept.items() if at == number]

        terms = ["float row_term(uint k, uint bits[INPUT_COUNT], uint totals[TOTAL_SLOTS], uint element) {",
                 "    float term = 0.0;"]
        for k, node in enumerate(nodes):
            lines = render.render_assignments([("term", node.args[0], e.FLOAT), *keeps(k)], input_types, output_type,
                                              {n.serial: j for j, n in enumerate(nodes[:k])},
                                              kept=kept_before(k))
            terms += [f"    if (k == {k}u) {{", *(f"        {line}" for line in lines), "    }"]
        terms += ["    return term;", "}",
                  "void row_reductions(inout uint totals[TOTAL_SLOTS], uint row_at[TENSOR_COUNT], bool vectors) {",
                  *(f"    totals[{k}] = row_total({k}u, totals, row_at, vectors);" for k in range(len(nodes))), "}"]
        every_total = {node.serial: k for k, node in enumerate(nodes)}
        body = (*terms, *_reduction_body(
            render.render_assignments([(f"output_bits[{o}]", out.value, e.STORED) for o, out in enumerate(outputs)
                                       if not out.per_row], input_types, output_type, every_total,
                                      kept=kept_before(len(nodes))),
            render.render_assignments([(f"output_bits[{o}]", out.value, e.STORED) for o, out in enumerate(outputs)
                                       if out.per_row], input_types, output_type, every_total)))
        defines = {**common, "STAGE_ROW": "", "TOTALS_KNOWN": "0u", "KEPT_VALUES": len(kept),
                   "REDUCTION_OPS": ", ".join(f"OP_{e.REDUCTIONS[node.op]}" for node in nodes),
                   "ELEMENT_OUTPUTS": sum(1 << o for o, out in enumerate(outputs) if not out.per_row),
                   "ROW_OUTPUTS": sum(1 << o for o, out in enumerate(outputs) if out.per_row),
                   "BLOCK_LOADS": block_loads, "BLOCK_STORES": block_stores}
        stage = KernelStage("row", "reduce.comp", defines, workgroup_size, invocations=row_count,
                            generated=(("kernel_interface.glsl", interface.header()), ("operator_body.glsl", body)))
        return KernelPlan("reduction", (stage,), inputs[0].element_count, temporary_size=4,
                          scalar_bits=fp32_bits(scalars), interface=interface,
                          reason=f"{row_count} rows of {reduced_count}, each read once into private memory (a CPU "
                                 f"device): {len(nodes)} reductions and the outputs in one stage, not {walks} walks")
    # Row outputs come from the stage that completes the last total: the final stage where
    # element outputs need one anyway, else the last reduction's own (partial or total) stage.
    rows_at = "final" if final_elements or not nodes else f"{'total' if chunk_count > 1 else 'partial'}{len(nodes) - 1}"

    header = interface.header()

    def stage(name: str, kind: str, known: int, invocations: int, reduction: e.Expr | None = None):
        element_outputs = [o for o, at in enumerate(written_by) if at == known and not outputs[o].per_row
                           and kind != "total"]
        row_outputs = [o for o, out in enumerate(outputs) if out.per_row and name == rows_at]
        assignments = [(f"output_bits[{o}]", outputs[o].value, e.STORED) for o in element_outputs]
        defines = {**common, f"STAGE_{kind.upper()}": "", "TOTALS_KNOWN": f"{known}u",
                   "ELEMENT_OUTPUTS": sum(1 << o for o in element_outputs),
                   "ROW_OUTPUTS": sum(1 << o for o in row_outputs)}
        stage_workgroup = workgroup_size
        if kind == "partial" and group > 1:
            defines["ROW_GROUP"] = group
            invocations //= group
            checked_sums = reduction is not None and reduction.op == "reduce_sum" and "DENORMALS_EXACT" in common
            lockstep = lockstep_workgroup(row_count // group, chunk_count, reduced_count, chunk, checked_sums,
                                          workgroup_size, adapter)
            if lockstep:
                defines.update({"WORKGROUP_SIZE": lockstep, "LOCKSTEP_ROWS": f"{LOCKSTEP_ROWS}u"})
                stage_workgroup = lockstep
        if reduction is not None:
            defines.update({f"REDUCE_{e.REDUCTIONS[reduction.op]}": "", "REDUCTION": f"{known}u",
                            "PARTIALS_AT": f"{partials_at[known]}u"})
            if reduction.op in ARG_REDUCTIONS:
                defines.update({**({"ARG_LAST": ""} if reduction.value == "last" else {}),
                                **({"ARG_OF_INTEGERS": ""} if reduction.args[0].kind == e.INTEGER else {})})
            if kind == "partial":
                assignments.append(("reduce_value", reduction.args[0], reduction.args[0].kind))
        if kind == "final" and element_outputs:
            defines["FINAL_ELEMENTS"] = ""
        if kind == "partial" or element_outputs and kind == "final":
            # Elements go eight an iteration (eight copies of the body) where a block is one or
            # two loads or stores, and for cheap sums and products for their tree's sake.
            stores = sum(1 << o for o in element_outputs if (block_stores >> o) & 1)
            cheap_tree = reduction is not None and reduction.op in ("reduce_sum", "reduce_product") and \
                not render.transcendental_defines(*(a[1] for a in assignments))
            if block_loads or stores or cheap_tree:
                defines.update({"BLOCKS_OF_EIGHT": "", "BLOCK_LOADS": block_loads, "BLOCK_STORES": stores})
        completed = known + (1 if row_outputs and reduction is not None else 0)  # this stage's own total too
        row_totals = {node.serial: k for k, node in enumerate(nodes[:completed])}
        body = _reduction_body(
            render.render_assignments(assignments, input_types, output_type,
                                 {node.serial: k for k, node in enumerate(nodes[:known])}),
            render.render_assignments([(f"output_bits[{o}]", outputs[o].value, e.STORED) for o in row_outputs],
                                 input_types, output_type, row_totals))
        return KernelStage(name, "reduce.comp", defines, stage_workgroup, invocations=invocations,
                           generated=(("kernel_interface.glsl", header), ("operator_body.glsl", body)))

    stages = []
    for k, node in enumerate(nodes):
        stages.append(stage(f"partial{k}", "partial", k, row_count * chunk_count, node))
        if chunk_count > 1:
            stages.append(stage(f"total{k}", "total", k, row_count, node))
    if rows_at == "final" and any(at == len(nodes) for at in written_by):
        stages.append(stage("final", "final", len(nodes), row_count * (chunk_count if final_elements else 1)))
    temporary_words = max(1, totals_words + sum(regions) * partials_words)
    grouped = f", {group} rows an invocation" if group > 1 else ""
    if any("LOCKSTEP_ROWS" in s.defines for s in stages):
        grouped += f", workgroups in lockstep every {LOCKSTEP_ROWS} elements"
    return KernelPlan("reduction", tuple(stages), inputs[0].element_count, temporary_size=4 * temporary_words,
                      scalar_bits=fp32_bits(scalars), interface=interface,
                      reason=f"{row_count} rows of {reduced_count}, {chunk_count} chunk(s) of at most {chunk} a row"
                             f"{grouped}: {len(stages)} stage(s)")
