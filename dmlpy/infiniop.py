"""InfiniCore's operator lifecycle (create, workspace size, compute, destroy, with status
codes) over dmlpy's operators: see dmlpy/frontends/infiniop.py."""

from .frontends import infiniop as _lifecycles
from .frontends.infiniop import *  # noqa: F403

__all__ = list(_lifecycles.__all__)
