"""DirectML's graphs (IDMLDevice1::CompileGraph) and a builder over them.

A `GraphDesc` joins operators (nodes) with edges: graph inputs to node inputs, node outputs
to node inputs, node outputs to graph outputs. `device.compile_graph` turns it into one
compiled operator whose element-wise chains run as fused kernels (see fusion.py).

The builder is DirectMLX's idea in Python: `GraphBuilder(device)` hands out graph inputs,
the functions of this module (`dmlpy.graph.tanh`, `dmlpy.graph.relu_grad`, ..., one per
operator of the table, named as the NumPy front ends are) add nodes, and `build` compiles.

Rules, DirectML's unless marked (each broken one is an InvalidArgumentError naming the node
and the edge by index):
- every node input has exactly one edge; every node output at least one;
- every graph output has exactly one edge, and every graph input at least one (dmlpy: an
  input nothing reads is taken for a mistake);
- an intermediate edge joins a node output and a node input with the same tensor desc, and
  every edge from one graph input carries the same desc, which is the graph input's;
- the nodes and intermediate edges form no cycle;
- a node output feeds at most one graph output (dmlpy: two would need a copy).
"""

from __future__ import annotations

import dataclasses
import heapq
import inspect
import operator as _operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import activations, operators  # noqa: F401  (they declare the operators the builder offers)
from .errors import InvalidArgumentError, shown
from .schema import OPERATORS, OperatorDesc, OperatorSchema, schema_of
from .tensor_desc import BufferTensorDesc


def _index(value, what: str, count: int, of: str) -> int:
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} {value!r} must be an integer, not a bool")
    try:
        number = _operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{what} {shown(value)} must be an integer") from None
    except Exception as error:  # an __index__ may do anything
        raise InvalidArgumentError(f"{what} {shown(value)} must be an integer (its __index__ raised {error!r})") \
            from None
    if not 0 <= number < count:
        limits = f"0 to {shown(count - 1)}" if count else "none"
        raise InvalidArgumentError(f"{what} {shown(number)} is out of range: {of} ({limits})")
    return number


@dataclass(frozen=True)
class GraphInputEdge:
    """DML_INPUT_GRAPH_EDGE_DESC: graph input `graph_input_index` feeds input
    `to_node_input_index` of node `to_node`."""

    graph_input_index: int
    to_node: int
    to_node_input_index: int


@dataclass(frozen=True)
class GraphOutputEdge:
    """DML_OUTPUT_GRAPH_EDGE_DESC: output `from_node_output_index` of node `from_node` is
    graph output `graph_output_index`."""

    from_node: int
    from_node_output_index: int
    graph_output_index: int


@dataclass(frozen=True)
class GraphIntermediateEdge:
    """DML_INTERMEDIATE_GRAPH_EDGE_DESC: an output of one node feeds an input of another."""

    from_node: int
    from_node_output_index: int
    to_node: int
    to_node_input_index: int


@dataclass(frozen=True)
class NodeInputSource:
    """What feeds a node input: graph input `index` (node None) or output `index` of `node`."""

    node: int | None
    index: int


def node_desc(node) -> OperatorDesc:
    """The operator desc of a node (an Operator's own copy, or the desc itself)."""
    return node if isinstance(node, OperatorDesc) else node.desc


def _tensor_name(schema: OperatorSchema, role: str, index: int) -> str:
    fields = schema.inputs if role == "input" else schema.outputs
    return f"{role} {index} ({fields[index].dml_name})"


