"""An independent NumPy reference for REDUCE, ARGMIN and ARGMAX, written from the contract
(docs: the numerics of reductions) and sharing no code with the shader path: each row is the
input's elements over the reduced axes, flattened row-major in increasing axis order; float
rows are summed in FP32 in the balanced pairwise tree (each split at the largest power of two
strictly below the length), every operation rounded on its own by NumPy (which keeps
subnormals and never fuses), and the result rounded once to the output type; integer sums
and products wrap modulo 2**32."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
FUNCTIONS = ("ARGMAX", "ARGMIN", "AVERAGE", "L1", "L2", "LOG_SUM", "LOG_SUM_EXP", "MAX", "MIN", "MULTIPLY", "SUM",
             "SUM_SQUARE")
# Compared within a bound of float64 (the rest bit for bit).
APPROXIMATE = ("LOG_SUM", "LOG_SUM_EXP")


def is_float(dtype) -> bool:
    return np.dtype(dtype) in FLOAT_DTYPES


def reduced_shape(shape, axes) -> tuple[int, ...]:
    return tuple(1 if a in axes else s for a, s in enumerate(shape))


def rows_of(x: np.ndarray, axes) -> np.ndarray:
    """(kept element count, reduced element count): the kept axes in order, then the reduced
    axes row-major in increasing axis order."""
    x = np.asarray(x)
    axes = sorted(a % x.ndim for a in axes)
    kept = [a for a in range(x.ndim) if a not in axes]
    count = math.prod(x.shape[a] for a in axes)
    return np.transpose(x, kept + axes).reshape(-1, count)


def _tree(v: np.ndarray, op) -> np.ndarray:
    """pairwise(v) along the last axis: v[0] for one element, else pairwise(v[:p]) op
    pairwise(v[p:]), p the largest power of two strictly below the length. The left part
    (a power of two) is the complete tree: adjacent pairs, level by level."""
    n = v.shape[-1]
    if n == 1:
        return v[..., 0]
    p = 1 << ((n - 1).bit_length() - 1)
    left = v[..., :p]
    while left.shape[-1] > 1:
        left = op(left[..., 0::2], left[..., 1::2])
    return op(left[..., 0], _tree(v[..., p:], op))


def pairwise_sum(v: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return _tree(np.asarray(v, np.float32), np.add)


def pairwise_product(v: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return _tree(np.asarray(v, np.float32), np.multiply)


def _float_rows(rows: np.ndarray, function: str) -> np.ndarray:
    """The FP32 result of each row (bit-exact functions)."""
    v = rows.astype(np.float32)  # FLOAT16 and BFLOAT16 convert exactly
    count = v.shape[-1]
    with np.errstate(all="ignore"):
        if function == "SUM":
            return pairwise_sum(v)
        if function == "SUM_SQUARE":
            return pairwise_sum(v * v)
        if function == "L1":
            return pairwise_sum(np.abs(v))
        if function == "L2":
            return np.sqrt(pairwise_sum(v * v))
        if function == "MULTIPLY":
            return pairwise_product(v)
        if function == "AVERAGE":
            return pairwise_sum(v) / np.float32(count)
        if function in ("MAX", "MIN"):
            return extreme(v, function)
    raise ValueError(function)


def extreme(v: np.ndarray, function: str) -> np.ndarray:
    """MAX or MIN of each row of FP32 values: the element itself; NaN where a row has one;
    +0 above -0."""
    nan = np.isnan(v).any(axis=-1)
    # Order the values by a key that puts +0 above -0: the FP32 bits made monotonic.
    bits = v.view(np.int32).astype(np.int64)
    key = np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits)  # -0 -> -1, +0 -> 0
    key = np.where(np.isnan(v), -(2**40) if function == "MAX" else 2**40, key)  # NaNs never chosen here
    index = key.argmax(axis=-1) if function == "MAX" else key.argmin(axis=-1)
    chosen = np.take_along_axis(v, index[..., None], axis=-1)[..., 0]
    return np.where(nan, np.float32(np.nan), chosen)


def arg_extreme(rows: np.ndarray, function: str, direction: str = "INCREASING") -> np.ndarray:
    """The index of the first (INCREASING) or last (DECREASING) extreme element of each row;
    a NaN is the extreme (the first or last NaN); -0 ties with +0; integers exactly."""
    if is_float(rows.dtype):
        values = rows.astype(np.float64)
        nan = np.isnan(values)
    else:
        values = rows.astype(np.int64) if rows.dtype != np.uint64 else rows
        nan = np.zeros(values.shape, bool)
    with np.errstate(invalid="ignore"):
        best = np.where(nan, 0, values)
        target = (best.max(axis=-1) if function == "ARGMAX" else best.min(axis=-1))[..., None]
        hit = np.where(nan.any(axis=-1, keepdims=True), nan, (best == target) & ~nan)
    if direction == "INCREASING":
        return hit.argmax(axis=-1).astype(np.uint32)
    return (hit.shape[-1] - 1 - hit[..., ::-1].argmax(axis=-1)).astype(np.uint32)


def _wrapped_64_bit_rows(rows: np.ndarray, function: str) -> np.ndarray:
    """A 64-bit integer reduction in Python's integers, each row's result taken modulo 2**64."""
    results = []
    for row in rows.reshape(-1, rows.shape[-1]):
        terms = [int(v) for v in row]
        if function == "L1":
            terms = [abs(v) for v in terms]
        elif function == "SUM_SQUARE":
            terms = [v * v for v in terms]
        total = 1 if function == "MULTIPLY" else 0
        for v in terms:
            total = (total * v if function == "MULTIPLY" else total + v) % 2**64
        results.append(total)
    return np.array(results, np.uint64).view(rows.dtype).reshape(rows.shape[:-1])


def _integer_rows(rows: np.ndarray, function: str) -> np.ndarray:
    dtype = rows.dtype
    if dtype.itemsize == 8 and function in ("SUM", "MULTIPLY", "L1", "SUM_SQUARE"):
        return _wrapped_64_bit_rows(rows, function)
    if function in ("MAX", "MIN"):
        return (rows.max(axis=-1) if function == "MAX" else rows.min(axis=-1)).astype(dtype)
    if function in ("SUM", "MULTIPLY", "L1", "SUM_SQUARE"):
        # Modulo 2**32 arithmetic is associative: uint64 wraps modulo 2**64, a multiple of it.
        exact = rows.astype(np.int64)
        terms = np.abs(exact) if function == "L1" else exact
        wide = terms.astype(np.uint64)
        if function == "SUM_SQUARE":
            wide = wide * wide
        total = (np.multiply if function == "MULTIPLY" else np.add).reduce(wide, axis=-1) & np.uint64(0xFFFFFFFF)
        words = total.astype(np.uint32)
        return words.view(np.int32) if dtype == np.int32 else words.astype(dtype)
    raise ValueError(f"{function} has no integer form")


def reduce_reference(x: np.ndarray, function: str, axes, direction: str = "INCREASING") -> np.ndarray:
    """The exact result of REDUCE (and ARGMIN/ARGMAX) for the bit-exact functions, shaped
    like the output (the input's shape with 1 on the reduced axes): uint32 indices for
    ARGMAX and ARGMIN, else x's dtype."""
    x = np.asarray(x)
    function = getattr(function, "name", function)
    rows = rows_of(x, axes)
    shape = reduced_shape(x.shape, [a % x.ndim for a in axes])
    if function in ("ARGMAX", "ARGMIN"):
        return arg_extreme(rows, function, direction).reshape(shape)
    if function in APPROXIMATE:
        raise ValueError(f"{function} is compared within a bound: use assert_reduce_matches")
    if is_float(x.dtype):
        with np.errstate(all="ignore"):
            return _float_rows(rows, function).astype(x.dtype).reshape(shape)
    return _integer_rows(rows, function).reshape(shape)


def _fp32_ulp(value: np.ndarray) -> np.ndarray:
    """The FP32 ULP at each float64 value's magnitude (the subnormal step below the normals)."""
    magnitude = np.abs(value)
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0)))
    return np.exp2(np.maximum(exponent, -126) - 23)


