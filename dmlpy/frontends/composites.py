"""NumPy functions that no one DirectML operator is, composed of element-wise front ends:
`not_equal` (Python's !=) and `floor_divide` (Python's //). On device arrays each step is
deferred and the steps fuse (an integer `x // 7` is one kernel, a float one a few); on NumPy
arrays each step is a call."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import DmlError, UnsupportedError
from ..base.types import data_type_for_numpy, data_type_info
from ..ops.fields import ScaleBias
from ..runtime.device import Device
from .array_operators import ARRAY_OPERATORS
from .arrays import asarray, typed_like, typeless
from .device_array import DeviceArray
from .numpy_api import FRONT_ENDS

add, cast, divide, element_wise_identity, equal, floor, fmod, greater, logical_not, remainder, subtract, where = (
    FRONT_ENDS[name] for name in ("add", "cast", "divide", "element_wise_identity", "equal", "floor", "fmod", "greater",
                                  "logical_not", "remainder", "subtract", "where"))


def not_equal(a: ArrayLike | DeviceArray, b: ArrayLike | DeviceArray, *, out: np.ndarray | DeviceArray | None = None,
              device: Device | None = None) -> np.ndarray | DeviceArray:
    """NumPy's not_equal (Python's `!=`): UINT8 1 where a != b (NaN differs from everything,
    itself included), else 0; ELEMENT_WISE_LOGICAL_NOT of ELEMENT_WISE_LOGICAL_EQUALS."""
    return logical_not(_first_step("not_equal", equal, a, b, device), out=out, device=device)


def floor_divide(a: ArrayLike | DeviceArray, b: ArrayLike | DeviceArray, *,
                 out: np.ndarray | DeviceArray | None = None,
                 device: Device | None = None) -> np.ndarray | DeviceArray:
    """NumPy's floor_divide (Python's `//`): the quotient rounded toward minus infinity, with
    NumPy's bits. Integers: the truncated quotient (ELEMENT_WISE_DIVIDE), one less where the
    floored remainder differs from the truncated one (MODULUS_FLOOR, MODULUS_TRUNCATE); a zero
    divisor gives 0, as NumPy's does. Floats: NumPy's own steps, each exact or correctly
    rounded: q = (a - fmod(a, b)) / b, one less under the same rule, then floor(q), one more
    where q - floor(q) > 0.5; a zero quotient takes the sign of a / b, and a zero divisor gives
    a / b. FLOAT16 computes in FP32 and rounds once, as NumPy's float16 does; BFLOAT16, which
    CAST does not take, is refused. Only a and b are tensors (the constants are ScaleBias
    fields), so on device arrays the steps fuse into few kernels."""
    quotient = _first_step("floor_divide", divide, a, b, device)  # checks the arguments, gives their dtype
    dtype = np.dtype(quotient.dtype)
    a, b = (typed_like(value, dtype, name) if typeless(value) else value for name, value in (("a", a), ("b", b)))
    if isinstance(quotient, DeviceArray):  # each operand uploaded once: one kernel input however often read
        a, b = (asarray(value, quotient.device) for value in (a, b))
        quotient = divide(a, b)  # deferred: the first one, never read, is never run
    if dtype.kind in "iu":
        truncated = not_equal(remainder(a, b, device=device), fmod(a, b, device=device), device=device)
        return subtract(quotient, cast(truncated, dtype, device=device), out=out, device=device)
    if dtype == ml_dtypes.bfloat16:
        raise UnsupportedError("floor_divide of bfloat16: NumPy's quotient is computed in FP32 and rounded once, and "
                               "CAST takes no BFLOAT16; convert the arrays first, e.g. a.astype(np.float32)",
                               "data_type")
    narrow = data_type_info(data_type_for_numpy(dtype)).bits < 32
    computed_in = np.float32 if narrow else dtype
    if narrow:
        a, b = (cast(value, np.float32, device=device) for value in (a, b))
        quotient = divide(a, b, device=device)
    modulus = fmod(a, b, device=device)
    truncated = not_equal(remainder(a, b, device=device), modulus, device=device)
    exact = subtract(divide(subtract(a, modulus, device=device), b, device=device),
                     cast(truncated, computed_in, device=device), device=device)
    floored = floor(exact, device=device)
    # q - floor(q) - 0.5 > 0, against a zero made from the same value (NaN where q is infinite).
    past_half = element_wise_identity(subtract(exact, floored, device=device), scale_bias=ScaleBias(1.0, -0.5),
                                      device=device)
    rounded_up = greater(past_half, _zero_of(past_half, device), device=device)
    nearest = add(floored, cast(rounded_up, computed_in, device=device), device=device)
    signed_zero = element_wise_identity(quotient, scale_bias=ScaleBias(0.0, -0.0), device=device)  # ±0 as a / b
    result = where(equal(exact, signed_zero, device=device), signed_zero, nearest, device=device)
    result = where(equal(b, _zero_of(b, device), device=device), quotient, result, out=None if narrow else out,
                   device=device)
    return cast(result, dtype, out=out, device=device) if narrow else result


def _first_step(caller: str, step: Callable, a: ArrayLike | DeviceArray, b: ArrayLike | DeviceArray,
                device: Device | None) -> np.ndarray | DeviceArray:
    """step(a, b), the step that checks the caller's arguments: a refusal that names the step's
    front end (`divide: a has dtype float64 ...`) names the caller's instead."""
    try:
        return step(a, b, device=device)
    except DmlError as error:
        prefix = f"{step.__name__}:"
        if not error.message.startswith(prefix):
            raise
        raise type(error)(caller + error.message[len(prefix) - 1:], error.field) from None


def _zero_of(x: np.ndarray | DeviceArray, device: Device | None) -> np.ndarray | DeviceArray:
    """+0 where x is finite, NaN where it is not: a zero that reads no tensor but x."""
    return element_wise_identity(x, scale_bias=ScaleBias(0.0, 0.0), device=device)


FRONT_ENDS_COMPOSED = {"not_equal": not_equal, "floor_divide": floor_divide}
ARRAY_OPERATORS.update(FRONT_ENDS_COMPOSED)