@dataclass(frozen=True)
class GraphDesc:
    """DML_GRAPH_DESC. `nodes` are operators (from `device.create_operator`) or operator
    descs; the edge lists hold GraphInputEdge, GraphOutputEdge and GraphIntermediateEdge.
    Everything is checked and copied when it is constructed: later changes to the caller's
    objects never reach it. What feeds each node input, each graph input's and output's edge
    and the nodes' order are indexed then too, so compiling takes time linear in the graph."""

    input_count: int
    output_count: int
    nodes: tuple
    input_edges: tuple[GraphInputEdge, ...] = ()
    output_edges: tuple[GraphOutputEdge, ...] = ()
    intermediate_edges: tuple[GraphIntermediateEdge, ...] = ()

    def __post_init__(self):
        for name in ("input_count", "output_count"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"GraphDesc.{name} {shown(value)} must be an integer of at least 1", name)
        nodes = self._sequence("nodes")
        if not nodes:
            raise InvalidArgumentError("GraphDesc.nodes is empty: a graph has at least one node", "nodes")
        own_nodes, descs = zip(*(_own_node(i, node) for i, node in enumerate(nodes)))
        object.__setattr__(self, "nodes", own_nodes)
        object.__setattr__(self, "_descs", descs)
        schemas = [schema_of(desc) for desc in descs]
        count = len(own_nodes)

        def copy_edges(name: str, kind: type, fields: tuple[tuple[str, object], ...]):
            edges = []
            for k, edge in enumerate(self._sequence(name)):
                if not isinstance(edge, kind):
                    raise InvalidArgumentError(
                        f"GraphDesc.{name}[{k}] must be a {kind.__name__}, not {type(edge).__name__}", name)
                values = {}
                for field, limit in fields:
                    where = f"GraphDesc.{name}[{k}].{field}"
                    if callable(limit):
                        bound, of = limit(values)
                    else:
                        bound, of = limit
                    try:
                        value = getattr(edge, field)
                    except Exception as error:  # a subclass may do anything in a property
                        raise InvalidArgumentError(f"{where} could not be read: {error!r}", name) from None
                    values[field] = _index(value, where, bound, of)
                edges.append(kind(**values))
            object.__setattr__(self, name, tuple(edges))

        nodes_range = (count, f"the graph has {count} nodes")

        def inputs_of(node_field):
            return lambda values: (len(schemas[values[node_field]].inputs),
                                   f"node {values[node_field]} ({schemas[values[node_field]].dml_name}) has "
                                   f"{len(schemas[values[node_field]].inputs)} inputs")

        def outputs_of(node_field):
            return lambda values: (len(schemas[values[node_field]].outputs),
                                   f"node {values[node_field]} ({schemas[values[node_field]].dml_name}) has "
                                   f"{len(schemas[values[node_field]].outputs)} outputs")

        copy_edges("input_edges", GraphInputEdge, (
            ("graph_input_index", (self.input_count, f"the graph has {shown(self.input_count)} inputs")),
            ("to_node", nodes_range), ("to_node_input_index", inputs_of("to_node"))))
        copy_edges("output_edges", GraphOutputEdge, (
            ("from_node", nodes_range), ("from_node_output_index", outputs_of("from_node")),
            ("graph_output_index", (self.output_count, f"the graph has {shown(self.output_count)} outputs"))))
        copy_edges("intermediate_edges", GraphIntermediateEdge, (
            ("from_node", nodes_range), ("from_node_output_index", outputs_of("from_node")),
            ("to_node", nodes_range), ("to_node_input_index", inputs_of("to_node"))))
        self._check_connections(schemas)
        self._check_descs(schemas)
        object.__setattr__(self, "_order", self._topological_order())  # raises on a cycle

    def _sequence(self, name: str) -> tuple:
        value = getattr(self, name)
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise InvalidArgumentError(f"GraphDesc.{name} must be a list, not {type(value).__name__}", name)
        return tuple(value)

    def _check_connections(self, schemas: list[OperatorSchema]) -> None:
        """Check every rule on who feeds whom, and index the edges: what feeds each node input,
        each graph input's first edge, each graph output's edge."""
        fed: dict[tuple[int, int], str] = {}
        sources: dict[tuple[int, int], NodeInputSource] = {}
        for name, edges in (("input_edges", self.input_edges), ("intermediate_edges", self.intermediate_edges)):
            for k, edge in enumerate(edges):
                key = (edge.to_node, edge.to_node_input_index)
                if key in fed:
                    raise InvalidArgumentError(
                        f"{name}[{k}]: node {edge.to_node} {_tensor_name(schemas[edge.to_node], 'input', key[1])} "
                        f"is already fed by {fed[key]}: every node input has exactly one edge", name)
                fed[key] = f"{name}[{k}]"
                sources[key] = NodeInputSource(None, edge.graph_input_index) if name == "input_edges" \
                    else NodeInputSource(edge.from_node, edge.from_node_output_index)
        for node, schema in enumerate(schemas):
            for i in range(len(schema.inputs)):
                if (node, i) not in fed:
                    raise InvalidArgumentError(
                        f"node {node} ({schema.dml_name}) {_tensor_name(schema, 'input', i)} has no edge: every node "
                        "input has exactly one edge", "input_edges")
        first_edges: dict[int, GraphInputEdge] = {}
        for edge in self.input_edges:
            first_edges.setdefault(edge.graph_input_index, edge)
        # Indexes past the edges' count cannot all have one: the first without one is below it.
        for index in range(min(self.input_count, len(first_edges) + 1)):
            if index not in first_edges:
                raise InvalidArgumentError(f"graph input {index} has no edge: every graph input feeds a node",
                                           "input_edges")
        graph_outputs: dict[int, int] = {}
        as_output: dict[tuple[int, int], int] = {}
        for k, edge in enumerate(self.output_edges):
            if edge.graph_output_index in graph_outputs:
                raise InvalidArgumentError(
                    f"output_edges[{k}]: graph output {edge.graph_output_index} already has "
                    f"output_edges[{graph_outputs[edge.graph_output_index]}]: every graph output has exactly one edge",
                    "output_edges")
            source = (edge.from_node, edge.from_node_output_index)
            if source in as_output:
                raise InvalidArgumentError(
                    f"output_edges[{k}]: node {edge.from_node} "
                    f"{_tensor_name(schemas[edge.from_node], 'output', source[1])} is already graph output "
                    f"{self.output_edges[as_output[source]].graph_output_index}: a node output is at most one graph "
                    "output", "output_edges")
            graph_outputs[edge.graph_output_index] = k
            as_output[source] = k
        for index in range(min(self.output_count, len(graph_outputs) + 1)):
            if index not in graph_outputs:
                raise InvalidArgumentError(f"graph output {index} has no edge: every graph output has exactly one",
                                           "output_edges")
        read = set(as_output) | {(e.from_node, e.from_node_output_index) for e in self.intermediate_edges}
        for node, schema in enumerate(schemas):
            for o in range(len(schema.outputs)):
                if (node, o) not in read:
                    raise InvalidArgumentError(
                        f"node {node} ({schema.dml_name}) {_tensor_name(schema, 'output', o)} has no edge: every "
                        "node output feeds a node or a graph output", "output_edges")
        object.__setattr__(self, "_sources", sources)
        object.__setattr__(self, "_first_input_edges", first_edges)
        object.__setattr__(self, "_output_edges_by_index", {i: self.output_edges[k] for i, k in graph_outputs.items()})

    def _check_descs(self, schemas: list[OperatorSchema]) -> None:
        for k, edge in enumerate(self.input_edges):
            desc = self.node_input_desc(edge.to_node, edge.to_node_input_index)
            other = self._first_input_edges[edge.graph_input_index]
            expected = self.node_input_desc(other.to_node, other.to_node_input_index)
            if desc != expected:
                j = self.input_edges.index(other)
                raise InvalidArgumentError(
                    f"input_edges[{k}]: graph input {edge.graph_input_index} reaches node {edge.to_node} "
                    f"{_tensor_name(schemas[edge.to_node], 'input', edge.to_node_input_index)} as {desc!r} but node "
                    f"{other.to_node} (input_edges[{j}]) as {expected!r}: every edge from a graph input carries "
                    "the same tensor desc", "input_edges")
        for k, edge in enumerate(self.intermediate_edges):
            produced = self.node_output_desc(edge.from_node, edge.from_node_output_index)
            consumed = self.node_input_desc(edge.to_node, edge.to_node_input_index)
            if produced != consumed:
                raise InvalidArgumentError(
                    f"intermediate_edges[{k}]: node {edge.from_node} "
                    f"{_tensor_name(schemas[edge.from_node], 'output', edge.from_node_output_index)} is "
                    f"{produced!r} but node {edge.to_node} "
                    f"{_tensor_name(schemas[edge.to_node], 'input', edge.to_node_input_index)} is {consumed!r}: an "
                    "intermediate edge joins tensors with the same desc", "intermediate_edges")

    def _topological_order(self) -> tuple[int, ...]:
        """Kahn's algorithm, the ready nodes in a heap: at each step the lowest-index node whose
        producers are all placed."""
        count = len(self.nodes)
        waiting = [0] * count  # per node: its intermediate edges from nodes not yet placed
        readers: list[list[int]] = [[] for _ in range(count)]
        for edge in self.intermediate_edges:
            waiting[edge.to_node] += 1
            readers[edge.from_node].append(edge.to_node)
        ready = [node for node in range(count) if not waiting[node]]  # ascending: already a heap
        ordered = []
        while ready:
            node = heapq.heappop(ready)
            ordered.append(node)
            for reader in readers[node]:
                waiting[reader] -= 1
                if not waiting[reader]:
                    heapq.heappush(ready, reader)
        if len(ordered) < count:
            stuck = sorted(set(range(count)) - set(ordered))
            members = set(stuck)
            cycle = [k for k, edge in enumerate(self.intermediate_edges)
                     if edge.from_node in members and edge.to_node in members]
            raise InvalidArgumentError(f"nodes {stuck} form a cycle through intermediate_edges {cycle}: a graph is "
                                       "acyclic", "intermediate_edges")
        return tuple(ordered)

    def desc_of(self, node: int) -> OperatorDesc:
        """The operator desc of `node`, as it was when this GraphDesc was checked."""
        return self._descs[node]

    def node_input_desc(self, node: int, index: int) -> BufferTensorDesc:
        desc = self._descs[node]
        return getattr(desc, desc.schema.inputs[index].name)

    def node_output_desc(self, node: int, index: int) -> BufferTensorDesc:
        desc = self._descs[node]
        return getattr(desc, desc.schema.outputs[index].name)

    def source(self, node: int, index: int) -> NodeInputSource:
        """What feeds input `index` of `node`."""
        return self._sources[node, index]

    def input_desc(self, index: int) -> BufferTensorDesc:
        edge = self._first_input_edges[index]
        return self.node_input_desc(edge.to_node, edge.to_node_input_index)

    def output_edge(self, index: int) -> GraphOutputEdge:
        return self._output_edges_by_index[index]

    def order(self) -> list[int]:
        """The nodes in an order where each comes after those it reads (the lowest index first
        among the ready ones)."""
        return list(self._order)

    def copy(self) -> GraphDesc:
        """A new GraphDesc of these values, checked again (what compile_graph works from)."""
        return GraphDesc(self.input_count, self.output_count, self.nodes, self.input_edges, self.output_edges,
                         self.intermediate_edges)