def approximate_reference(x: np.ndarray, function: str, axes) -> tuple[np.ndarray, np.ndarray]:
    """(float64 value, allowed absolute error in FP32) of each LOG_SUM or LOG_SUM_EXP row,
    NaN or ±inf where the exact result is a special (compared exactly)."""
    rows = rows_of(x, axes).astype(np.float32)
    count = rows.shape[-1]
    with np.errstate(all="ignore"):
        if function == "LOG_SUM":
            total = pairwise_sum(rows).astype(np.float64)
            value = np.log(total)  # NaN below 0 and for NaN, -inf at 0, +inf at +inf
            bound = 2 * _fp32_ulp(value)  # dmlpy's log: within 2 ULP (1.97 near 1, docs/numerics.md)
        elif function == "LOG_SUM_EXP":
            wide = rows.astype(np.float64)
            finite_max = np.where(np.isfinite(wide), wide, -np.inf).max(axis=-1)
            m = np.where(np.isfinite(finite_max), finite_max, 0.0)[..., None]
            value = m[..., 0] + np.log(np.exp(wide - m).sum(axis=-1))
            nan = np.isnan(wide).any(axis=-1)
            positive_infinity = (wide == np.inf).any(axis=-1)
            all_negative_infinity = (wide == -np.inf).all(axis=-1)
            value = np.where(all_negative_infinity, -np.inf, value)
            value = np.where(positive_infinity, np.inf, value)
            value = np.where(nan, np.nan, value)
            bound = 2 * _fp32_ulp(value) + math.ceil(math.log2(count)) * 2.0**-23
        else:
            raise ValueError(function)
    shape = reduced_shape(np.shape(x), [a % np.ndim(x) for a in axes])
    return value.reshape(shape), bound.reshape(shape)


