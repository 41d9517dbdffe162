"""Independent NumPy references, written from the operators' formulas; they share no code
with the shader path. Each takes arrays of values in the tensor's dtype (and the desc's
scalars) and returns the outputs in that dtype, except where noted."""

import math
from fractions import Fraction

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


def _f32(*arrays):
    return [np.asarray(a).astype(np.float32) for a in arrays]


def _zero_like(a):
    return np.zeros_like(np.asarray(a))


def _float_op(compute):
    """A reference computed in FP32 (NumPy rounds each operation on its own, never fuses)
    and rounded once to the inputs' dtype."""
    def reference(*arrays, **scalars):
        dtype = np.asarray(arrays[0]).dtype
        with np.errstate(all="ignore"):
            return np.asarray(compute(*_f32(*arrays), **{k: np.float32(v) for k, v in scalars.items()})).astype(dtype)
    return reference


def relu(x):
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):
        keep = (x > 0) | (np.isnan(x.astype(np.float32)) if x.dtype.kind in "fV" else False)  # V: bfloat16
        return np.where(keep, x, _zero_like(x))


def _exact_integer(compute):
    """For integer dtypes: `compute` on Python integers and Fractions (the FP32 scalars
    exactly), rounded toward zero and saturated to the dtype's range, element by element."""
    def reference(*arrays, **scalars):
        dtype = np.asarray(arrays[0]).dtype
        info = np.iinfo(dtype)
        exact = {k: Fraction(float(np.float32(v))) for k, v in scalars.items()}
        values = [compute(*(int(a) for a in element), **exact) for element in zip(*(np.ravel(a) for a in arrays))]
        clipped = [min(max(math.trunc(v), info.min), info.max) for v in values]
        return np.array(clipped, dtype).reshape(np.shape(arrays[0]))
    return reference


def _by_kind(floating, integer):
    """The float reference, or the exact integer one for integer dtypes."""
    def reference(*arrays, **scalars):
        return (integer if np.asarray(arrays[0]).dtype.kind in "iu" else floating)(*arrays, **scalars)
    return reference


def _select(condition, a, b):
    with np.errstate(invalid="ignore"):
        return np.where(condition, a, b)


# Independent references, keyed by operator name: written from each operator's formula and
# the conventions in dmlpy/ops/activations.py, sharing no code with the shader path.
REFERENCES = {
    "identity": lambda x: np.asarray(x).copy(),
    "identity_grad": lambda x, dy: np.asarray(dy).copy(),
    "relu": relu,
    "relu_grad": relu_grad,
    "leaky_relu": _float_op(lambda x, alpha: np.where(x >= 0, x, alpha * x)),
    "leaky_relu_grad": lambda x, dy, alpha: _select(
        np.asarray(x).astype(np.float32) > 0, dy, _float_op(lambda d, alpha: alpha * d)(dy, alpha=alpha)),
    "linear": _float_op(lambda x, alpha, beta: alpha * x + beta),
    "linear_grad": _float_op(lambda x, dy, alpha, beta: alpha * dy),
    "thresholded_relu": lambda x, alpha: _select(
        np.asarray(x).astype(np.float32) > np.float32(alpha), x, _zero_like(x)),
    "thresholded_relu_grad": lambda x, dy, alpha: _select(
        np.asarray(x).astype(np.float32) > np.float32(alpha), dy, _zero_like(dy)),
    "hard_sigmoid": _float_op(lambda x, alpha, beta: np.maximum(np.float32(0), np.minimum(alpha * x + beta,
                                                                                          np.float32(1)))),
    "hard_sigmoid_grad": hard_sigmoid_grad,
    "shrink": _by_kind(
        _float_op(lambda x, bias, threshold: np.where(x > threshold, x - bias,
                                                      np.where(x < -threshold, x + bias, np.float32(0)))),
        _exact_integer(lambda x, bias, threshold: x - bias if x > threshold else x + bias if x < -threshold else 0)),
    "shrink_grad": _by_kind(
        lambda x, dy, bias, threshold: _select(
            (np.asarray(x).astype(np.float32) > np.float32(threshold))
            | (np.asarray(x).astype(np.float32) < -np.float32(threshold)), dy, _zero_like(dy)),
        _exact_integer(lambda x, dy, bias, threshold: dy if x > threshold or x < -threshold else 0)),
    "softsign": _float_op(lambda x: np.where(np.isinf(x), np.sign(x), x / (np.float32(1) + np.abs(x)))),
    "softsign_grad": _float_op(lambda x, dy: dy / ((np.float32(1) + np.abs(x)) * (np.float32(1) + np.abs(x)))),
    "hard_swish": _float_op(lambda x, alpha, beta: x * np.maximum(np.float32(0), np.minimum(alpha * x + beta,
                                                                                            np.float32(1)))),
    "hard_swish_grad": _float_op(lambda x, dy, alpha, beta: np.where(
        alpha * x + beta < 0, np.float32(0), np.where(alpha * x + beta <= 1, dy * (alpha * x + (alpha * x + beta)),
                                                      dy))),
    "parameterized_relu": _by_kind(_float_op(lambda x, slope: np.where(x >= 0, x, slope * x)),
                                   _exact_integer(lambda x, slope: x if x >= 0 else slope * x)),
}


