"""DirectML's activations, forward and backward: one table row per operator.

What a row is and what it becomes: dmlpy/ops/activation_family.py.

Conventions the catalogue leaves open (written here once, and in docs/operators.md):
- Kinks follow oneDNN's reference math where oneDNN has the algorithm, else PyTorch's
  derivatives; NaN in gives NaN out, except where the formula is a select on a comparison
  (a comparison with NaN is false).
- Selects between inputs pass bits through untouched; everything else is FP32 arithmetic
  rounded once to the data type (see expr.py).
"""

from __future__ import annotations

import numpy as np

from ..base.errors import InvalidArgumentError
from ..base.types import FeatureLevel as FL
from ..ir import expr as e
from .activation_family import INTEGERS, UNSIGNED, Activation, Approximation, Scalar, declare

ONE_SIXTH = float(np.float32(1 / 6))


def _elu_use_dst_needs_nonnegative_alpha(desc) -> None:
    """With use_dst, Alpha must be >= 0 (oneDNN's rule)."""
    if getattr(desc, "use_dst", False) and not desc.alpha >= 0:
        raise InvalidArgumentError(
            f"{type(desc).__name__}.alpha {desc.alpha!r} with use_dst=True: the gradient from the output needs "
            "Alpha >= 0 (oneDNN's rule: only then is Y + Alpha equal to Alpha·e^X where X <= 0)", "alpha")


def _steepness_at_least_one_before_6_4(desc, device_level: FL) -> None:
    """Below FEATURE_LEVEL_6_4, Steepness must be at least 1 (DirectML relaxed it to any
    nonzero value at 6_4)."""
    if device_level < FL.LEVEL_6_4 and not desc.steepness >= 1:
        raise InvalidArgumentError(
            f"{type(desc).__name__}.steepness {desc.steepness!r} < 1: on a device at {device_level} Steepness "
            f"must be at least 1 (any nonzero value from {FL.LEVEL_6_4})", "steepness")


def _nonzero(field: str, dml_name: str):
    def check(desc) -> None:
        if getattr(desc, field) == 0:
            raise InvalidArgumentError(f"{type(desc).__name__}.{field} 0: {dml_name} divides the input, so it must "
                                       "not be 0", field)
    check.__doc__ = f"{dml_name} must not be 0 (the input is divided by it)."
    return check


# f(k·x) with the rounding error of the FP32 product carried to first order: f(p + err) =
# f(p) + err·f'(p). Without it the rounding moves the argument by up to |k·x|·2^-24, which
# an exponential turns into that much relative error (65 ULP at k·x = -71).
def _softplus_of_product(k: e.Expr, x: e.Expr) -> e.Expr:
    product = k * x
    return e.softplus(product) + e.product_error(k, x) * e.sigmoid(product)


def _sigmoid_of_product(k: e.Expr, x: e.Expr) -> e.Expr:
    product = k * x
    return e.sigmoid(product) + e.product_error(k, x) * e.sigmoid_slope(product)


# PyTorch's tanh approximation of GELU: 0.5 x (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3).
# As x sigmoid(2u): 1 + tanh u = 2 sigmoid(2u) does not cancel where tanh u nears -1.
GELU_TANH_SCALE = float(np.float32(2 * np.sqrt(2 / np.pi)))  # 2u = SCALE (x + CUBIC x^3)
GELU_TANH_CUBIC = float(np.float32(0.044715))
GELU_TANH_CUBIC_SLOPE = float(np.float32(3 * 0.044715))


# Beyond |x| = 16, sigmoid(2u) is exactly 0 or 1 in FP32, so x is clamped there first: the
# limits hold at ±inf (-inf · 0 would be NaN) and x^3 never overflows.
GELU_TANH_CLAMP = 16


def _gelu_tanh_argument(x: e.Expr) -> e.Expr:
    return GELU_TANH_SCALE * (x + GELU_TANH_CUBIC * (x * (x * x)))


def _gelu_tanh(x: e.Expr) -> e.Expr:
    above = e.maximum(x, -GELU_TANH_CLAMP)  # +inf stays: +inf · 1
    return above * e.sigmoid(_gelu_tanh_argument(e.minimum(above, GELU_TANH_CLAMP)))