def _own_node(i: int, node) -> tuple:
    """(the node as a GraphDesc keeps it, its operator desc copied and checked): an Operator
    stays itself (compile_graph checks it is the device's), a desc becomes its copy."""
    from .device import Operator  # the device module builds on this one

    where = f"GraphDesc.nodes[{i}]"
    if isinstance(node, Operator):
        try:  # the attribute can be reassigned or deleted
            desc = node.desc
        except Exception as error:
            raise InvalidArgumentError(f"{where} is an Operator whose desc could not be read: {error!r}",
                                       "nodes") from None
        if schema_of(desc) is None:
            raise InvalidArgumentError(f"{where} is an Operator whose desc {shown(desc)} is not an operator desc: "
                                       "an Operator's desc is the one create_operator gave it", "nodes")
    elif schema_of(node) is None:
        raise InvalidArgumentError(f"{where} must be an Operator or an operator desc, not {type(node).__name__}",
                                   "nodes")
    else:
        desc = node
    try:
        copied = schema_of(desc).copy(desc)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"{where}: {error.message}", error.field) from None
    return (node if isinstance(node, Operator) else copied), copied


@dataclass(frozen=True, eq=False)
class GraphValue:
    """A tensor of a graph being built: graph input `index` (node None) or output `index` of
    `node`. Its builder checks that it is one it made, unchanged, wherever it is used."""

    builder: GraphBuilder
    desc: BufferTensorDesc
    node: int | None
    index: int

    def __repr__(self) -> str:
        where = f"input {self.index}" if self.node is None else f"node {self.node} output {self.index}"
        return f"<dmlpy.graph.GraphValue {where}: {self.desc!r}>"


