"""Every operator dmlpy declares, by family: importing this module declares them all, so
that what is built over OPERATORS (front ends, graph functions, docs) sees each one."""

from . import (  # noqa: F401
    activation_family,
    activations,
    elementwise,
    elementwise_family,
    gemm,
    generation,
    optimizers,
    prelu_grad,
    random,
    reductions,
)
from .schema import OPERATORS

FAMILIES = (activation_family.FAMILY, elementwise_family.FAMILY, prelu_grad.FAMILY, reductions.FAMILY, gemm.FAMILY,
            random.FAMILY, generation.FAMILY, optimizers.FAMILY)

__all__ = ["FAMILIES", "OPERATORS"]
