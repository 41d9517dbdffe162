"""Independent NumPy references, written from the operators' formulas; they share no code
with the shader path. Each takes arrays of values in the tensor's dtype (and the desc's
scalars) and returns the outputs in that dtype, except where noted."""

import numpy as np


def relu_grad(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    # np.where copies dY's elements bit for bit; NaN > 0 and -0 > 0 are False.
    with np.errstate(invalid="ignore"):
        return np.where(x > 0, dy, np.zeros_like(dy))


def hard_sigmoid_grad(x: np.ndarray, dy: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    # NumPy float32 arithmetic rounds each operation on its own, as the operator must.
    alpha, beta = np.float32(alpha), np.float32(beta)
    with np.errstate(all="ignore"):
        shifted = alpha * x.astype(np.float32) + beta
        gradient = dy.astype(np.float32) * alpha
        return np.where((shifted > 0) & (shifted < 1), gradient, np.float32(0)).astype(x.dtype)


def prelu_grad(x: np.ndarray, slope: np.ndarray, dy: np.ndarray, reduced_axes: tuple[int, ...]):
    """(dx in x's dtype, dslope as FP64 sums of the FP32 terms, the sum of their magnitudes).

    `slope` is already broadcast to x's shape; dslope keeps reduced axes with size 1."""
    x32, dy32, slope32 = x.astype(np.float32), dy.astype(np.float32), slope.astype(np.float32)
    with np.errstate(all="ignore"):
        dx = np.where(x32 > 0, dy, (slope32 * dy32).astype(x.dtype))
        terms = np.where(x32 > 0, np.float32(0), x32 * dy32).astype(np.float64)
    return dx, terms.sum(axis=reduced_axes, keepdims=True), np.abs(terms).sum(axis=reduced_axes, keepdims=True)


def dslope_error_bound(magnitudes: np.ndarray, reduced_count: int, dtype) -> np.ndarray:
    """How far dmlpy's dslope may lie from the exact sum of the FP32 terms: each FP32
    addition on a path of the pairwise tree (9 levels within a chunk of 256 terms, one per
    halving of the chunk count, one to fold what is left) loses at most half an ulp of the
    running magnitude; then one rounding to the data type."""
    chunks = -(-reduced_count // 256)
    depth = 9 + max(chunks - 1, 0).bit_length() + 2
    bound = depth * 2.0**-24 * magnitudes
    if np.dtype(dtype) == np.float16:
        bound = bound + magnitudes * 2.0**-11 + 2.0**-25  # half an ulp, or of the subnormal step
    elif np.dtype(dtype) != np.float32:
        bound = bound + magnitudes * 2.0**-8
    return bound


REFERENCES = {"relu_grad": relu_grad, "hard_sigmoid_grad": hard_sigmoid_grad}
