"""The NumPy front end of the random family: `random_generator`, DirectML's RANDOM_GENERATOR
on a six-word Philox 4x32-10 state, giving the bits and the state for the next call."""

from __future__ import annotations

import operator

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import InvalidArgumentError, shown
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType
from ..ops.random import PHILOX_STATE_WORDS, RandomGeneratorOperatorDesc
from ..runtime.device import Device
from .arrays import as_array, as_device
from .call_cache import run_bound

MAX_DIMS = 8  # DirectML's OutputTensor: 1 to 8 dimensions from FEATURE_LEVEL_4_0
STATE_SIZES = (1, 1, 1, PHILOX_STATE_WORDS)  # {1,1,1,6}: accepted from FEATURE_LEVEL_3_0


def _shape(shape) -> tuple[int, ...]:
    try:
        dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(map(operator.index, shape))
    except TypeError:
        raise InvalidArgumentError(f"shape {shown(shape)} must be an int or a tuple of ints", "shape") from None
    if not 1 <= len(dims) <= MAX_DIMS or any(d < 1 for d in dims):
        raise InvalidArgumentError(
            f"shape {dims} must have 1 to {MAX_DIMS} dims, each at least 1: RANDOM_GENERATOR's OutputTensor",
            "shape")
    return dims


def random_generator(state: ArrayLike, shape: int | tuple[int, ...], *,
                     device: Device | None = None) -> tuple[np.ndarray, np.ndarray]:
    """DML_OPERATOR_RANDOM_GENERATOR (Philox 4x32-10): `shape` uniformly distributed uint32
    values from `state`, six uint32 words (counter words 0 to 3, least significant first; key
    words 4 and 5), and the state to pass next time (the counter advanced by
    ceil(size / 4), the same key), both NumPy uint32 arrays. The same state gives the same
    bits on every device."""
    values = as_array(state, "state")
    if values.dtype != np.uint32 or values.size != PHILOX_STATE_WORDS:
        raise InvalidArgumentError(
            f"state has dtype {values.dtype} and {values.size} elements: a Philox 4x32-10 state is "
            f"{PHILOX_STATE_WORDS} uint32 words (a 128-bit counter, then a 64-bit key)", "state")
    dims = _shape(shape)
    # Up to 4 dims, padded to DirectML's 4 so the call runs on a FEATURE_LEVEL_3_0 device too.
    sizes = (1,) * (4 - len(dims)) + dims if len(dims) < 4 else dims
    state_desc = BufferTensorDesc(TensorDataType.UINT32, STATE_SIZES)
    desc = RandomGeneratorOperatorDesc(state_desc, BufferTensorDesc(TensorDataType.UINT32, sizes), state_desc)
    device = as_device(device)
    compiled = device.compile_cached(desc)
    words = np.ascontiguousarray(values).reshape(-1)
    count = int(np.prod(dims))

    def work(binding):
        binding.buffers[0].write(words)
        device.execute(binding.table)
        return (binding.buffers[1].read(np.uint32, count).reshape(dims),
                binding.buffers[2].read(np.uint32, PHILOX_STATE_WORDS))

    return run_bound(device, compiled, None, work)