class GraphBuilder:
    """Builds a GraphDesc node by node, in DirectMLX's style:

        g = dmlpy.GraphBuilder(device)
        x = g.input(dmlpy.BufferTensorDesc(dmlpy.TensorDataType.FLOAT32, (1024,)))
        y = dmlpy.graph.tanh(dmlpy.graph.linear(x, alpha=2.0, beta=1.0))
        compiled = g.build([y])

    Graph inputs bind in the order `input()` was called; outputs in the order given to
    `build`. A node's outputs are packed, with its first input's data type and sizes."""

    def __init__(self, device=None):
        from .device import Device  # the device module builds on this one

        if device is not None and not isinstance(device, Device):
            raise InvalidArgumentError(f"device must be a dmlpy Device (or None: graph_desc only), not "
                                       f"{type(device).__name__}")
        self.device = device
        self.inputs: list[GraphValue] = []
        self.nodes: list[OperatorDesc] = []
        # (source node (None: a graph input), its output or graph input index, to_node, to_node_input_index)
        self.edges: list[tuple[int | None, int, int, int]] = []
        # What each value handed out was made as: a frozen GraphValue can still be changed
        # with object.__setattr__, and no changed one may reach a GraphDesc.
        self._made: dict[GraphValue, tuple[int | None, int, BufferTensorDesc]] = {}

    def __repr__(self) -> str:
        return f"<dmlpy.GraphBuilder {len(self.inputs)} inputs, {len(self.nodes)} nodes>"

    def input(self, desc: BufferTensorDesc) -> GraphValue:
        """A new graph input with this tensor desc."""
        value = self._value(BufferTensorDesc.copy_of(desc, "desc"), None, len(self.inputs))
        self.inputs.append(value)
        return value

    def add(self, desc: OperatorDesc, sources: Sequence[GraphValue]) -> tuple[GraphValue, ...]:
        """Add a node running (a copy of) `desc`, its inputs fed by `sources`, one per input of
        the operator; returns its outputs."""
        schema = schema_of(desc)
        if schema is None:
            raise InvalidArgumentError(f"desc must be an operator desc, not {type(desc).__name__}", "type")
        count = len(schema.inputs)
        if isinstance(sources, GraphValue) or not isinstance(sources, Sequence) or len(sources) != count:
            raise InvalidArgumentError(f"sources must be a list of {count} GraphValues, one per input of "
                                       f"{schema.dml_name}, not {shown(sources)}")
        for k, source in enumerate(sources):
            self._check_own(source, f"sources[{k}]")
        return self._append(schema.copy(desc), list(sources))

    def _append(self, desc: OperatorDesc, sources: list[GraphValue]) -> tuple[GraphValue, ...]:
        """Add a node whose desc is the builder's own and whose sources were checked."""
        node = len(self.nodes)
        self.nodes.append(desc)
        self.edges += [(*self._made[source][:2], node, k) for k, source in enumerate(sources)]
        return tuple(self._value(getattr(desc, field.name), node, k) for k, field in enumerate(desc.schema.outputs))

    def _value(self, desc: BufferTensorDesc, node: int | None, index: int) -> GraphValue:
        value = GraphValue(self, desc, node, index)
        self._made[value] = (node, index, desc)
        return value

    def graph_desc(self, outputs: Sequence[GraphValue]) -> GraphDesc:
        """The GraphDesc of what was built, with `outputs` as the graph's outputs. Nodes that
        none of them needs are left out."""
        if isinstance(outputs, GraphValue) or not isinstance(outputs, Sequence) or not outputs:
            raise InvalidArgumentError("outputs must be a non-empty list of GraphValues")
        for k, value in enumerate(outputs):
            self._check_own(value, f"outputs[{k}]")
            if value.node is None:
                raise InvalidArgumentError(f"outputs[{k}] is graph input {value.index}: an output comes from a node")
        producers: list[list[int]] = [[] for _ in self.nodes]  # per node: the nodes it reads
        for source, _, to, _ in self.edges:
            if source is not None:
                producers[to].append(source)
        needed, stack = set(), [v.node for v in outputs]
        while stack:
            node = stack.pop()
            if node not in needed:
                needed.add(node)
                stack += producers[node]
        kept = sorted(needed)
        renumbered = {old: new for new, old in enumerate(kept)}
        input_edges, intermediate_edges = [], []
        for source, index, to, k in self.edges:
            if to not in needed:
                continue
            if source is None:
                input_edges.append(GraphInputEdge(index, renumbered[to], k))
            else:
                intermediate_edges.append(GraphIntermediateEdge(renumbered[source], index, renumbered[to], k))
        output_edges = [GraphOutputEdge(renumbered[v.node], v.index, k) for k, v in enumerate(outputs)]
        return GraphDesc(len(self.inputs), len(outputs), [self.nodes[n] for n in kept], input_edges, output_edges,
                         intermediate_edges)

    def build(self, outputs: Sequence[GraphValue], flags=None):
        """Compile the graph on the builder's device (device.compile_graph)."""
        from .types import ExecutionFlags

        if self.device is None:
            raise InvalidArgumentError("this GraphBuilder has no device: use graph_desc(), or GraphBuilder(device)")
        return self.device.compile_graph(self.graph_desc(outputs), ExecutionFlags.NONE if flags is None else flags)

    def _check_own(self, value, what: str) -> None:
        if not isinstance(value, GraphValue):
            raise InvalidArgumentError(f"{what} must be a GraphValue (from GraphBuilder.input or a graph function), "
                                       f"not {type(value).__name__}")
        if value.builder is not self:
            raise InvalidArgumentError(f"{what} belongs to another GraphBuilder")
        made = self._made.get(value)
        if made is None or any(was is not now for was, now in zip(made, (value.node, value.index, value.desc))):
            raise InvalidArgumentError(
                f"{what} was changed after this GraphBuilder made it (node {shown(value.node)}, index "
                f"{shown(value.index)}): a GraphValue is what GraphBuilder.input or a graph function returned")