def _gelu_tanh_grad(x: e.Expr, dy: e.Expr) -> e.Expr:
    """d/dx x sigmoid(w) = sigmoid(w) + x sigmoid'(w) w', w = 2u, w' = SCALE (1 + CUBIC_SLOPE x^2)."""
    clamped = e.minimum(e.maximum(x, -GELU_TANH_CLAMP), GELU_TANH_CLAMP)
    w = _gelu_tanh_argument(clamped)
    slope = GELU_TANH_SCALE * (1 + GELU_TANH_CUBIC_SLOPE * (clamped * clamped))
    return dy * (e.sigmoid(w) + clamped * (e.sigmoid_slope(w) * slope))


def _softmax(x: e.Expr) -> e.Expr:
    """e^(x - max) / sum e^(x - max): stable for any finite input (no e^x overflows)."""
    scaled = e.exp_diff(x, e.reduce_max(x))
    return scaled / e.reduce_sum(scaled)


def _log_softmax(x: e.Expr) -> e.Expr:
    largest = e.reduce_max(x)
    return (x - largest) - e.log(e.reduce_sum(e.exp_diff(x, largest)))


def _hardmax(x: e.Expr) -> e.Expr:
    return e.where(e.is_element(e.index_of_extreme(x, largest=True, last=False)), 1, 0)


def _softmax_grad_from_y(y: e.Expr, dy: e.Expr) -> e.Expr:
    """oneDNN's softmax backward: Y * (dY - sum(dY * Y))."""
    return y * (dy - e.reduce_sum(dy * y))


def _log_softmax_grad_from_y(y: e.Expr, dy: e.Expr) -> e.Expr:
    """oneDNN's logsoftmax backward: dY - e^Y * sum(dY)."""
    return dy - e.exp(y) * e.reduce_sum(dy)


ROWWISE_NOTE = ("Reduces over the last axis (effective rank at most 2), or in the *1 form over `axes`. Sums are "
                "FP32, in the balanced pairwise tree over each row's elements in index order: the same bits for "
                "any layout, workgroup size or device. The gradient from X computes the forward's Y in FP32 and "
                "continues from it, rounding once at the end (for FP32 the gradient from that Y, use_dst, bit for "
                "bit; for FLOAT16 and BFLOAT16 more accurate than from the rounded Y). ")

TRANSCENDENTAL_NOTE = ("Transcendental functions are dmlpy's own (shaders/transcendental.glsl): the same bits on "
                       "every device, within the ULP bounds docs/numerics.md lists.")

