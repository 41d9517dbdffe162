"""The family: what an operator's declaration shares with its neighbours. Each operator is
one declaration inside its family, and the family says what the layers above build from it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class KernelKind(enum.Enum):
    """What kind of kernel a family's operators become."""

    ELEMENTWISE = "element-wise"  # each output element from the inputs' elements at its index; graphs fuse chains
    REDUCTION = "reduction"  # outputs depend on sums or maxima over rows (shaders/reduce.comp)
    EPILOGUE_HOST = "epilogue host"  # an output an element-wise epilogue may fuse into (GEMM, convolution)
    OPAQUE = "opaque"  # its own kernel; nothing fuses into it


class FrontEndShape(enum.Enum):
    """How a family's NumPy front end and graph function take their arguments."""

    BROADCAST = "broadcast"  # inputs broadcast together (NumPy's rule); one output of their shape
    ROWWISE = "row-wise"  # as BROADCAST, plus `axes`: None is the axis-less form, a tuple the *1 form
    OWN = "own"  # a front-end module of its own (frontends/), for shapes NumPy's rules do not give


@dataclass(frozen=True)
class Family:
    name: str  # e.g. "activations"
    kernel_kind: KernelKind  # the kind most of its operators become (an operator's schema says its own)
    front_end: FrontEndShape
    module: str  # the module that declares its operators, e.g. "dmlpy/ops/activations.py"
    summary: str  # one line, for the docs
