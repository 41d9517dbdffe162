"""DirectML's activations, forward and backward: one table row per operator.

A row declares the operator's DirectML name, the level it appeared at, its scalars with
DirectML's defaults, and its math as expressions (dmlpy/expr.py): the forward f(x), the
gradient dX from X and dY, and, where oneDNN offers one, the gradient from the forward's
output Y (`use_dst`). From each row come the forward desc class
(`Activation<Name>OperatorDesc`), the gradient desc class (`Activation<Name>GradOperatorDesc`,
a dmlpy extension except DirectML's own RELU_GRAD), their validation and feature-level
gating, their kernels, the NumPy front ends and the docs.

Conventions the catalogue leaves open (written here once, and in docs/operators.md):
- Kinks follow oneDNN's reference math where oneDNN has the algorithm, else PyTorch's
  derivatives; NaN in gives NaN out, except where the formula is a select on a comparison
  (a comparison with NaN is false).
- Selects between inputs pass bits through untouched; everything else is FP32 arithmetic
  rounded once to the data type (see expr.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import expr as e
from .codegen import ElementwiseMath, ReducedOutput, plan_elementwise, plan_reduction
from .errors import InvalidArgumentError
from .schema import (
    OperatorDesc,
    Support,
    TensorRole,
    axes_field,
    choice_field,
    flag_field,
    operator,
    scalar_field,
    tensor_field,
)
from .tensor_desc import BufferTensorDesc
from .types import FeatureLevel as FL
from .types import TensorDataType as T

FLOATS = (T.FLOAT32, T.FLOAT16)
INTEGERS = (T.INT32, T.INT16, T.INT8)
UNSIGNED = (T.UINT32, T.UINT16, T.UINT8)


@dataclass(frozen=True)
class Scalar:
    name: str  # the field, e.g. "alpha"
    dml_name: str  # DirectML's member, e.g. "Alpha"
    default: float | None = None  # DirectML's default; None: required


@dataclass(frozen=True)
class Approximation:
    """Another form of a row's math, chosen by the descs' `approximate` field (a dmlpy
    extension: DirectML's own form is "none")."""

    name: str  # the field's value, e.g. "tanh"
    formula: str
    gradient_formula: str
    forward: Callable[..., e.Expr]
    gradient: Callable[..., e.Expr]


@dataclass(frozen=True)
class Activation:
    """One row of the table. Expressions are functions of e.Expr values: the forward takes
    (x, *scalars) and returns f(x); the gradient takes (x, dy, *scalars); the use_dst
    gradient takes (y, dy, *scalars), or is "same" where the gradient from X is also right
    for Y (ReLU: Y > 0 exactly where X > 0)."""

    dml_name: str  # DirectML's DML_OPERATOR_TYPE without ACTIVATION_, e.g. "ELU"
    name: str  # the front end's name, e.g. "elu"
    introduced: FL
    formula: str
    gradient_formula: str
    forward: Callable[..., e.Expr]
    gradient: Callable[..., e.Expr] | None
    scalars: tuple[Scalar, ...] = ()
    use_dst: Callable[..., e.Expr] | str | None = None
    integers_from: FL | None = None  # integer_types from this level, computed exactly (expr.integer)
    integer_types: tuple[T, ...] = INTEGERS
    in_place: bool = True
    extra_inputs: tuple[tuple[str, str], ...] = ()  # (field, DirectML member) after InputTensor
    check: Callable | None = None  # further rules on a desc (scalars' ranges)
    level_check: Callable | None = None  # (desc, device level): scalar rules that changed between levels
    infiniop: str | None = None  # InfiniCore's name for the backward operator, e.g. "Relu"
    notes: str = ""  # the kink and NaN conventions, for the docs
    # Row-wise operators (the softmax family) reduce over the last axis, of a tensor whose
    # effective rank is at most 2; from `axes_form` on, DirectML also has their <NAME>1 form
    # over any listed axes.
    axes_form: FL | None = None
    gradient_in_place: bool = True
    approximations: tuple[Approximation, ...] = ()
    infiniop_choices: tuple[tuple[str, str], ...] = ()  # (field, value) InfiniCore's operator means
    gradient_in_directml: bool = False  # DirectML has the gradient itself (RELU_GRAD), not only dmlpy

    @property
    def approximate_choices(self) -> tuple[str, ...]:
        return ("none", *(a.name for a in self.approximations)) if self.approximations else ()

    @property
    def class_stem(self) -> str:
        return "".join(part.capitalize() for part in self.dml_name.split("_"))


def _dims_by_level(introduced: FL) -> list[tuple[FL, range]]:
    """DirectML's dimension ladder for activations: exactly 4 dims at FL 1_0, 4-5 at 2_0,
    1-8 from 3_0; an operator introduced later takes 1-8 from its own level."""
    ladder = [(FL.LEVEL_1_0, range(4, 5)), (FL.LEVEL_2_0, range(4, 6)), (FL.LEVEL_3_0, range(1, 9))]
    steps = [(max(level, introduced), dims) for level, dims in ladder if level >= introduced or dims.stop == 9]
    return [step for step in steps if step[0] >= introduced] or [(introduced, range(1, 9))]


def forward_support(row: Activation) -> tuple[Support, ...]:
    rows = [Support(level, FLOATS, dims) for level, dims in _dims_by_level(row.introduced)]
    if row.integers_from is not None:
        rows.append(Support(max(row.integers_from, row.introduced), row.integer_types))
    rows.append(Support(max(FL.LEVEL_3_0, row.introduced), (T.BFLOAT16,)))  # the dmlpy extension type
    return tuple(rows)


def gradient_support(row: Activation) -> tuple[Support, ...]:
    """Gradients are offered from FEATURE_LEVEL_3_0, where DirectML's activation gradients
    began, or from the forward's level if later; 1-8 dims."""
    level = max(FL.LEVEL_3_0, row.introduced)
    rows = [Support(level, FLOATS)]
    if row.integers_from is not None:
        rows.append(Support(max(row.integers_from, level), row.integer_types))
    rows.append(Support(level, (T.BFLOAT16,)))
    return tuple(rows)


def _scalar_exprs(row: Activation) -> list[e.Expr]:
    return [e.scalar(index) for index in range(len(row.scalars))]


def _scalar_values(row: Activation, desc) -> tuple[float, ...]:
    return tuple(getattr(desc, s.name) for s in row.scalars)


def _last_axis(desc) -> tuple[int, ...]:
    return (desc.input_tensor.dimension_count - 1,)


def _listed_axes(desc) -> tuple[int, ...]:
    return desc.axes


def _elementwise(row: Activation, expression: Callable) -> Callable:
    """The desc's math element by element, or None where it reduces over rows."""
    def math(desc) -> ElementwiseMath | None:
        result = expression(desc)
        return None if e.reductions(result) else ElementwiseMath(result, _scalar_values(row, desc))
    return math


def _kernel(row: Activation, expression: Callable, input_fields: tuple[str, ...], output_field: str,
            axes_of: Callable = _last_axis):
    """The element-wise kernel, or the reduction kernel where the math reduces over rows."""
    def plan(desc, adapter):
        result = expression(desc)
        inputs, output = [getattr(desc, name) for name in input_fields], getattr(desc, output_field)
        if e.reductions(result):
            axes = set(axes_of(desc))
            reduced = tuple(d in axes for d in range(output.dimension_count))
            return plan_reduction(inputs, [ReducedOutput(output, result)], reduced, adapter,
                                  _scalar_values(row, desc))
        return plan_elementwise(inputs, output, adapter, e.render(result), _scalar_values(row, desc),
                                e.uses_transcendentals(result))
    return plan


def _effective_rank_at_most_two(desc) -> None:
    """Without Axes the reduction is over the last axis of a tensor whose effective rank
    (its sizes without leading 1s) is at most 2 (DirectML's rule)."""
    sizes = desc.input_tensor.sizes
    effective = sizes[next((d for d, size in enumerate(sizes) if size != 1), len(sizes) - 1):]
    if len(effective) > 2:
        raise InvalidArgumentError(
            f"{type(desc).__name__}.input_tensor.sizes {sizes} have effective rank {len(effective)}: without Axes "
            f"{desc.schema.dml_name} takes at most 2 dims after leading 1s (use the *1 form with axes)", "sizes")


def _both(*checks: Callable | None) -> Callable | None:
    present = [check for check in checks if check is not None]
    if len(present) < 2:
        return present[0] if present else None

    def check(desc) -> None:
        for each in present:
            each(desc)
    check.__doc__ = " ".join(each.__doc__.strip() for each in present)
    return check


def _integer_form(row: Activation, expression: Callable, input_count: int, scalars: list[e.Expr]) -> e.Expr | None:
    """The row's math over integer inputs (exact, saturating), where the row offers integers;
    a row whose math has no integer form fails here, when it is declared."""
    if row.integers_from is None:
        return None
    return expression(*(e.integer(e.tensor(k)) for k in range(input_count)), *scalars)


def _by_data_type(by_form: dict[str, e.Expr], integer: e.Expr | None) -> Callable:
    """The expression a desc runs: the integer form for integer data types, else the form
    its `approximate` field names."""
    def choose(desc) -> e.Expr:
        if integer is not None and desc.input_tensor.data_type not in (*FLOATS, T.BFLOAT16):
            return integer
        return by_form[getattr(desc, "approximate", "none")]
    return choose


def _make_class(name: str, doc: str, tensors: list[tuple[str, str, TensorRole]], row: Activation,
                with_flag: bool, with_axes: bool = False) -> type:
    annotations, namespace = {}, {"__doc__": doc, "__module__": __name__, "__qualname__": name}
    for field, dml_name, role in tensors:
        annotations[field] = BufferTensorDesc
        namespace[field] = tensor_field(role, dml_name)
    for s in row.scalars:
        annotations[s.name] = float
        namespace[s.name] = scalar_field(s.dml_name, s.default)
    if with_axes:
        annotations["axes"] = tuple
        namespace["axes"] = axes_field("Axes")
    if row.approximations:
        annotations["approximate"] = str
        namespace["approximate"] = choice_field(row.approximate_choices, "the form of the math: " + "; ".join(
            [f"'none': {row.formula} (DirectML's)"] + [f"'{a.name}': {a.formula}" for a in row.approximations]))
    if with_flag:
        annotations["use_dst"] = bool
        namespace["use_dst"] = flag_field("input_tensor holds the forward's output Y instead of X (oneDNN's use_dst)")
    namespace["__annotations__"] = annotations
    return type(name, (OperatorDesc,), namespace)


def declare(row: Activation) -> list[type]:
    """Register the row's forward and gradient operators (and their *1 forms); returns
    their desc classes."""
    classes = [*_declare_form(row, "", row.introduced, _last_axis)]
    if row.axes_form is not None:
        classes += _declare_form(row, "1", row.axes_form, _listed_axes)
    return classes


def _declare_form(row: Activation, suffix: str, introduced: FL, axes_of: Callable) -> list[type]:
    scalars = _scalar_exprs(row)
    x = e.tensor(0)
    forward_inputs = ("input_tensor", *(field for field, _ in row.extra_inputs))
    extra = [e.tensor(1 + k) for k in range(len(row.extra_inputs))]
    forward_result = row.forward(x, *extra, *scalars)
    forward_by_form = {"none": forward_result, **{a.name: a.forward(x, *extra, *scalars) for a in row.approximations}}
    forward_of = _by_data_type(forward_by_form, _integer_form(row, row.forward, 1 + len(extra), scalars))
    with_axes = suffix == "1"
    rowwise_check = _effective_rank_at_most_two if row.axes_form is not None and not with_axes else None
    dml_name, name, stem = row.dml_name + suffix, row.name + suffix, row.class_stem + suffix
    form = dataclasses.replace(row, introduced=introduced)
    forward_class = _make_class(
        f"Activation{stem}OperatorDesc",
        f"DML_ACTIVATION_{dml_name}_OPERATOR_DESC: {row.formula}",
        [("input_tensor", "InputTensor", TensorRole.INPUT),
         *[(field, dml, TensorRole.INPUT) for field, dml in row.extra_inputs],
         ("output_tensor", "OutputTensor", TensorRole.OUTPUT)], row, with_flag=False, with_axes=with_axes)
    forward_class = operator(
        dml_name=f"ACTIVATION_{dml_name}", name=name, formula=f"OutputTensor = {row.formula}",
        support=forward_support(form), same={"data_type": None, "dimension_count": None, "sizes": None},
        shader=_shader(forward_result), in_place=row.in_place, notes=row.notes,
        kernel=_kernel(row, forward_of, forward_inputs, "output_tensor", axes_of),
        elementwise=_elementwise(row, forward_of),
        check=_both(rowwise_check, row.check), level_check=row.level_check,
    )(forward_class)
    if row.gradient is None:
        return [forward_class]
    dy = e.tensor(1)
    from_x = row.gradient(x, dy, *scalars)
    from_y = row.use_dst(x, dy, *scalars) if callable(row.use_dst) else from_x
    from_x_by_form = {"none": from_x, **{a.name: a.gradient(x, dy, *scalars) for a in row.approximations}}
    from_x_of = _by_data_type(from_x_by_form, _integer_form(row, row.gradient, 2, scalars))
    has_flag = callable(row.use_dst)

    def gradient_of(desc) -> e.Expr:
        return from_y if getattr(desc, "use_dst", False) else from_x_of(desc)

    gradient_class = _make_class(
        f"Activation{stem}GradOperatorDesc",
        f"The gradient of ACTIVATION_{dml_name}: OutputGradientTensor = {row.gradient_formula}",
        [("input_tensor", "InputTensor", TensorRole.INPUT),
         ("input_gradient_tensor", "InputGradientTensor", TensorRole.INPUT),
         ("output_gradient_tensor", "OutputGradientTensor", TensorRole.OUTPUT)], row, with_flag=has_flag,
        with_axes=with_axes)
    gradient_class = operator(
        dml_name=f"ACTIVATION_{dml_name}_GRAD", name=f"{name}_grad",
        formula=f"OutputGradientTensor = {row.gradient_formula}",
        support=gradient_support(form), same={"data_type": None, "dimension_count": None, "sizes": None},
        shader=_shader(from_x), extension=not row.gradient_in_directml, notes=row.notes, in_place=row.gradient_in_place,
        kernel=_kernel(row, gradient_of, ("input_tensor", "input_gradient_tensor"), "output_gradient_tensor", axes_of),
        elementwise=_elementwise(row, gradient_of),
        check=_both(rowwise_check, row.check), level_check=row.level_check,
    )(gradient_class)
    return [forward_class, gradient_class]


def _shader(result: e.Expr) -> str:
    return "reduce.comp" if e.reductions(result) else "elementwise.comp"


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
    largest = e.reduce_max(x)
    return e.where(e.first_where(x.equals(largest) | e.isnan(x)), 1, 0)


def _softmax_grad_from_y(y: e.Expr, dy: e.Expr) -> e.Expr:
    """oneDNN's softmax backward: Y * (dY - sum(dY * Y))."""
    return y * (dy - e.reduce_sum(dy * y))


def _log_softmax_grad_from_y(y: e.Expr, dy: e.Expr) -> e.Expr:
    """oneDNN's logsoftmax backward: dY - e^Y * sum(dY)."""
    return dy - e.exp(y) * e.reduce_sum(dy)


ROWWISE_NOTE = ("Reduces over the last axis (effective rank at most 2), or in the *1 form over `axes`. Sums are "
                "FP32, in the balanced pairwise tree over each row's elements in index order: the same bits for "
                "any layout, workgroup size or device. The gradient from X first computes the forward's Y rounded "
                "to the data type, so it equals the gradient from that Y (use_dst) bit for bit. ")

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
        forward=_softmax, gradient=lambda x, dy: _softmax_grad_from_y(e.rounded(_softmax(x)), dy),
        use_dst=_softmax_grad_from_y, axes_form=FL.LEVEL_5_1, in_place=False, gradient_in_place=False,
        notes=ROWWISE_NOTE + "e^(X - max) with X - max carried exactly, so no input overflows; a row holding "
              "+inf or NaN gives NaN (as PyTorch). " + "use_dst is oneDNN's Y·(dY - sum(dY·Y)). "
              + TRANSCENDENTAL_NOTE),
    Activation(
        "LOG_SOFTMAX", "log_softmax", FL.LEVEL_1_0, "InputTensor - log(sum(exp(InputTensor)))",
        "InputGradientTensor - exp(Y) * sum(InputGradientTensor), Y = log_softmax(InputTensor)",
        forward=_log_softmax, gradient=lambda x, dy: _log_softmax_grad_from_y(e.rounded(_log_softmax(x)), dy),
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
