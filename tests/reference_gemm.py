"""An independent NumPy reference for GEMM, written from the contract (the documented order of
its arithmetic) and sharing no code with the shader path or with dmlpy.

For each output element S starts at -0.0 and, for k = 0 .. K-1 in increasing order,
S = fl32(S + fl32(a[m, k] * b[k, n])): every product and every sum rounded to FP32 on its
own, subnormals kept (NumPy's float32 arithmetic does exactly this, and never fuses). FLOAT16
and BFLOAT16 inputs convert exactly to FP32 first. Then T = fl32(alpha * S); with C present
T = fl32(T + fl32(beta * c)); T is rounded once to the output's type (to nearest, ties to
even); a fused activation is then applied to that stored value as the activation operator
applies it on its own (computed in FP32, rounded once to the output's type).

The k loop stays sequential (it is the order being checked); each step is vectorised over
the batch, M and N."""

from __future__ import annotations

import ml_dtypes
import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _fp32(x) -> np.ndarray:
    """FLOAT32, FLOAT16 and BFLOAT16 values as FP32, exactly."""
    x = np.asarray(x)
    assert x.dtype in FLOAT_DTYPES, x.dtype
    return x.astype(np.float32)


def accumulate(a32: np.ndarray, b32: np.ndarray) -> np.ndarray:
    """S of every output element: a32 (..., M, K) times b32 (..., K, N) summed in increasing k
    from -0.0, each product and sum rounded to FP32 on its own. Batch dimensions broadcast."""
    m, k_count = a32.shape[-2:]
    k_b, n = b32.shape[-2:]
    assert k_count == k_b, (a32.shape, b32.shape)
    batch = np.broadcast_shapes(a32.shape[:-2], b32.shape[:-2])
    s = np.full((*batch, m, n), -0.0, np.float32)
    with np.errstate(all="ignore"):
        for k in range(k_count):
            product = a32[..., :, k:k + 1] * b32[..., k:k + 1, :]  # (..., M, 1) * (..., 1, N): FP32 products
            s = s + product
    assert s.dtype == np.float32
    return s


def activation_reference(y: np.ndarray, name: str | None, **params) -> np.ndarray:
    """The activations the tests fuse, on values already rounded to the output's type: the
    formula in FP32, rounded once to that type. RELU keeps NaN and gives +0 for -0 (x > 0 ?
    x : 0); LEAKY_RELU is x >= 0 ? x : alpha * x (-0 stays -0); LINEAR alpha * x + beta, each
    operation rounded; IDENTITY the value itself."""
    if name is None or name == "IDENTITY":
        return y.copy()
    dtype = y.dtype
    x = y.astype(np.float32)
    with np.errstate(all="ignore"):
        if name == "RELU":
            keep = (x > 0) | np.isnan(x)
            return np.where(keep, y, np.zeros_like(y))
        if name == "LEAKY_RELU":
            alpha = np.float32(params.get("alpha", 0.01))
            return np.where(x >= 0, x, alpha * x).astype(dtype)
        if name == "LINEAR":
            alpha, beta = np.float32(params["alpha"]), np.float32(params["beta"])
            return (alpha * x + beta).astype(dtype)
        if name == "THRESHOLDED_RELU":
            alpha = np.float32(params.get("alpha", 1.0))
            return np.where(x > alpha, y, np.zeros_like(y))
    raise ValueError(f"no plain reference for {name}")


def gemm_reference(a, b, c=None, *, trans_a: bool = False, trans_b: bool = False, alpha: float = 1.0,
                   beta: float = 0.0, dtype=None, activation: str | None = None,
                   activation_params: dict | None = None) -> np.ndarray:
    """GEMM's exact result for logical operands: a (..., M, K) or, with trans_a, (..., K, M);
    b (..., K, N) or, with trans_b, (..., N, K); c anything that broadcasts to the output's
    shape (..., M, N), or None. The result has `dtype` (default a's). `activation` names a
    fused activation (activation_reference), `activation_params` its own scalars (kept apart
    from GEMM's alpha and beta)."""
    a, b = np.asarray(a), np.asarray(b)
    dtype = np.dtype(a.dtype if dtype is None else dtype)
    a32, b32 = _fp32(a), _fp32(b)
    if trans_a:
        a32 = np.swapaxes(a32, -1, -2)
    if trans_b:
        b32 = np.swapaxes(b32, -1, -2)
    s = accumulate(a32, b32)
    with np.errstate(all="ignore"):
        t = np.float32(alpha) * s
        if c is not None:
            scaled = np.float32(beta) * np.broadcast_to(_fp32(c), t.shape)
            t = t + scaled
        assert t.dtype == np.float32
        y = t.astype(dtype)
    return activation_reference(y, activation, **(activation_params or {}))


def matmul_reference(a, b) -> np.ndarray:
    """NumPy's matmul rules on the GEMM order: a 1-D a is a row (1, K), a 1-D b a column
    (K, 1), each added dimension removed from the result; batch dimensions broadcast."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.ndim >= 1 and b.ndim >= 1
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    result = gemm_reference(a2, b2, dtype=a.dtype)
    if b.ndim == 1:
        result = result[..., 0]
    if a.ndim == 1:
        result = result[..., 0, :] if b.ndim > 1 else result[..., 0]
    return result


def is_float(dtype) -> bool:
    return np.dtype(dtype) in FLOAT_DTYPES


def assert_same_bits(got, expected, what: str = "") -> None:
    """Same dtype, shape and bits; any NaN for a NaN (NaN payloads are not part of the contract)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (what, got.dtype, got.shape, expected.dtype,
                                                                         expected.shape)
    g, e = got.astype(np.float32), expected.astype(np.float32)
    same = (g.view(np.uint32) == e.view(np.uint32)) | (np.isnan(g) & np.isnan(e))
    if not same.all():
        wrong = np.flatnonzero(~same.reshape(-1))
        k = wrong[0]
        raise AssertionError(
            f"{what}: {wrong.size} of {same.size} differ; first at index {np.unravel_index(k, got.shape)}: got "
            f"{g.reshape(-1)[k]!r} (0x{int(g.view(np.uint32).reshape(-1)[k]):08x}) expected {e.reshape(-1)[k]!r} "
            f"(0x{int(e.view(np.uint32).reshape(-1)[k]):08x})")
