"""Graph functions, one per operator, named and shaped as the NumPy front ends are:
`dmlpy.graph.relu(x)` adds an ACTIVATION_RELU node to x's GraphBuilder and returns its
output (see dmlpy/frontends/graph_builder.py). `chain` adds a node per step."""

from .frontends.graph_builder import FUNCTIONS, GraphBuilder, GraphValue, chain
from .frontends.reductions import FRONT_ENDS as _REDUCTION_FRONT_ENDS
from .ops.elementwise_family import directml_names as _directml_names

# DirectML's names (logical_greater_than, if_) for the element-wise operators named as NumPy names them, as in
# the front ends (MAX, MIN and MEAN's are NumPy's reductions there, so not graph functions here either).
_DIRECTML_NAMES = {name: FUNCTIONS[operator] for name, operator in _directml_names(_REDUCTION_FRONT_ENDS).items()}
globals().update(FUNCTIONS)
globals().update(_DIRECTML_NAMES)

__all__ = ["GraphBuilder", "GraphValue", "chain", *FUNCTIONS, *_DIRECTML_NAMES]
