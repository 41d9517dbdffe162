"""Every operator dmlpy declares, by family: importing this module declares them all, so
that what is built over OPERATORS (front ends, graph functions, docs) sees each one."""

from . import activations, prelu_grad
from .schema import OPERATORS

FAMILIES = (activations, prelu_grad)

__all__ = ["FAMILIES", "OPERATORS"]
