"""DirectML's graphs (IDMLDevice1::CompileGraph): the GraphDesc and its rules.

A `GraphDesc` joins operators (nodes) with edges: graph inputs to node inputs, node outputs
to node inputs, node outputs to graph outputs. `device.compile_graph` turns it into one
compiled operator whose element-wise chains run as fused kernels (see fusion.py).

The builder over it (GraphBuilder and the functions of `dmlpy.graph`) is a front end:
dmlpy/frontends/graph_builder.py.

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

import heapq
import operator as _operator
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.errors import InvalidArgumentError, shown
from ..base.tensor_desc import BufferTensorDesc
from .schema import Operator, OperatorDesc, OperatorSchema, schema_of


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
            for i, field in enumerate(schema.inputs):
                absent = getattr(self._descs[node], field.name) is None  # DirectML's null: no edge feeds it
                if absent and (node, i) in fed:
                    raise InvalidArgumentError(
                        f"{fed[node, i]}: node {node} ({schema.dml_name}) {_tensor_name(schema, 'input', i)} is None "
                        "in the node's desc: an input it leaves out takes no edge", "input_edges")
                if not absent and (node, i) not in fed:
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
            for o, field in enumerate(schema.outputs):
                absent = getattr(self._descs[node], field.name) is None  # DirectML's null output: nothing reads it
                if absent and (node, o) in read:
                    raise InvalidArgumentError(
                        f"node {node} ({schema.dml_name}) {_tensor_name(schema, 'output', o)} is None in the node's "
                        "desc: an output it leaves out has no edge", "output_edges")
                if not absent and (node, o) not in read:
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

    def source(self, node: int, index: int) -> NodeInputSource | None:
        """What feeds input `index` of `node`; None for an optional input its desc leaves out."""
        return self._sources.get((node, index))

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