def chain(value: GraphValue, steps: Sequence[tuple[str, dict]], others: GraphValue | None = None) -> GraphValue:
    """Add a node per step (an operator's name and its fields), each reading the value before
    it as its last input (a forward's X, a gradient's dY) and `others` (default: `value`) as
    the rest: a chain of forwards, or a backward pass's gradients of one X."""
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise InvalidArgumentError(f"steps must be a list of (operator name, fields) pairs, not {type(steps).__name__}")
    others = value if others is None else others
    for k, step in enumerate(steps):
        if not (isinstance(step, (tuple, list)) and len(step) == 2 and isinstance(step[0], str)
                and step[0] in OPERATORS and isinstance(step[1], Mapping) and all(isinstance(f, str) for f in step[1])):
            raise InvalidArgumentError(f"steps[{k}] {shown(step)} must be a pair (operator name, dict of its fields) "
                                       "with a name from dmlpy.OPERATORS")
        name, fields = step
        schema = OPERATORS[name]
        value = FUNCTIONS[name](*[others] * (len(schema.inputs) - 1), value, **fields)
    return value


# The argument each input of an operator becomes, as in the NumPy front end.
ARGUMENT_NAMES = {"input_tensor": "x", "input_gradient_tensor": "dy", "slope_tensor": "slope"}


