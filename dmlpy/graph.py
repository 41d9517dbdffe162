"""Graph functions, one per operator, named and shaped as the NumPy front ends are:
`dmlpy.graph.relu(x)` adds an ACTIVATION_RELU node to x's GraphBuilder and returns its
output (see dmlpy/frontends/graph_builder.py). `chain` adds a node per step."""

from .frontends.graph_builder import FUNCTIONS, GraphBuilder, GraphValue, chain

globals().update(FUNCTIONS)

__all__ = ["GraphBuilder", "GraphValue", "chain", *FUNCTIONS]
