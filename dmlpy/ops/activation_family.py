"""The activation family: what a row of dmlpy/ops/activations.py declares and what it
becomes. A row declares the operator's DirectML name, the level it appeared at, its scalars
with DirectML's defaults, and its math as expressions (dmlpy/ir/expr.py): the forward f(x),
the gradient dX from X and dY, and, where oneDNN offers one, the gradient from the forward's
output Y (`use_dst`). From each row come the forward desc class
(`Activation<Name>OperatorDesc`), the gradient desc class (`Activation<Name>GradOperatorDesc`,
a dmlpy extension except DirectML's own RELU_GRAD), their validation and feature-level
gating, and their kernels: element-wise where the math is, the reduction kernel where it
reduces over rows (the softmax family). The front ends, graph functions and docs are
derived from the descs by the layers above.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..base.errors import InvalidArgumentError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..ir import expr as e
from ..kernels.codegen import ElementwiseMath, plan_elementwise
from ..kernels.reduction import ReducedOutput, ReductionMath, plan_reduction
from .family import Family, FrontEndShape, KernelKind
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

FLOATS = (T.FLOAT32, T.FLOAT16)
FAMILY = Family(
    "activations", KernelKind.ELEMENTWISE, FrontEndShape.BROADCAST, "dmlpy/ops/activations.py",
    "DirectML's activations and a gradient for each: element-wise, or row-wise over the last axis or "
    "listed axes (the softmax family, whose front ends take `axes`)")
# The activations' tensors in the front ends: x and dy, as in oneDNN and PyTorch.
ARGUMENTS = {"input_tensor": "x", "input_gradient_tensor": "dy"}
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
        return plan_elementwise(inputs, output, adapter, result, _scalar_values(row, desc))
    return plan


def _reduction(row: Activation, expression: Callable, axes_of: Callable = _last_axis):
    """The math of a row-wise operator's kernel, which graphs give an element-wise prologue
    (None for an operator whose math reduces nothing)."""
    def math(desc) -> ReductionMath | None:
        result = expression(desc)
        if not e.reductions(result):
            return None
        axes = set(axes_of(desc))
        reduced = tuple(d in axes for d in range(desc.input_tensor.dimension_count))
        return ReductionMath(((result, False),), reduced, _scalar_values(row, desc))
    return math


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
        namespace[field] = tensor_field(role, dml_name, ARGUMENTS.get(field))
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
        dml_name=f"ACTIVATION_{dml_name}", name=name, formula=f"OutputTensor = {row.formula}", family=FAMILY,
        axes_form=f"{row.name}1" if row.axes_form is not None and not with_axes else None,
        support=forward_support(form), same={"data_type": None, "dimension_count": None, "sizes": None},
        shader=_shader(forward_result), in_place=row.in_place, notes=row.notes,
        kernel=_kernel(row, forward_of, forward_inputs, "output_tensor", axes_of),
        reduction=_reduction(row, forward_of, axes_of) if row.axes_form is not None else None,
        elementwise=_elementwise(row, forward_of),
        check=_both(rowwise_check, row.check), level_check=row.level_check,
    )(forward_class)
    if row.gradient is None:
        return [forward_class]
    dy = e.tensor(1)
    from_x = row.gradient(x, dy, *scalars)
    from_x_by_form = {"none": from_x, **{a.name: a.gradient(x, dy, *scalars) for a in row.approximations}}
    from_x_of = _by_data_type(from_x_by_form, _integer_form(row, row.gradient, 2, scalars))
    # A row whose gradient from X is also right for Y ("same") takes the flag and ignores it.
    has_flag = row.use_dst is not None
    from_y = row.use_dst(x, dy, *scalars) if callable(row.use_dst) else None

    def gradient_of(desc) -> e.Expr:
        return from_y if from_y is not None and getattr(desc, "use_dst", False) else from_x_of(desc)

    gradient_class = _make_class(
        f"Activation{stem}GradOperatorDesc",
        f"The gradient of ACTIVATION_{dml_name}: OutputGradientTensor = {row.gradient_formula}",
        [("input_tensor", "InputTensor", TensorRole.INPUT),
         ("input_gradient_tensor", "InputGradientTensor", TensorRole.INPUT),
         ("output_gradient_tensor", "OutputGradientTensor", TensorRole.OUTPUT)], row, with_flag=has_flag,
        with_axes=with_axes)
    gradient_class = operator(
        dml_name=f"ACTIVATION_{dml_name}_GRAD", name=f"{name}_grad", family=FAMILY,
        axes_form=f"{row.name}1_grad" if row.axes_form is not None and not with_axes else None,
        formula=f"OutputGradientTensor = {row.gradient_formula}",
        support=gradient_support(form), same={"data_type": None, "dimension_count": None, "sizes": None},
        shader=_shader(from_x), extension=not row.gradient_in_directml, notes=row.notes, in_place=row.gradient_in_place,
        kernel=_kernel(row, gradient_of, ("input_tensor", "input_gradient_tensor"), "output_gradient_tensor", axes_of),
        reduction=_reduction(row, gradient_of, axes_of) if row.axes_form is not None else None,
        elementwise=_elementwise(row, gradient_of),
        check=_both(rowwise_check, row.check), level_check=row.level_check,
    )(gradient_class)
    return [forward_class, gradient_class]


def _shader(result: e.Expr) -> str:
    return "reduce.comp" if e.reductions(result) else "elementwise.comp"
