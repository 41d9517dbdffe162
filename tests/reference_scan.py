"""An independent NumPy reference for CUMULATIVE_SUMMATION, CUMULATIVE_PRODUCT, TOP_K and
TOP_K1, written from the contract and sharing no code with the shader path.

Scans: each row along the axis is walked in order (backwards for a reversed scan); the
running value is FP32 for floats (FLOAT16 and BFLOAT16 converted exactly), each step one
NumPy FP32 operation (rounded on its own, subnormals kept, never fused), and each output the
running value rounded once to the data type; integers run in wrapping 32-bit unsigned
arithmetic and keep their low bits (64-bit ones wrap in 64 bits). The first element starts
the running value; an exclusive scan writes +0 (sum) or 1 (product) first and then, at each
position, the running value of the elements before it.

Selection: a stable sort of each row by value (largest first, or smallest first), a NaN
above every number, -0 equal to +0, equal values in increasing index order whatever the
direction; integers by their signedness; values copied as stored."""

from __future__ import annotations

import ml_dtypes
import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
MASK32 = np.uint64(0xFFFFFFFF)
MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def is_float(dtype) -> bool:
    return np.dtype(dtype) in FLOAT_DTYPES


def _running(rows: np.ndarray, combine: str, mask: np.uint64 = MASK32) -> np.ndarray:
    """The inclusive running values of each row (last axis), element by element; integers
    (uint64) keep the bits of `mask`."""
    out = np.empty_like(rows)
    if rows.shape[-1] == 0:
        return out
    running = rows[..., 0].copy()
    out[..., 0] = running
    with np.errstate(all="ignore"):
        for i in range(1, rows.shape[-1]):
            if rows.dtype == np.float32:
                running = running + rows[..., i] if combine == "sum" else running * rows[..., i]
            else:  # uint64 wraps modulo 2**64, a multiple of 2**32
                running = (running + rows[..., i] if combine == "sum" else running * rows[..., i]) & mask
            out[..., i] = running
    return out


def scan_reference(x: np.ndarray, axis: int, combine: str, reverse: bool = False,
                   exclusive: bool = False) -> np.ndarray:
    """The running sum ("sum") or product ("product") of x along `axis`, in x's dtype."""
    x = np.asarray(x)
    dtype = x.dtype
    rows = np.moveaxis(x, axis, -1)
    if reverse:
        rows = rows[..., ::-1]
    if is_float(dtype):
        wide = rows.astype(np.float32)  # FLOAT16 and BFLOAT16 convert exactly
        identity = np.float32(0.0 if combine == "sum" else 1.0)
    elif dtype in (np.dtype(np.uint32), np.dtype(np.uint16), np.dtype(np.int32)):
        # two's complement: an int32's bits as uint32, summed or multiplied modulo 2**64 (a multiple of 2**32)
        wide = (rows.view(np.uint32) if dtype == np.int32 else rows).astype(np.uint64)
        identity = np.uint64(0 if combine == "sum" else 1)
    elif dtype in (np.dtype(np.int64), np.dtype(np.uint64)):
        wide = rows.view(np.uint64)
        identity = np.uint64(0 if combine == "sum" else 1)
    else:
        raise ValueError(f"no scan of {dtype}")
    inclusive = _running(wide, combine, MASK64 if dtype.itemsize == 8 else MASK32)
    if exclusive:
        result = np.empty_like(inclusive)
        result[..., :1] = identity
        result[..., 1:] = inclusive[..., :-1]
    else:
        result = inclusive
    with np.errstate(all="ignore"):
        # float32 -> float16 / bfloat16 rounds to nearest even; uint64 -> uint32 / uint16 keeps the low bits
        if dtype == np.int32:
            result = (result & MASK32).astype(np.uint32).view(np.int32)
        else:
            result = result.view(dtype) if dtype.itemsize == 8 else result.astype(dtype)
    if reverse:
        result = result[..., ::-1]
    return np.ascontiguousarray(np.moveaxis(result, -1, axis))


def _sort_keys(rows: np.ndarray, largest: bool) -> list[np.ndarray]:
    """np.lexsort keys (least significant first) that order each row's elements as the
    selection does: the index last, then the value, then (most significant) NaN-ness."""
    index = np.broadcast_to(np.arange(rows.shape[-1]), rows.shape)
    if is_float(rows.dtype):
        values = rows.astype(np.float64)  # -0.0 == +0.0 here
        nan = np.isnan(values)
        values = np.where(nan, 0.0, values)
    else:  # every integer with its signedness; ~v reverses their order without overflow
        values = rows if rows.dtype.itemsize == 8 else rows.astype(np.int64)
        nan = np.zeros(rows.shape, bool)
    if largest:
        return [index, -values if is_float(rows.dtype) else ~values, ~nan]
    return [index, values, nan]


def top_k_reference(x: np.ndarray, k: int, axis: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(values in x's dtype, uint32 indices), shaped like x with k on `axis`."""
    x = np.asarray(x)
    rows = np.moveaxis(x, axis, -1)
    flat = rows.reshape(-1, rows.shape[-1])
    order = np.lexsort(_sort_keys(flat, largest), axis=-1)  # the last key sorts first
    chosen = order[:, :k]
    values = np.take_along_axis(flat, chosen, axis=-1)
    shape = (*rows.shape[:-1], k)
    values = np.moveaxis(values.reshape(shape), -1, axis)
    indices = np.moveaxis(chosen.astype(np.uint32).reshape(shape), -1, axis)
    return np.ascontiguousarray(values), np.ascontiguousarray(indices)


def bits_of(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def assert_same_bits(got: np.ndarray, expected: np.ndarray, what: str = "", any_nan: bool = True) -> None:
    """Bit for bit (any NaN for a NaN where `any_nan`: a sum's NaN payload is the hardware's)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (what, got.dtype, got.shape, expected.dtype,
                                                                         expected.shape)
    same = bits_of(got) == bits_of(expected)
    if any_nan and is_float(got.dtype):
        g, e = got.astype(np.float32), expected.astype(np.float32)
        same |= np.isnan(g) & np.isnan(e)
    if not same.all():
        wrong = np.flatnonzero(~same.reshape(-1))
        k = wrong[0]
        raise AssertionError(f"{what}: {wrong.size} of {same.size} differ; first at flat index {k} "
                             f"({np.unravel_index(k, got.shape)}): got {got.reshape(-1)[k]!r} "
                             f"(bits {bits_of(got).reshape(-1)[k]:#x}) expected {expected.reshape(-1)[k]!r} "
                             f"(bits {bits_of(expected).reshape(-1)[k]:#x})")
