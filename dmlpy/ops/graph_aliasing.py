"""Which output of a compiled operator or graph may be bound over which of its inputs.

An operator whose schema runs in place (each element read and written at one index, by one
invocation) lets any output be bound over any input with exactly the same range and strides.

A graph runs its kernels in order, a barrier between consecutive ones, so graph output k
may overlap graph input j in any way when every kernel that reads input j runs strictly
before the kernel that writes output k: the input is wholly read before its bytes change.
When the writing kernel reads input j itself, the binding must be exactly in place (the
same range and strides) and every node of that kernel reading input j, and the node
producing output k, must run in place. A kernel after the writer reading input j would read
the output's values instead: refused. A later kernel reading output k (an intermediate that
is also a graph output) reads what it should.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NONE, SAME_LAYOUT, ANY = "none", "same layout", "any"

# `compiled` below is the runtime's CompiledOperator or CompiledGraph, whose methods these are
# (runtime/device.py); this layer cannot name those classes, so it is typed Any.


@dataclass(frozen=True)
class Aliasing:
    """How an output may share an input's bytes: NONE, SAME_LAYOUT (exactly the same range
    and strides only) or ANY (any overlap); `reason` says what allows no more, for messages."""

    allowed: str
    reason: str = ""


def operator_aliasing(compiled: Any, output_index: int, input_index: int) -> Aliasing:
    """CompiledOperator.aliasable: the schema's in_place, for every output and input alike."""
    if compiled.desc.schema.in_place:
        return Aliasing(SAME_LAYOUT)
    return Aliasing(NONE, f"{compiled.name} does not run in place")


def graph_aliasing(compiled: Any, output_index: int, input_index: int) -> Aliasing:
    """CompiledGraph.aliasable: the rule above, from where its kernels (in the order they
    run) bind graph output `output_index` and graph input `input_index`."""
    graph, kernels = compiled.graph, compiled.kernels

    def binds(kernel, role: str, index: int) -> bool:
        return any(t.role == role and t.index == index for t in kernel.tensors)

    writer = next(k for k, kernel in enumerate(kernels) if binds(kernel, "output", output_index))
    readers = [k for k, kernel in enumerate(kernels) if binds(kernel, "input", input_index)]
    late = [k for k in readers if k > writer]
    if late:
        return Aliasing(NONE, f"kernel {late[0]} reads the input after kernel {writer} writes the output (an output "
                              "may share a graph input's bytes once every kernel reading the input has run)")
    if writer not in readers:
        return Aliasing(ANY)
    reading = {edge.to_node for edge in graph.input_edges if edge.graph_input_index == input_index}
    nodes = [n for n in kernels[writer].nodes if n in reading] + [graph.output_edge(output_index).from_node]
    for node in nodes:
        schema = graph.desc_of(node).schema
        if not schema.in_place:
            return Aliasing(NONE, f"kernel {writer} reads the input as it writes the output, and its node {node} "
                                  f"({schema.dml_name}) does not run in place")
    return Aliasing(SAME_LAYOUT, f"kernel {writer} reads the input as it writes the output: only exactly in place")