def _f64(compute):
    """A float64 reference: the inputs and scalars exactly as stored, the math in float64,
    returned in float64 (compare within a ULP bound, not bit for bit)."""
    def reference(*arrays, **scalars):
        with np.errstate(all="ignore"):
            values = [np.asarray(a).astype(np.float32).astype(np.float64) for a in arrays]
            return np.asarray(compute(*values, **{k: float(np.float32(v)) for k, v in scalars.items()}),
                              np.float64)
    return reference


def _sigmoid64(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _sigmoid_slope64(x):
    e = np.exp(-np.abs(x))
    return e / (1 + e) ** 2


def _tanh_slope64(x):
    e = np.exp(-2 * np.abs(x))
    return 4 * e / (1 + e) ** 2


_erfc = np.frompyfunc(math.erfc, 1, 1)


def _normal_cdf64(x):
    """Phi(x) = erfc(-x/sqrt 2)/2: no cancellation for x < 0 (math.erfc is accurate in float64)."""
    return np.asarray(_erfc(-x / math.sqrt(2))).astype(np.float64) / 2  # a 0-d x gives a Python float


def _gelu64(x):
    return np.where(x == -np.inf, -0.0, x * _normal_cdf64(x))


def _gelu_slope64(x):
    density = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    return np.where(np.isinf(x), (x > 0).astype(np.float64), _normal_cdf64(x) + x * density)


def _gelu_tanh64(x):
    """PyTorch's tanh approximation, 0.5 x (1 + tanh u), written as x sigmoid(2u)."""
    w = 2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    return np.where(x == -np.inf, -0.0, x * _sigmoid64(w))


def _gelu_tanh_slope64(x):
    w = 2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    dw = 2 * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x**2)
    return np.where(np.isinf(x), (x > 0).astype(np.float64), _sigmoid64(w) + x * _sigmoid_slope64(w) * dw)


# Float64 references of the operators built on transcendental functions, keyed by name.
REFERENCES_F64 = {
    "elu": _f64(lambda x, alpha: np.where(x >= 0, x, alpha * np.expm1(x))),
    "elu_grad": _f64(lambda x, dy, alpha: np.where(x > 0, dy, dy * alpha * np.exp(x))),
    "scaled_elu": _f64(lambda x, alpha, gamma: np.where(x > 0, gamma * x, gamma * alpha * np.expm1(x))),
    "scaled_elu_grad": _f64(lambda x, dy, alpha, gamma: np.where(x > 0, gamma * dy, dy * gamma * alpha * np.exp(x))),
    "celu": _f64(lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x / alpha))),
    "celu_grad": _f64(lambda x, dy, alpha: np.where(x > 0, dy, dy * np.exp(x / alpha))),
    "sigmoid": _f64(_sigmoid64),
    "sigmoid_grad": _f64(lambda x, dy: dy * _sigmoid_slope64(x)),
    "tanh": _f64(np.tanh),
    "tanh_grad": _f64(lambda x, dy: dy * _tanh_slope64(x)),
    "scaled_tanh": _f64(lambda x, alpha, beta: alpha * np.tanh(beta * x)),
    "scaled_tanh_grad": _f64(lambda x, dy, alpha, beta: dy * alpha * beta * _tanh_slope64(beta * x)),
    "softplus": _f64(lambda x, steepness: np.logaddexp(0, steepness * x) / steepness),
    "softplus_grad": _f64(lambda x, dy, steepness: dy * _sigmoid64(steepness * x)),
    "parametric_softplus": _f64(lambda x, alpha, beta: alpha * np.logaddexp(0, beta * x)),
    "parametric_softplus_grad": _f64(lambda x, dy, alpha, beta: dy * alpha * beta * _sigmoid64(beta * x)),
    "swish": _f64(lambda x, sigmoid_input_scale: x * _sigmoid64(sigmoid_input_scale * x)),
    "gelu": _f64(_gelu64),
    "gelu_grad": _f64(lambda x, dy: dy * _gelu_slope64(x)),
    "swish_grad": _f64(lambda x, dy, sigmoid_input_scale: dy * (
        _sigmoid64(sigmoid_input_scale * x) + x * sigmoid_input_scale * _sigmoid_slope64(sigmoid_input_scale * x))),
}


