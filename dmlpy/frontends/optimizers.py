"""The NumPy front end of the optimizer family: `adam_optimizer`, one ADAM_OPTIMIZER step on
NumPy arrays, returning the new parameters and moment estimates. A training loop that keeps
them on the device binds the operator (or a graph holding it) once, outputs over inputs:
see docs/training.md."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import InvalidArgumentError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import data_type_for_numpy
from ..ops.optimizers import AdamOptimizerOperatorDesc
from ..runtime.device import Device
from .arrays import as_array, as_device
from .call_cache import run_bound

ADAM_DIMS = 4  # ADAM_OPTIMIZER's tensors have exactly 4 dimensions


def adam_optimizer(parameters: ArrayLike, first_moment: ArrayLike, second_moment: ArrayLike, gradient: ArrayLike,
                   training_step: float, *, learning_rate: float, beta1: float = 0.9, beta2: float = 0.999,
                   epsilon: float = 1e-8, device: Device | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DML_OPERATOR_ADAM_OPTIMIZER: one Adam step. `parameters`, the moments and `gradient` are
    arrays of one shape (1 to 4 dims) and dtype (float32 or float16); `training_step` is the
    step count T (from 1). Returns (parameters, first_moment, second_moment) after the step,
    NumPy arrays of the same shape and dtype; the arguments are not changed."""
    arrays = {name: as_array(value, name) for name, value in (
        ("parameters", parameters), ("first_moment", first_moment), ("second_moment", second_moment),
        ("gradient", gradient))}
    first = arrays["parameters"]
    for name, array in arrays.items():
        if array.shape != first.shape or array.dtype != first.dtype:
            raise InvalidArgumentError(
                f"{name} has shape {array.shape} and dtype {array.dtype}: ADAM_OPTIMIZER's tensors share the "
                f"parameters' shape {first.shape} and dtype {first.dtype}", name)
    if not 1 <= first.ndim <= ADAM_DIMS:
        raise InvalidArgumentError(f"parameters has {first.ndim} dims: ADAM_OPTIMIZER takes 1 to {ADAM_DIMS} "
                                   "(padded to DirectML's 4)", "parameters")
    step = as_array(training_step, "training_step")
    if step.size != 1:
        raise InvalidArgumentError(f"training_step has {step.size} elements: it is the step count, one number",
                                   "training_step")
    data_type = data_type_for_numpy(first.dtype)
    sizes = (1,) * (ADAM_DIMS - first.ndim) + first.shape
    tensor = BufferTensorDesc(data_type, sizes)
    step_desc = BufferTensorDesc(data_type, (1,) * ADAM_DIMS)
    desc = AdamOptimizerOperatorDesc(tensor, tensor, tensor, tensor, step_desc, tensor, tensor, tensor,
                                     learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon)
    device = as_device(device)
    compiled = device.compile_cached(desc)
    values = [np.ascontiguousarray(a).reshape(-1) for a in arrays.values()]
    values.append(step.astype(first.dtype).reshape(-1))

    def work(binding):
        for buffer, words in zip(binding.buffers, values):
            buffer.write(words)
        device.execute(binding.table)
        return tuple(buffer.read(first.dtype, first.size).reshape(first.shape) for buffer in binding.buffers[5:])

    return run_bound(device, compiled, None, work)
