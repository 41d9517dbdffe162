"""Every operator dmlpy declares, by family: importing this module declares them all, so
that what is built over OPERATORS (front ends, graph functions, docs) sees each one."""

from . import activation_family, activations, elementwise, elementwise_family, gemm, prelu_grad, reductions  # noqa: F401
from .schema import OPERATORS

FAMILIES = (activation_family.FAMILY, elementwise_family.FAMILY, prelu_grad.FAMILY, reductions.FAMILY, gemm.FAMILY)

__all__ = ["FAMILIES", "OPERATORS"]
