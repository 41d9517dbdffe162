"""The methods that make device arrays behave as NumPy's: Python's operators, NumPy's ufuncs and
reduction methods, each the front end of one operator, looked up by front-end name when called
(the front ends are built after DeviceArray, in numpy_api.py, reductions.py and matmul.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from ..base.errors import InvalidArgumentError, shown

# A device array (its module imports this one): each method returns an array of its own type.
Array = TypeVar("Array")

# The front ends by name. frontends/numpy_api.py, reductions.py and matmul.py fill it once, when
# they make the front ends; it is only read after that.
ARRAY_OPERATORS: dict[str, Callable] = {}
# NumPy's ufunc names where the front end's differ.
UFUNC_FRONT_ENDS = {"absolute": "abs", "invert": "bitwise_not", "true_divide": "divide"}


def operator_method(name: str, reflected: bool = False):
    def method(self, other):
        function = ARRAY_OPERATORS.get(name)
        if function is None:
            return NotImplemented
        return function(other, self) if reflected else function(self, other)
    method.__name__ = name
    return method


def unary_method(name: str):
    def method(self):
        return ARRAY_OPERATORS[name](self)
    method.__name__ = name
    return method


def _no_out(name: str, out) -> None:
    if out is not None:
        raise InvalidArgumentError(f"DeviceArray.{name}: out {type(out).__name__} is not taken; the result is a "
                                   "new DeviceArray", "out")


def in_accumulator(array, dtype):
    """`array` (a NumPy array or a DeviceArray) in NumPy's accumulator `dtype`: converted by
    its own `astype` (a DeviceArray's cast runs on the device, fused into the operator that
    reads it) unless it has that dtype already."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise InvalidArgumentError(f"dtype {shown(dtype)} is not a NumPy dtype", "dtype") from None
    return array if dtype == array.dtype else array.astype(dtype)


def _converted(array: Array, name: str, dtype, accumulating: bool) -> Array:
    """`array` in NumPy's accumulator `dtype`, where one is given; refused by the methods NumPy
    gives none."""
    if dtype is None:
        return array
    if not accumulating:
        raise InvalidArgumentError(f"DeviceArray.{name}: dtype {dtype!r} is not taken (NumPy's {name} has none)",
                                   "dtype")
    return in_accumulator(array, dtype)


def reduction_method(name: str, accumulating: bool = False):
    def method(self: Array, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, out: None = None, *,
               dtype: np.typing.DTypeLike | None = None) -> Array:
        _no_out(name, out)
        if accumulating:  # the front end takes NumPy's accumulator dtype
            return ARRAY_OPERATORS[name](self, axis, keepdims, dtype=dtype)
        return ARRAY_OPERATORS[name](_converted(self, name, dtype, False), axis, keepdims)
    method.__name__ = name
    method.__doc__ = (f"NumPy's `{name}` on the device (dmlpy.{name}): a new DeviceArray"
                      + (", of the elements cast to `dtype` first where one is given." if accumulating else "."))
    return method


def scan_method(name: str):
    def method(self: Array, axis: int | None = None, dtype: np.typing.DTypeLike | None = None,
               out: None = None) -> Array:
        _no_out(name, out)
        return ARRAY_OPERATORS[name](_converted(self, name, dtype, True), axis)
    method.__name__ = name
    method.__doc__ = (f"NumPy's `{name}` on the device (dmlpy.{name}; axis None: of the elements flattened): "
                      "a new DeviceArray, of the elements cast to `dtype` first where one is given.")
    return method
