"""The graph builder, DirectMLX's idea in Python: `GraphBuilder(device)` hands out graph
inputs, the functions of `dmlpy.graph` (`dmlpy.graph.tanh`, `dmlpy.graph.relu_grad`, ..., one
per operator, named and shaped as the NumPy front ends are) add nodes, and `build` compiles
the GraphDesc (dmlpy/ops/graph.py) on the builder's device."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..base.errors import InvalidArgumentError, shown
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import ExecutionFlags
from ..ops.catalogue import OPERATORS
from ..ops.graph import GraphDesc, GraphInputEdge, GraphIntermediateEdge, GraphOutputEdge
from ..ops.schema import OperatorDesc, OperatorSchema, schema_of
from ..runtime.device import CompiledGraph, Device
from .result_types import free_output, output_data_type


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

    def __init__(self, device: Device | None = None):
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
                                       f"{schema.dml_name} (None for one its desc leaves out), not {shown(sources)}")
        for k, (field, source) in enumerate(zip(schema.inputs, sources)):
            if source is None and getattr(desc, field.name, None) is None and field.optional:
                continue  # DirectML's null input: no edge
            if source is None:
                raise InvalidArgumentError(f"sources[{k}] is None but {schema.dml_name}'s {field.dml_name} is in the "
                                           "desc: only an input the desc leaves out (None) takes None")
            self._check_own(source, f"sources[{k}]")
            if getattr(desc, field.name, None) is None:
                raise InvalidArgumentError(f"sources[{k}] is a GraphValue but the desc's {field.name} is None: an "
                                           "input the desc leaves out takes None")
        schema.check_bound(desc, "a graph")
        return self._append(schema.copy(desc), list(sources))

    def _append(self, desc: OperatorDesc, sources: list[GraphValue]) -> tuple[GraphValue, ...]:
        """Add a node whose desc is the builder's own and whose sources were checked."""
        node = len(self.nodes)
        self.nodes.append(desc)
        self.edges += [(*self._made[source][:2], node, k) for k, source in enumerate(sources) if source is not None]
        return tuple(None if getattr(desc, field.name) is None else self._value(getattr(desc, field.name), node, k)
                     for k, field in enumerate(desc.schema.outputs))  # None: an output the desc leaves out

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

    def build(self, outputs: Sequence[GraphValue], flags: ExecutionFlags | None = None) -> CompiledGraph:
        """Compile the graph on the builder's device (device.compile_graph)."""
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




def builder_function(schema: OperatorSchema):
    """The graph function of an operator: its inputs as GraphValues of one builder, its
    other fields (scalars, flags, choices, axes, enums, integer lists, a ScaleBias, a fused
    activation) as keywords with the desc's defaults; it returns the node's output (a tuple
    of them for several)."""
    arguments = [field.argument for field in schema.inputs]
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    # An optional input with only optional inputs after it defaults to None (DirectML's null).
    parameters = [inspect.Parameter(field.argument, positional, default=None if all(
        f.optional for f in schema.inputs[k:]) else inspect.Parameter.empty) for k, field in enumerate(schema.inputs)]
    others = [f for f in dataclasses.fields(schema.desc_class) if f.name not in {t.name for t in schema.tensors}]
    parameters += [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                                     default=inspect.Parameter.empty if f.default is dataclasses.MISSING
                                     else f.default) for f in others]
    if free_output(schema):  # CAST: the output's data type, after the inputs
        parameters.insert(len(arguments), inspect.Parameter("dtype", positional))
    sizing = schema.sizing_argument  # ONE_HOT's depth: what sizes its output
    if sizing is not None:
        parameters.append(inspect.Parameter(sizing.name, inspect.Parameter.KEYWORD_ONLY))
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
        for field, source in zip(schema.inputs, sources):
            if source is None and field.optional:  # DirectML's null: the node's desc leaves it out
                continue
            builder._check_own(source, field.argument)
        fields = {f.name: values[f.name] for f in others}
        sized = {}
        if sizing is not None:
            sizing.check(sizing.name, values[sizing.name])
            sized[sizing.name] = int(values[sizing.name])
        tensors = {field.name: None if source is None else source.desc for field, source in zip(schema.inputs, sources)}
        sizes = {field.name: first.desc.sizes for field in schema.outputs}
        if schema.output_sizes is not None:  # outputs shaped otherwise (PReLU's slope gradient, REDUCE's)
            sizes.update(schema.output_sizes(tensors, {**fields, **sized}))
        requested = BufferTensorDesc(values["dtype"], (1,)).data_type if "dtype" in values else None
        result_type = schema.output_data_type(tensors, fields) if schema.output_data_type is not None else \
            output_data_type(schema, {f.argument: s.desc.data_type for f, s in zip(schema.inputs, sources)
                                      if s is not None}, requested)
        tensors.update({name: BufferTensorDesc(result_type, s) for name, s in sizes.items()})
        desc = schema.desc_class(**tensors, **fields)
        outputs = builder._append(desc, sources)
        return outputs[0] if len(outputs) == 1 else outputs

    add.__name__ = add.__qualname__ = schema.name
    add.__signature__ = signature
    add.__doc__ = f"Add an {schema.dml_name} node: {schema.formula}."
    add.__module__ = __name__
    return add


FUNCTIONS = {name: builder_function(schema) for name, schema in OPERATORS.items()}