TABLE: tuple[Activation, ...] = (
    Activation(
        "IDENTITY", "identity", FL.LEVEL_1_0, "InputTensor", "InputGradientTensor",
        forward=lambda x: x, gradient=lambda x, dy: dy,
        notes="Bits pass through unchanged in both directions."),
    Activation(
        "RELU", "relu", FL.LEVEL_1_0, "max(0, InputTensor)",
        "InputTensor > 0 ? InputGradientTensor : 0",
        forward=lambda x: e.where(e.positive(x) | e.isnan(x), x, 0),
        gradient=lambda x, dy: e.where(e.positive(x), dy, 0),
        use_dst="same", integers_from=FL.LEVEL_5_1, infiniop="Relu", gradient_in_directml=True,
        notes="Selects on bit patterns (on integers, exact comparisons). Forward: X > 0 and NaN pass through "
              "unchanged, everything else (-0 included) is +0. Gradient: where X > 0 the bits of dY pass through "
              "unchanged (NaN payloads, -0 and inf included); elsewhere, X = NaN and X = -0 included, the "
              "result is +0, even when dY is inf or NaN. The gradient is DirectML's RELU_GRAD (from FEATURE_LEVEL_3_0; "
              "integers from 5_1)."),
    Activation(
        "LEAKY_RELU", "leaky_relu", FL.LEVEL_1_0, "InputTensor >= 0 ? InputTensor : Alpha * InputTensor",
        "InputTensor > 0 ? InputGradientTensor : Alpha * InputGradientTensor",
        forward=lambda x, alpha: e.where(x >= 0, x, alpha * x),
        gradient=lambda x, dy, alpha: e.where(e.positive(x), dy, alpha * dy),
        scalars=(Scalar("alpha", "Alpha", 0.01),),
        notes="oneDNN's relu with alpha: the gradient at X = 0 is Alpha; NaN gives NaN."),
    Activation(
        "LINEAR", "linear", FL.LEVEL_1_0, "Alpha * InputTensor + Beta", "Alpha * InputGradientTensor",
        forward=lambda x, alpha, beta: alpha * x + beta, gradient=lambda x, dy, alpha, beta: alpha * dy,
        scalars=(Scalar("alpha", "Alpha"), Scalar("beta", "Beta")),
        notes="The product and the sum are each rounded in FP32 (never fused)."),
    Activation(
        "THRESHOLDED_RELU", "thresholded_relu", FL.LEVEL_1_0, "InputTensor > Alpha ? InputTensor : 0",
        "InputTensor > Alpha ? InputGradientTensor : 0",
        forward=lambda x, alpha: e.where(x > alpha, x, 0),
        gradient=lambda x, dy, alpha: e.where(x > alpha, dy, 0),
        scalars=(Scalar("alpha", "Alpha", 1.0),),
        notes="A select: NaN gives +0 in both directions; at X = Alpha the gradient is 0."),
    Activation(
        "HARD_SIGMOID", "hard_sigmoid", FL.LEVEL_1_0, "max(0, min(Alpha * InputTensor + Beta, 1))",
        "0 < Alpha * InputTensor + Beta < 1 ? InputGradientTensor * Alpha : 0",
        forward=lambda x, alpha, beta: e.maximum(0, e.minimum(alpha * x + beta, 1)),
        gradient=lambda x, dy, alpha, beta: e.where((alpha * x + beta > 0) & (alpha * x + beta < 1), dy * alpha, 0),
        scalars=(Scalar("alpha", "Alpha", 0.2), Scalar("beta", "Beta", 0.5)), infiniop="HardSigmoid",
        notes="oneDNN's HardSigmoidBackward: strict bounds, so the gradient is 0 at both kinks and for "
              "NaN. With alpha = 1/6, beta = 0.5 it equals torch.ops.aten.hardsigmoid_backward except at "
              "x = 2.9999998 in FP32 (alpha·x + beta rounds to 1)."),
    Activation(
        "SHRINK", "shrink", FL.LEVEL_2_0,
        "InputTensor > Threshold ? InputTensor - Bias : InputTensor < -Threshold ? InputTensor + Bias : 0",
        "abs(InputTensor) > Threshold ? InputGradientTensor : 0",
        forward=lambda x, bias, threshold: e.where(x > threshold, x - bias, e.where(x < -threshold, x + bias, 0)),
        gradient=lambda x, dy, bias, threshold: e.where((x > threshold) | (x < -threshold), dy, 0),
        scalars=(Scalar("bias", "Bias", 0.0), Scalar("threshold", "Threshold", 0.5)),
        integers_from=FL.LEVEL_5_1, integer_types=INTEGERS + UNSIGNED,
        notes="PyTorch's softshrink kinks: the gradient is 0 at |X| = Threshold and for NaN. On integers, X is "
              "compared with the FP32 Threshold exactly and X - Bias (X + Bias) is exact, rounded toward zero "
              "(ONNX Runtime's conversion) and saturated to the data type's range."),
    Activation(
        "SOFTSIGN", "softsign", FL.LEVEL_1_0, "InputTensor / (1 + abs(InputTensor))",
        "InputGradientTensor / (1 + abs(InputTensor))^2",
        forward=lambda x: e.where(e.isinf(x), e.where(x > 0, 1, -1), x / (1 + e.abs_(x))),
        gradient=lambda x, dy: dy / ((1 + e.abs_(x)) * (1 + e.abs_(x))),
        notes="softsign(±inf) = ±1; the gradient there is ±0 (dY over an infinite square)."),
    Activation(
        "HARD_SWISH", "hard_swish", FL.LEVEL_6_2, "InputTensor * max(0, min(Alpha * InputTensor + Beta, 1))",
        "v < 0 ? 0 : v <= 1 ? InputGradientTensor * (Alpha * InputTensor + v) : InputGradientTensor, "
        "v = Alpha * InputTensor + Beta",
        forward=lambda x, alpha, beta: x * e.maximum(0, e.minimum(alpha * x + beta, 1)),
        gradient=lambda x, dy, alpha, beta: e.where(
            alpha * x + beta < 0, 0, e.where(alpha * x + beta <= 1, dy * (alpha * x + (alpha * x + beta)), dy)),
        scalars=(Scalar("alpha", "Alpha", ONE_SIXTH), Scalar("beta", "Beta", 0.5)),
        notes="PyTorch's hardswish_backward kinks (x < -3: 0; x <= 3: x/3 + 1/2; else 1 for the defaults), "
              "in terms of v = Alpha·X + Beta; as in PyTorch, NaN X gives dY."),
    Activation(
        "ELU", "elu", FL.LEVEL_1_0, "InputTensor >= 0 ? InputTensor : Alpha * (exp(InputTensor) - 1)",
        "InputTensor > 0 ? InputGradientTensor : InputGradientTensor * Alpha * exp(InputTensor)",
        forward=lambda x, alpha: e.where(x >= 0, x, alpha * e.expm1(x)),
        gradient=lambda x, dy, alpha: e.where(e.positive(x), dy, dy * (alpha * e.exp(x))),
        use_dst=lambda y, dy, alpha: e.where(e.positive(y), dy, dy * (y + alpha)),
        scalars=(Scalar("alpha", "Alpha", 1.0),), check=_elu_use_dst_needs_nonnegative_alpha,
        notes="oneDNN's elu: the gradient at X = 0 is Alpha; use_dst (Y + Alpha) needs Alpha >= 0. "
              + TRANSCENDENTAL_NOTE),
    Activation(
        "SCALED_ELU", "scaled_elu", FL.LEVEL_1_0,
        "InputTensor > 0 ? Gamma * InputTensor : Gamma * (Alpha * exp(InputTensor) - Alpha)",
        "InputTensor > 0 ? Gamma * InputGradientTensor : InputGradientTensor * Gamma * Alpha * exp(InputTensor)",
        forward=lambda x, alpha, gamma: e.where(e.positive(x), gamma * x, gamma * (alpha * e.expm1(x))),
        gradient=lambda x, dy, alpha, gamma: e.where(e.positive(x), gamma * dy, dy * (gamma * (alpha * e.exp(x)))),
        scalars=(Scalar("alpha", "Alpha", 1.67326319217681884765625),
                 Scalar("gamma", "Gamma", 1.05070102214813232421875)),
        notes="Alpha·e^X - Alpha is computed as Alpha·expm1(X) (the same value, without cancellation). "
              + TRANSCENDENTAL_NOTE),
    Activation(
        "CELU", "celu", FL.LEVEL_3_0, "max(0, InputTensor) + min(0, Alpha * (exp(InputTensor / Alpha) - 1))",
        "InputTensor > 0 ? InputGradientTensor : InputGradientTensor * exp(InputTensor / Alpha)",
        forward=lambda x, alpha: e.where(e.positive(x), x, alpha * e.expm1(x / alpha)),
        gradient=lambda x, dy, alpha: e.where(e.positive(x), dy, dy * e.exp(x / alpha)),
        scalars=(Scalar("alpha", "Alpha", 1.0),), check=_nonzero("alpha", "Alpha"),
        notes="PyTorch's celu kinks (the gradient at X = 0 is 1). " + TRANSCENDENTAL_NOTE),
    Activation(
        "SIGMOID", "sigmoid", FL.LEVEL_1_0, "1 / (1 + exp(-InputTensor))",
        "InputGradientTensor * sigmoid'(InputTensor)",
        forward=lambda x: e.sigmoid(x), gradient=lambda x, dy: dy * e.sigmoid_slope(x),
        use_dst=lambda y, dy: (dy * y) * (1 - y), infiniop="Sigmoid",
        notes="sigmoid'(X) = e^-|X| / (1 + e^-|X|)^2, accurate where 1 - sigmoid(X) would cancel; use_dst "
              "is oneDNN's dY·Y·(1 - Y). " + TRANSCENDENTAL_NOTE),
    Activation(
        "TANH", "tanh", FL.LEVEL_1_0, "tanh(InputTensor)", "InputGradientTensor * (1 - tanh(InputTensor)^2)",
        forward=lambda x: e.tanh(x), gradient=lambda x, dy: dy * e.tanh_slope(x),
        use_dst=lambda y, dy: (dy * (1 - y)) * (1 + y),
        notes="1 - tanh^2 X is computed as 4e^-2|X| / (1 + e^-2|X|)^2, accurate for large |X|; use_dst is "
              "oneDNN's dY·(1 - Y)·(1 + Y). " + TRANSCENDENTAL_NOTE),
    Activation(
        "SCALED_TANH", "scaled_tanh", FL.LEVEL_1_0, "Alpha * tanh(Beta * InputTensor)",
        "InputGradientTensor * Alpha * Beta * (1 - tanh(Beta * InputTensor)^2)",
        forward=lambda x, alpha, beta: alpha * e.tanh(beta * x),
        gradient=lambda x, dy, alpha, beta: dy * ((alpha * beta) * e.tanh_slope(beta * x)),
        scalars=(Scalar("alpha", "Alpha", 1.0), Scalar("beta", "Beta", 0.5)),
        notes=TRANSCENDENTAL_NOTE),
    Activation(
        "SOFTPLUS", "softplus", FL.LEVEL_1_0, "log(1 + exp(Steepness * InputTensor)) / Steepness",
        "InputGradientTensor * sigmoid(Steepness * InputTensor)",
        forward=lambda x, steepness: e.softplus(steepness * x) / steepness,
        gradient=lambda x, dy, steepness: dy * e.sigmoid(steepness * x),
        scalars=(Scalar("steepness", "Steepness", 1.0),), check=_nonzero("steepness", "Steepness"),
        level_check=_steepness_at_least_one_before_6_4,
        notes="log(1 + e^x) as max(x, 0) + log1p(e^-|x|): softplus(100) = 100, no overflow. "
              + TRANSCENDENTAL_NOTE),
    Activation(
        "PARAMETRIC_SOFTPLUS", "parametric_softplus", FL.LEVEL_1_0, "Alpha * log(1 + exp(Beta * InputTensor))",
        "InputGradientTensor * Alpha * Beta * sigmoid(Beta * InputTensor)",
        forward=lambda x, alpha, beta: alpha * _softplus_of_product(beta, x),
        gradient=lambda x, dy, alpha, beta: dy * ((alpha * beta) * _sigmoid_of_product(beta, x)),
        scalars=(Scalar("alpha", "Alpha"), Scalar("beta", "Beta")),
        notes="The rounding error of Beta·X is carried into softplus and sigmoid (f(p) + err·f'(p)). "
              + TRANSCENDENTAL_NOTE),
    Activation(
        "SWISH", "swish", FL.LEVEL_6_2, "InputTensor * sigmoid(SigmoidInputScale * InputTensor)",
        "InputGradientTensor * (s + InputTensor * SigmoidInputScale * s * (1 - s)), "
        "s = sigmoid(SigmoidInputScale * InputTensor)",
        forward=lambda x, scale: x * e.sigmoid(scale * x),
        gradient=lambda x, dy, scale: dy * (e.sigmoid(scale * x) + (x * scale) * e.sigmoid_slope(scale * x)),
        scalars=(Scalar("sigmoid_input_scale", "SigmoidInputScale", 1.0),),
        notes="s·(1 - s) is computed as sigmoid'(k·X) (no cancellation). " + TRANSCENDENTAL_NOTE),
    Activation(
        "GELU", "gelu", FL.LEVEL_5_1, "0.5 * InputTensor * (1 + erf(InputTensor / sqrt(2)))",
        "InputGradientTensor * (Phi(InputTensor) + InputTensor * phi(InputTensor)), Phi the standard normal CDF, "
        "phi its density",
        forward=lambda x: e.gelu(x), gradient=lambda x, dy: dy * e.gelu_slope(x), in_place=False,
        approximations=(Approximation(
            "tanh", "0.5 * InputTensor * (1 + tanh(sqrt(2 / pi) * (InputTensor + 0.044715 * InputTensor^3)))",
            "InputGradientTensor * d/dx of that", forward=_gelu_tanh, gradient=_gelu_tanh_grad),),
        infiniop="Gelu", infiniop_choices=(("approximate", "tanh"),),
        notes="x·Phi(x) without forming 1 + erf(x/sqrt 2), which cancels for x < 0: GELU(-10) is -7.6e-23. "
              "GELU(-inf) is -0 and its gradient there 0 (the limits); NaN gives NaN. approximate='tanh' is "
              "PyTorch's and InfiniCore's approximation, computed as x·sigmoid(2u) (1 + tanh u = 2 sigmoid(2u), "
              "which does not cancel); InfiniCore's GeluBackward uses it. " + TRANSCENDENTAL_NOTE),
    Activation(
        "SOFTMAX", "softmax", FL.LEVEL_1_0, "exp(InputTensor) / sum(exp(InputTensor))",
        "Y * (InputGradientTensor - sum(InputGradientTensor * Y)), Y = softmax(InputTensor)",
        forward=_softmax, gradient=lambda x, dy: _softmax_grad_from_y(_softmax(x), dy),
        use_dst=_softmax_grad_from_y, axes_form=FL.LEVEL_5_1, in_place=False, gradient_in_place=False,
        notes=ROWWISE_NOTE + "e^(X - max) with X - max carried exactly, so no input overflows; a row holding "
              "+inf or NaN gives NaN (as PyTorch). " + "use_dst is oneDNN's Y·(dY - sum(dY·Y)). "
              + TRANSCENDENTAL_NOTE),
    Activation(
        "LOG_SOFTMAX", "log_softmax", FL.LEVEL_1_0, "InputTensor - log(sum(exp(InputTensor)))",
        "InputGradientTensor - exp(Y) * sum(InputGradientTensor), Y = log_softmax(InputTensor)",
        forward=_log_softmax, gradient=lambda x, dy: _log_softmax_grad_from_y(_log_softmax(x), dy),
        use_dst=_log_softmax_grad_from_y, axes_form=FL.LEVEL_5_1, in_place=False, gradient_in_place=False,
        notes=ROWWISE_NOTE + "(X - max) - log(sum(e^(X - max))). use_dst is oneDNN's dY - e^Y·sum(dY). "
              + TRANSCENDENTAL_NOTE),
    Activation(
        "HARDMAX", "hardmax", FL.LEVEL_1_0, "1 at the first maximum of each row, else 0", "0",
        forward=_hardmax, gradient=lambda x, dy: e.ZERO_BITS, axes_form=FL.LEVEL_5_1, in_place=False,
        gradient_in_place=False,
        notes=ROWWISE_NOTE + "The first maximum in increasing index order over the reduced axes; -0 equals +0; "
              "a NaN counts as the maximum (NumPy's argmax), so the first NaN of a row gets the 1. The "
              "gradient is 0 everywhere (hardmax is piecewise constant)."),
    Activation(
        "PARAMETERIZED_RELU", "parameterized_relu", FL.LEVEL_1_0,
        "InputTensor >= 0 ? InputTensor : SlopeTensor * InputTensor", "",
        forward=lambda x, slope: e.where(x >= 0, x, slope * x), gradient=None,
        extra_inputs=(("slope_tensor", "SlopeTensor"),), integers_from=FL.LEVEL_5_1,
        notes="SlopeTensor has the input's Sizes and broadcasts through zero strides. On integers, Slope·X is "
              "the exact product saturated to the data type's range (NumPy would wrap: -128·2 is 0 in int8, "
              "where dmlpy gives -128). The gradient is ACTIVATION_PARAMETERIZED_RELU_GRAD (oneDNN's "
              "PReLUBackward, with the slope's gradient; floats only)."),
)


DESCS: dict[str, type] = {cls.__name__: cls for _row in TABLE for cls in declare(_row)}
globals().update(DESCS)
ROWS: dict[str, Activation] = {row.name: row for row in TABLE}

__all__ = ["ROWS", "TABLE", "Activation", "Scalar", *DESCS]