# The forms an `approximate` field selects, keyed by (name, value).
REFERENCES_F64_APPROXIMATE = {
    ("gelu", "tanh"): _f64(_gelu_tanh64),
    ("gelu_grad", "tanh"): _f64(lambda x, dy: dy * _gelu_tanh_slope64(x)),
}


# Results below this are held to an absolute bound (subnormal intermediates), see
# docs/numerics.md.
FLOOR = 2.0**-100


def ulp_error(got: np.ndarray, exact: np.ndarray, dtype, floor=0.0) -> np.ndarray:
    """|got - exact| in units of the spacing of `dtype` at max(|correctly rounded result|,
    floor); 0 where both are the same infinity or both NaN, inf where only one is NaN."""
    got64 = got.astype(np.float64)
    with np.errstate(all="ignore"):
        rounded = exact.astype(dtype)
        scale = np.fmax(np.abs(rounded.astype(np.float64)), floor).astype(dtype)
        spacing = np.spacing(scale).astype(np.float64)
        spacing = np.where(np.isinf(scale.astype(np.float64)), np.spacing(np.float32(3.4e38)), spacing)
        error = np.abs(got64 - exact) / spacing
    same = (got64 == exact) | (np.isnan(got64) & np.isnan(exact)) | (got64 == rounded.astype(np.float64))
    return np.where(same, 0.0, np.where(np.isnan(error), np.inf, error))


# Gradients from the forward's output Y (oneDNN's use_dst), where the formula differs from
# the one from X: FP32 operation by operation, as oneDNN writes them.
REFERENCES_USE_DST = {
    "elu_grad": _float_op(lambda y, dy, alpha: np.where(y > 0, dy, dy * (y + alpha))),
    "sigmoid_grad": _float_op(lambda y, dy: (dy * y) * (np.float32(1) - y)),
    "tanh_grad": _float_op(lambda y, dy: (dy * (np.float32(1) - y)) * (np.float32(1) + y)),
}


def assert_matches_reference(name: str, got: np.ndarray, inputs, scalars, ulp_bound: float = 96.0,
                             use_dst: bool = False, form: str = "none") -> None:
    """`got` against the operator's reference: bit for bit (any NaN where it is NaN) for the
    exact ones, within `ulp_bound` (loose: test_transcendentals.py holds the real bounds) for
    the transcendental ones (`form`: the value of an `approximate` field). Gradients are
    measured at least at |dY|/8."""
    got = np.asarray(got)
    exact_reference = REFERENCES_USE_DST.get(name) if use_dst else None
    exact_reference = exact_reference or REFERENCES.get(name)
    if exact_reference is not None:
        expected = np.asarray(exact_reference(*inputs, **scalars))
        nan = np.isnan(expected.astype(np.float32)) if expected.dtype.kind in "fV" else np.zeros(got.shape, bool)
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32}[got.itemsize]
        assert np.array_equal(got.view(bits)[~nan], expected.view(bits)[~nan]), name
        assert np.isnan(got[nan].astype(np.float32)).all(), name
        return
    if any(not abs(float(np.float32(v))) <= 2.0**16 for v in scalars.values()):
        return  # FP32 products of such scalars may overflow where float64 does not: no bound is claimed
    exact = (REFERENCES_F64[name] if form == "none" else REFERENCES_F64_APPROXIMATE[name, form])(*inputs, **scalars)
    floor = np.fmax(FLOOR, np.abs(np.asarray(inputs[1]).astype(np.float64)) / 8) if name.endswith("_grad") else FLOOR
    # GELU's tanh form rounds its cubic argument in FP32 (test_transcendentals.py has why)
    bound = (ulp_bound if form == "none" else 256.0) if got.dtype == np.float32 else 1.0
    error = ulp_error(got, exact, got.dtype, floor)
    assert error.size == 0 or error.max() <= bound, f"{name}: {error.max()} ULP"


def _rows(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """x with the reduced axes moved last and flattened into one (index order kept)."""
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, kept + list(axes))
    return moved.reshape(*moved.shape[:len(kept)], -1)