def _allowed(value: np.ndarray, bound: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The least and greatest result of `dtype`: the FP32 values within `bound` of `value`,
    each rounded (monotonically) to the output type."""
    with np.errstate(all="ignore"):
        low, high = value - bound, value + bound
        low32, high32 = low.astype(np.float32), high.astype(np.float32)
        low32 = np.where(low32.astype(np.float64) < low, np.nextafter(low32, np.float32(np.inf)), low32)
        high32 = np.where(high32.astype(np.float64) > high, np.nextafter(high32, np.float32(-np.inf)), high32)
        return low32.astype(dtype).astype(np.float64), high32.astype(dtype).astype(np.float64)


def assert_same_bits(got: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Bit for bit, but any NaN for a NaN."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (what, got.dtype, got.shape, expected.dtype,
                                                                         expected.shape)
    if is_float(got.dtype):
        g, e = got.astype(np.float32), expected.astype(np.float32)
        same = (g.view(np.uint32) == e.view(np.uint32)) | (np.isnan(g) & np.isnan(e))
    else:
        same = got == expected
    if not same.all():
        wrong = np.flatnonzero(~same.reshape(-1))
        raise AssertionError(f"{what}: {wrong.size} of {same.size} differ; first at flat index {wrong[0]}: got "
                             f"{got.reshape(-1)[wrong[0]]!r} expected {expected.reshape(-1)[wrong[0]]!r}")


def assert_reduce_matches(got: np.ndarray, x: np.ndarray, function, axes, direction: str = "INCREASING",
                          what: str = "") -> None:
    """`got` (the output, in the output's data type and shape) against the reference: bit for
    bit, or within the documented bound for LOG_SUM and LOG_SUM_EXP (specials exactly)."""
    function = getattr(function, "name", function)
    direction = getattr(direction, "name", direction)
    what = what or f"{function} over {tuple(axes)} of {np.asarray(x).dtype} {np.shape(x)}"
    got = np.asarray(got)
    if function in ("ARGMAX", "ARGMIN"):
        expected = reduce_reference(x, function, axes, direction)
        assert got.shape == expected.shape, (what, got.shape, expected.shape)
        assert_same_bits(got.astype(np.int64), expected.astype(np.int64), what)
        return
    if function not in APPROXIMATE:
        assert_same_bits(got, reduce_reference(x, function, axes), what)
        return
    value, bound = approximate_reference(x, function, axes)
    assert got.shape == value.shape and got.dtype == np.asarray(x).dtype, (what, got.shape, got.dtype)
    actual = got.astype(np.float64)
    special = ~np.isfinite(value)
    ok = np.where(special, (actual == value) | (np.isnan(actual) & np.isnan(value)), False)
    low, high = _allowed(np.where(special, 0.0, value), np.where(special, 0.0, bound), got.dtype)
    ok = ok | (~special & (actual >= low) & (actual <= high))
    if not ok.all():
        wrong = np.flatnonzero(~ok.reshape(-1))
        k = wrong[0]
        raise AssertionError(f"{what}: {wrong.size} of {ok.size} outside the bound; first at flat index {k}: got "
                             f"{actual.reshape(-1)[k]!r}, float64 {value.reshape(-1)[k]!r} +- "
                             f"{bound.reshape(-1)[k]!r}")