def builder_function(schema: OperatorSchema):
    """The graph function of an operator: its inputs as GraphValues of one builder, its
    scalars, flags, choices and axes as keywords with the desc's defaults; it returns the
    node's output (a tuple of them for several)."""
    arguments = [ARGUMENT_NAMES[field.name] for field in schema.inputs]
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [inspect.Parameter(name, positional) for name in arguments]
    others = [f for f in dataclasses.fields(schema.desc_class) if f.name not in {t.name for t in schema.tensors}]
    parameters += [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                                     default=inspect.Parameter.empty if f.default is dataclasses.MISSING
                                     else f.default) for f in others]
    signature = inspect.Signature(parameters)

    def add(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise InvalidArgumentError(f"dmlpy.graph.{schema.name}{signature}: {error}") from None
        bound.apply_defaults()
        values = bound.arguments
        sources = [values[name] for name in arguments]
        first = sources[0]
        if not isinstance(first, GraphValue):
            raise InvalidArgumentError(f"{arguments[0]} must be a GraphValue, not {type(first).__name__}")
        builder = first.builder
        for name, source in zip(arguments, sources):
            builder._check_own(source, name)
        fields = {f.name: values[f.name] for f in others}
        tensors = {field.name: source.desc for field, source in zip(schema.inputs, sources)}
        sizes = {field.name: first.desc.sizes for field in schema.outputs}
        if schema.output_sizes is not None:  # outputs shaped otherwise (PReLU's slope gradient)
            sizes.update(schema.output_sizes(tensors))
        tensors.update({name: BufferTensorDesc(first.desc.data_type, s) for name, s in sizes.items()})
        desc = schema.desc_class(**tensors, **fields)
        outputs = builder._append(desc, sources)
        return outputs[0] if len(outputs) == 1 else outputs

    add.__name__ = add.__qualname__ = schema.name
    add.__signature__ = signature
    add.__doc__ = f"Add an {schema.dml_name} node: {schema.formula}."
    add.__module__ = __name__
    return add


FUNCTIONS = {name: builder_function(schema) for name, schema in OPERATORS.items()}
globals().update(FUNCTIONS)