def _unrows(rows: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    kept = [d for d in range(len(shape)) if d not in axes]
    order = kept + list(axes)
    moved = rows.reshape([shape[d] for d in order])
    return np.transpose(moved, np.argsort(order))


def _rowwise(compute):
    """A float64 reference of a row-wise operator: compute(rows...) over the last axis of
    the inputs' rows (the reduced axes flattened in index order)."""
    def reference(*arrays, axes):
        arrays = [np.asarray(a) for a in arrays]
        with np.errstate(all="ignore"):
            rows = [_rows(a.astype(np.float32).astype(np.float64), axes) for a in arrays]
            return _unrows(compute(*rows, dtype=arrays[0].dtype), arrays[0].shape, axes)
    return reference


def _softmax64(x, dtype=None):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _log_softmax64(x, dtype=None):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def _hardmax64(x, dtype=None):
    return (np.arange(x.shape[-1]) == np.argmax(x, axis=-1)[..., None]).astype(np.float64)


# Float64 references of the row-wise operators, keyed by name: reference(*inputs, axes=...).
# The gradients from X are the exact gradients (the operator keeps Y in FP32, rounding once).
REFERENCES_ROWWISE = {
    "softmax": _rowwise(_softmax64),
    "softmax_grad": _rowwise(lambda x, dy, dtype: (lambda y: y * (dy - np.sum(dy * y, axis=-1, keepdims=True)))(
        _softmax64(x))),
    "log_softmax": _rowwise(_log_softmax64),
    "log_softmax_grad": _rowwise(lambda x, dy, dtype: (lambda y: dy - np.exp(y) * np.sum(dy, axis=-1, keepdims=True))(
        _log_softmax64(x))),
    "hardmax": _rowwise(_hardmax64),
    "hardmax_grad": _rowwise(lambda x, dy, dtype: np.zeros_like(x)),
}
REFERENCES_ROWWISE_USE_DST = {
    "softmax_grad": _rowwise(lambda y, dy, dtype: y * (dy - np.sum(dy * y, axis=-1, keepdims=True))),
    "log_softmax_grad": _rowwise(lambda y, dy, dtype: dy - np.exp(y) * np.sum(dy, axis=-1, keepdims=True)),
}

for _name in ("softmax", "log_softmax", "hardmax"):  # the *1 forms: the same math over listed axes
    for _suffix in ("", "_grad"):
        REFERENCES_ROWWISE[f"{_name}1{_suffix}"] = REFERENCES_ROWWISE[_name + _suffix]
        if _name + _suffix in REFERENCES_ROWWISE_USE_DST:
            REFERENCES_ROWWISE_USE_DST[f"{_name}1{_suffix}"] = REFERENCES_ROWWISE_USE_DST[_name + _suffix]

# FP32 ULP bounds of the row-wise operators (docs/numerics.md), at max(|result|, floor): the
# floor is 2^-24 for softmax, 1 for log_softmax (whose values near 0 come from cancellation)
# and max |dY| for the gradients. FP16 and BF16 results are within 1 ULP; the gradients from X
# within 2 (FP32 Y carried into them: DirectML's contract for a once-rounded FP16 result).
# FP32 bounds for rows up to 1,200 elements (docs/numerics.md); log_softmax_grad's grows with
# the row (LONG_ROW_BOUNDS up to 5,000), the others' did not in the measurements.
ROWWISE_BOUNDS = {"softmax": 7, "log_softmax": 3.5, "hardmax": 0, "softmax_grad": 6, "log_softmax_grad": 12,
                  "hardmax_grad": 0}
LONG_ROW_BOUNDS = {**ROWWISE_BOUNDS, "log_softmax_grad": 24}
ROWWISE_FLOORS = {"softmax": 2.0**-24, "log_softmax": 1.0, "hardmax": 1.0}


def assert_rowwise_matches(name: str, got: np.ndarray, inputs, axes: tuple[int, ...], use_dst: bool = False,
                           bound: float | None = None) -> None:
    """A row-wise operator's result against its float64 reference (any name, *1 forms too)."""
    reference = (REFERENCES_ROWWISE_USE_DST if use_dst else REFERENCES_ROWWISE)[name]
    exact = reference(*inputs, axes=tuple(axes))
    base = name.replace("1", "")
    floor = np.abs(np.asarray(inputs[1], np.float64)).max() if base.endswith("_grad") else ROWWISE_FLOORS[base]
    if bound is None:
        bound = ROWWISE_BOUNDS[base] if got.dtype == np.float32 else 2.0 if base.endswith("_grad") and not use_dst \
            else 1.0
    error = ulp_error(got, exact, got.dtype, floor)
    assert error.max() <= bound, f"{name} {got.dtype}: {error.max()} ULP"
