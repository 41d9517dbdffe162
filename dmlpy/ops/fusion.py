"""Compiling a graph: which nodes fuse into one kernel, where each intermediate tensor lives,
and the kernels in the order they run.

Fusion. Element-wise nodes (an operator whose schema gives its output's math element by
element, codegen.ElementwiseMath) join the kernel of the node they read when that node is
element-wise too, its output is no graph output, and every node that reads it joins the same
kernel (`where(y > 0, y, 0)` reads y twice: y is computed once, in the kernel). A fused
kernel computes its nodes' expressions in one SSA body: an intermediate becomes the
stored bits the unfused operator would have written (expr.stored: a number rounded to the
data type once, an integer saturated), so the fused kernel gives the same bits as the nodes
run one by one. A kernel takes at most MAX_FUSED_NODES nodes, interface.MAX_ELEMENTWISE_INPUTS
distinct tensors from outside, and the scalars its push constants hold; past that, a new
kernel starts. A producer that does not fit is tried again once another producer of the same
node has been absorbed, since that can replace an outside tensor by ones already counted. A
reduction whose schema gives its math (REDUCE, ARGMIN, ARGMAX, the softmax family:
kernels.reduction.ReductionMath) takes the element-wise nodes it reads the same way,
as a prologue computed in its passes: SUM_SQUARE of a - b is one kernel, with the bits of
the two nodes run one by one. A matrix product (GEMM: its schema's kernels.matmul.MatmulMath)
is absorbed the other way: the element-wise chain that alone reads its output becomes its
store's epilogue (a bias add, an activation, a residual add, a cast), one kernel with the bits
of the nodes run one by one. PReLU's gradient runs as its own kernel.
Nodes on 64-bit tensors (FLOAT64's bits, INT64, UINT64) fuse only with nodes on the same
64-bit type, their comparisons' UINT8 outputs included: one kernel computes them in 32-bit
integer words (kernels/wide.py), and a 64-bit reduction takes them as its prologue.

Intermediates. A node output read by another kernel lives in the graph output it also is,
or else in a 16-byte aligned range of the graph's temporary resource, live from the kernel
that writes it to the last kernel that reads it; a kernel's own scratch (a reduction's, a
split product's) is live in that kernel only. Kernels run in the order of their last node in
the graph's order, each after the ones it reads, a barrier between consecutive kernels, so
ranges never live at once share bytes: each is placed at the lowest offset free for its
whole life (first fit, in the order ranges go live). A range that fits in one of the
device's buffer segments never crosses a segment boundary (counted from the start of the
temporary resource), since only element-wise kernels over packed tensors are split into
windows at those boundaries (windows.py).

In place. A graph output may be bound over a graph input that every kernel reading it has
read by then, or, in the kernel that reads it, exactly in place where its nodes run element
by element (graph_aliasing.py has the rule; binding.py applies it).

Every step takes time linear in the graph's size (the GraphDesc indexes its edges), but for
placing a range, linear in the ranges live beside it.
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass, field, replace
from itertools import groupby

from ..base.adapter import AdapterInfo
from ..base.errors import UnsupportedError
from ..base.types import TensorDataType
from ..ir import expr as e
from ..kernels.codegen import KernelPlan, KernelTensor, is_wide
from ..kernels.interface import MAX_ELEMENTWISE_INPUTS, MAX_REDUCTION_INPUTS, KernelInterface
from ..kernels.matmul import MatmulEpilogue, MatmulMath, MatmulOperands, plan_matmul
from ..kernels.reduction import ReducedOutput, ReductionMath, plan_reduction
from ..kernels.wide import plan_elementwise_any_width
from .graph import GraphDesc, NodeInputSource

MAX_FUSED_NODES = 16  # keeps a fused body (and glslang's time on it) bounded
TEMPORARY_ALIGNMENT = 16


@dataclass
class _Group:
    nodes: list[int] = field(default_factory=list)  # in graph order: the root (the kernel's output) last
    absorbed: bool = False  # merged into a later group, which runs its nodes

    @property
    def root(self) -> int:
        return self.nodes[-1]


@dataclass
class _Range:
    """A range of the temporary resource, live from kernel `first` to kernel `last` (the order
    they run in), at `offset` once placed."""

    size: int
    first: int
    last: int
    offset: int = 0


@dataclass(frozen=True)
class GraphKernel:
    """One kernel of a compiled graph: the plan, the graph's nodes it runs, and where each of
    its tensors (in the plan's binding order) lies."""

    plan: KernelPlan
    nodes: tuple[int, ...]
    tensors: tuple[KernelTensor, ...]


@dataclass(frozen=True)
class GraphPlan:
    kernels: tuple[GraphKernel, ...]
    temporary_size: int


def _external_sources(graph: GraphDesc, nodes: list[int],
                      leaving_out: int | None = None) -> list[NodeInputSource]:
    """The distinct tensors `nodes` read from outside themselves, in first-read order (but for
    what node `leaving_out`, a matrix product, reads: its own kernel's operands)."""
    members, found = set(nodes), {}
    for node in nodes:
        if node == leaving_out:
            continue
        for k in range(len(graph.desc_of(node).schema.inputs)):
            source = graph.source(node, k)
            if source is not None and source.node not in members:
                found.setdefault(source)
    return list(found)


def plan_graph(graph: GraphDesc, adapter: AdapterInfo, segment_size: int | None = None) -> GraphPlan:
    """The kernels that run `graph` (validated) on `adapter`, whose buffers are bound in
    segments of `segment_size` bytes (default: what the adapter's limits allow)."""
    if segment_size is None:
        segment_size = adapter.segment_size
    descs = [graph.desc_of(n) for n in range(len(graph.nodes))]
    math = [d.schema.elementwise(d) if d.schema.elementwise is not None and len(d.schema.outputs) == 1 else None
            for d in descs]
    reductions = [d.schema.reduction(d) if d.schema.reduction is not None else None for d in descs]
    products = [d.schema.matmul(d) if d.schema.matmul is not None else None for d in descs]
    readers: dict[tuple[int, int], list[int]] = {}  # each node output's reading nodes, one per edge
    for edge in graph.intermediate_edges:
        readers.setdefault((edge.from_node, edge.from_node_output_index), []).append(edge.to_node)
    graph_outputs = {(edge.from_node, edge.from_node_output_index): edge.graph_output_index
                     for edge in graph.output_edges}
    # The 64-bit data types each node binds: a kernel computes either no 64-bit tensor or
    # 64-bit math of one type alone (kernels/wide.py), its comparisons' UINT8 included.
    wide_types = [frozenset(getattr(d, t.name).data_type for t in d.schema.present(d) if is_wide(getattr(d, t.name)))
                  for d in descs]

    def fits(nodes: list[int]) -> bool:
        root = reductions[nodes[-1]]
        hosts = [n for n in nodes if products[n] is not None]
        if len(hosts) > 1 or (hosts and root is not None):  # one product a kernel, never a reduction's prologue
            return False
        if len({wide_types[n] for n in nodes}) > 1 or (hosts and wide_types[hosts[0]]) \
                or len(wide_types[nodes[0]]) > 1:
            return False
        scalars = sum(len(math[n].scalars) for n in nodes if math[n] is not None) + len(root.scalars if root else ())
        outputs, scratch = (len(root.outputs), True) if root is not None else (1, False)
        if hosts:  # the sum, the product's own epilogue inputs and the chain's: the element-wise kernel's room
            product = products[hosts[0]]
            inputs = 1 + len(product.epilogue.inputs) + len(_external_sources(graph, nodes, hosts[0]))
            limit, bound, scratch = MAX_ELEMENTWISE_INPUTS, inputs - 1 + len(product.operands.bound), True
            scalars += len(product.epilogue.scalars)
        else:
            inputs = bound = len(_external_sources(graph, nodes))
            limit = MAX_REDUCTION_INPUTS if root is not None else MAX_ELEMENTWISE_INPUTS
        # The kernel's bindings and push constants (each binding's base, the scalars) on this device
        kernel = KernelInterface((TensorDataType.FLOAT32,) * bound, (TensorDataType.FLOAT32,) * outputs,
                                 scratch=scratch, scalar_count=scalars)
        return len(nodes) <= MAX_FUSED_NODES and inputs <= limit and kernel.fits(adapter)

    order = graph.order()
    position = {node: k for k, node in enumerate(order)}
    group_of: dict[int, _Group] = {}
    groups: list[_Group] = []

    def absorbable(node: int, k: int) -> bool:
        """Whether input k of `node` is a producer's output that no graph output is, whose
        kernel (its group's root) this node's kernel may absorb once it holds every node that
        reads that output."""
        source = graph.source(node, k)
        producer = source.node if source is not None else None
        if producer is None or (math[producer] is None and products[producer] is None) \
                or (producer, source.index) in graph_outputs \
                or (products[producer] is not None and math[node] is None):
            return False
        # A reduction that reads the producer's output through other strides keeps it apart.
        return reductions[node] is None or \
            graph.node_output_desc(producer, source.index) == getattr(descs[node], descs[node].schema.inputs[k].name)

    def absorb_one(group: _Group) -> _Group | None:
        """`group` with one more producer's group merged in, or None where none fits: a
        producer read by a member, each of whose readers the merged group holds (a value read
        twice, as `where(y > 0, y, 0)` reads y, is computed once in the kernel)."""
        members = set(group.nodes)
        for member in group.nodes:
            for k in range(len(descs[member].schema.inputs)):
                source = graph.source(member, k)
                if source is None or source.node is None or source.node in members or not absorbable(member, k):
                    continue
                merged = {*group_of[source.node].nodes, *members}
                if all(reader in merged for reader in readers[source.node, source.index]):
                    # Both groups hold at most MAX_FUSED_NODES nodes: sorting them costs a bounded time.
                    ordered = sorted(merged, key=position.__getitem__)
                    if fits(ordered):
                        group_of[source.node].absorbed = True
                        return _Group(ordered)
        return None

    for node in order:
        group = _Group([node])
        if math[node] is not None or reductions[node] is not None:  # a reduction takes an element-wise prologue
            # Absorbing one producer can replace its output by inputs already counted, or bring
            # in the last reader of another: each absorption is followed by a new look.
            while (larger := absorb_one(group)) is not None:
                group = larger
        groups.append(group)
        for member in group.nodes:
            group_of[member] = group
    groups = [group for group in groups if not group.absorbed]

    # Where each node output another kernel reads lives; each temporary range gets its offset
    # once every kernel is planned (a kernel's own scratch size comes from its plan), and until
    # then its KernelTensor's offset is its number in `ranges`.
    kernel_of = {member: k for k, group in enumerate(groups) for member in group.nodes}
    location: dict[tuple[int, int], KernelTensor] = {}
    ranges: list[_Range] = []

    def reserve(size: int, first: int, desc=None) -> KernelTensor:
        ranges.append(_Range(size, first, first))
        return KernelTensor("temporary", offset=len(ranges) - 1, size=size, desc=desc)

    for edge in graph.output_edges:
        location[edge.from_node, edge.from_node_output_index] = KernelTensor(
            "output", edge.graph_output_index, desc=graph.node_output_desc(edge.from_node, edge.from_node_output_index))
    for edge in graph.intermediate_edges:
        key = (edge.from_node, edge.from_node_output_index)
        if kernel_of[edge.from_node] == kernel_of[edge.to_node]:
            continue
        if key not in location:
            desc = graph.node_output_desc(*key)
            location[key] = reserve(desc.total_tensor_size_in_bytes, kernel_of[edge.from_node], desc)
        if location[key].role == "temporary":
            live = ranges[location[key].offset]
            live.last = max(live.last, kernel_of[edge.to_node])

    def read(source: NodeInputSource) -> KernelTensor:
        if source.node is None:
            return KernelTensor("input", source.index, desc=graph.input_desc(source.index))
        return location[source.node, source.index]

    kernels = []
    for number, group in enumerate(groups):
        root = group.root
        hosts = [n for n in group.nodes if products[n] is not None]
        if hosts and len(group.nodes) > 1:
            host = hosts[0]
            external = _external_sources(graph, group.nodes, host)
            own = [source for k in range(2, len(descs[host].schema.inputs))
                   if (source := graph.source(host, k)) is not None]  # the product's epilogue inputs (GEMM's C)
            output = location[root, 0]
            product = products[host]
            epilogue = _fused_epilogue(graph, group.nodes, math, host, product, external)
            inputs = (*product.epilogue.inputs, *(read(s).desc for s in external))
            plan = plan_matmul(MatmulOperands(product.operands.a, product.operands.b, output.desc,
                                              product.operands.transpose_a, product.operands.transpose_b),
                               MatmulEpilogue(epilogue[0], inputs, epilogue[1]), adapter)
            tensors = [read(graph.source(host, 0)), read(graph.source(host, 1)), *map(read, own), *map(read, external),
                       output]
            if plan.temporary_size:
                tensors.append(reserve(plan.temporary_size, number))
        elif reductions[root] is not None and len(group.nodes) > 1:
            external = _external_sources(graph, group.nodes)
            outputs, scalars = _fused_reduction(graph, group.nodes, math, reductions[root], external)
            desc = descs[root]
            plan = plan_reduction(
                [read(s).desc for s in external],
                [ReducedOutput(location[root, o].desc, value, per_row) for o, (value, per_row) in enumerate(outputs)],
                reductions[root].reduced, adapter, scalars)
            tensors = [*(read(s) for s in external), *(location[root, o] for o in range(len(outputs)))]
            if plan.temporary_size:
                tensors.append(reserve(plan.temporary_size, number))
        elif math[root] is None:
            desc = descs[root]
            plan = desc.schema.kernel(desc, adapter)
            tensors = [read(source) for k in range(len(desc.schema.inputs))
                       if (source := graph.source(root, k)) is not None]
            tensors += [location[root, o] for o, field in enumerate(desc.schema.outputs)
                        if getattr(desc, field.name) is not None]
            if plan.temporary_size:
                tensors.append(reserve(plan.temporary_size, number))
        else:
            external = _external_sources(graph, group.nodes)
            result, scalars = _fused_math(graph, group.nodes, math, external)
            output = location[root, 0]
            plan = plan_elementwise_any_width([read(s).desc for s in external], output.desc, adapter, result,
                                              scalars)
            tensors = [*(read(s) for s in external), output]
        if not plan.windowable:
            _check_bindable(group, descs[root], plan, tensors, segment_size)
        kernels.append(GraphKernel(plan, tuple(group.nodes), tuple(tensors)))
    temporary_size = _place(ranges, segment_size)
    return GraphPlan(tuple(
        replace(kernel, tensors=tuple(replace(t, offset=ranges[t.offset].offset) if t.role == "temporary" else t
                                      for t in kernel.tensors))
        for kernel in kernels), temporary_size)


def _place(ranges: list[_Range], segment_size: int) -> int:
    """Give each range its offset, first fit in the order the ranges go live, and return the
    bytes they take. Ranges live in one kernel never share bytes; the kernels run in order, a
    barrier between each, so a range whose last reader is kernel i is free from kernel i + 1.
    Ranges start on TEMPORARY_ALIGNMENT, and one that fits in a segment lies inside one."""

    def fitted(start: int, size: int) -> int:
        start = -(-start // TEMPORARY_ALIGNMENT) * TEMPORARY_ALIGNMENT
        if start % segment_size + size > segment_size >= size:  # it would cross a boundary it fits between
            start = -(-start // segment_size) * segment_size
        return start

    total = 0
    live: list[_Range] = []  # the placed ranges live in the current kernel, by offset
    for kernel, starting in groupby(sorted(ranges, key=lambda r: r.first), key=lambda r: r.first):
        live = [r for r in live if r.last >= kernel]
        for new in starting:
            start = fitted(0, new.size)
            for busy in live:  # sorted by offset: the first gap the range fits in
                if start + new.size <= busy.offset:
                    break
                start = fitted(max(start, busy.offset + busy.size), new.size)
            new.offset = start
            insort(live, new, key=lambda r: r.offset)
            total = max(total, start + new.size)
    return total


def _check_bindable(group: _Group, root_desc, plan: KernelPlan, tensors: list[KernelTensor],
                    segment_size: int) -> None:
    """A kernel that cannot be split into windows binds each tensor whole: none may be larger
    than one buffer segment, or no binding of it could ever run."""
    for tensor in tensors:
        size = tensor.desc.total_tensor_size_in_bytes if tensor.role != "temporary" else tensor.size
        if size <= segment_size:
            continue
        what = {"input": f"graph input {tensor.index}", "output": f"graph output {tensor.index}"}.get(
            tensor.role, "an intermediate tensor" if tensor.desc is not None else "its scratch")
        nodes = f"GraphDesc.nodes[{group.root}] ({root_desc.schema.dml_name})"
        if len(group.nodes) > 1:
            nodes += f" and the nodes fused with it, {group.nodes[:-1]},"
        raise UnsupportedError(
            f"{nodes} binds {what} of {size} bytes, more than the {segment_size} bytes one binding of this device "
            f"reaches (maxStorageBufferRange and maxMemoryAllocationSize); its kernel (path {plan.path}) binds "
            f"each tensor whole, since only element-wise kernels over packed tensors are split into windows at that "
            f"limit: keep this node's tensors within {segment_size} bytes (split them over several nodes)")


def _fused_inputs(graph: GraphDesc, nodes: list[int], math: list, external: list[NodeInputSource],
                  first_tensor: int = 0, leading_scalars: tuple[float, ...] = (),
                  known: dict[int, e.Expr] | None = None):
    """A function giving the values a member node reads (each fused producer's result as the
    stored bits it would have written, an outside tensor as itself: e.tensor(first_tensor)
    and on), and the scalars the kernel pushes (`leading_scalars`, then the element-wise
    members'). `known` gives members whose value is not their math (a product's epilogue)."""
    members = set(nodes)
    offsets, scalars = {}, list(leading_scalars)
    for node in nodes:
        if math[node] is not None:
            offsets[node] = len(scalars)
            scalars += math[node].scalars
    made: dict[int, e.Expr] = dict(known or {})
    stored: dict[int, e.Expr] = {}  # a member's value as the bits it writes, one node however often read

    def value_of(node: int) -> e.Expr:
        if node not in made:
            made[node] = e.substitute(math[node].result, inputs_of(node), offsets[node])
        return made[node]

    def stored_value_of(node: int) -> e.Expr:
        if node not in stored:
            stored[node] = e.stored(value_of(node), graph.node_output_desc(node, 0).data_type)
        return stored[node]

    def inputs_of(node: int) -> list[e.Expr]:
        return [stored_value_of(source.node) if (source := graph.source(node, k)).node in members
                else e.tensor(first_tensor + external.index(source))
                for k in range(len(graph.desc_of(node).schema.inputs))]

    return value_of, inputs_of, tuple(scalars)


def _fused_epilogue(graph: GraphDesc, nodes: list[int], math: list, host: int, product: MatmulMath,
                    external: list[NodeInputSource]) -> tuple[e.Expr, tuple[float, ...]]:
    """The value the group's root stores, over the product's sum and epilogue inputs (e.tensor(0)
    and on, its scalars first) and then the chain's external tensors: the product's own
    epilogue is its output's value, stored as it would have been written."""
    value_of, _, scalars = _fused_inputs(graph, nodes, math, external, 1 + len(product.epilogue.inputs),
                                         tuple(product.epilogue.scalars), {host: product.epilogue.result})
    return value_of(nodes[-1]), scalars


def _fused_math(graph: GraphDesc, nodes: list[int], math: list, external: list[NodeInputSource]):
    """The expression of the group's root over the external inputs, and the scalars it pushes."""
    value_of, _, scalars = _fused_inputs(graph, nodes, math, external)
    return value_of(nodes[-1]), scalars


def _fused_reduction(graph: GraphDesc, nodes: list[int], math: list, reduction: ReductionMath,
                     external: list[NodeInputSource]):
    """The outputs of the group's root, a reduction, over the external inputs (its element-wise
    prologue substituted for the inputs it fuses), and the scalars the prologue pushes."""
    _, inputs_of, scalars = _fused_inputs(graph, nodes, math, external)
    inputs = inputs_of(nodes[-1])
    outputs = [(e.substitute(value, inputs, len(scalars)), per_row) for value, per_row in reduction.outputs]
    return outputs, scalars + tuple(reduction.scalars)
