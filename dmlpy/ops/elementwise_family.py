"""The element-wise family: what a row of dmlpy/ops/elementwise.py declares and what it becomes.

A row declares one DirectML ELEMENT_WISE operator: its DirectML name, the front end's name,
its tensors (an input X, operands A and B, IF's condition), its FP32 scalars and enums with
DirectML's defaults, whether it takes DirectML's optional ScaleBias or a fused activation,
the data types and dimension counts of each feature level (DirectML's tables), and its math
as expressions (dmlpy/ir/expr.py): an FP32 form for the float types, an exact integer form
for the integer types, or a form on the stored bits that holds for every type. From each row
come the desc class (`ElementWise<Name>OperatorDesc`), its validation and feature-level
gating, and its kernel (the element-wise kernel family, which fuses in graphs and device-array
chains); the front ends, graph functions and docs are derived from the desc by the layers
above.

A desc with a 64-bit tensor (FLOAT64, INT64, UINT64) runs in the 64-bit kernel family
(dmlpy/kernels/wide.py): the row's integer or bit form, or the row's own `wide` kernel (CAST's
and IDENTITY's conversions). A data type DirectML accepts for which the row has no form
(a float form on FLOAT64; POW of an integer by a float exponent) is refused when the operator
is compiled, with UnsupportedError naming it: the desc itself is valid, as it is in DirectML.
"""

from __future__ import annotations

import dataclasses
import enum
import keyword
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np

from ..base.errors import InvalidArgumentError, UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..base.types import data_type_info
from ..ir import expr as e
from ..kernels.codegen import ElementwiseMath, KernelPlan, ScalarBits, is_wide
from ..kernels.wide import check_wide_math, plan_elementwise_any_width
from .family import Family, FrontEndShape, KernelKind
from .fields import (
    ScaleBias,
    data_type_field,
    enum_field,
    fused_activation_field,
    scalar_union_field,
    scale_bias_field,
    schema_of,
)
from .schema import OPERATORS, OperatorDesc, Support, TensorRole, operator, scalar_field, tensor_field

FAMILY = Family(
    "element-wise", KernelKind.ELEMENTWISE, FrontEndShape.BROADCAST, "dmlpy/ops/elementwise.py",
    "DirectML's ELEMENT_WISE operators: arithmetic, comparisons, logic, bits, rounding and selection, element by "
    "element over tensors of one shape (the front ends broadcast through zero strides)")

FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)


@dataclass(frozen=True)
class Operand:
    field: str  # e.g. "a_tensor"
    dml_name: str  # e.g. "ATensor"
    argument: str  # the front end's name, e.g. "a"
    data_types: tuple[T, ...] | None = None  # a fixed set (IF's UINT8 condition); None: the row's tables


X = (Operand("input_tensor", "InputTensor", "x"),)
AB = (Operand("a_tensor", "ATensor", "a"), Operand("b_tensor", "BTensor", "b"))
CONDITION_AB = (Operand("condition_tensor", "ConditionTensor", "condition", (T.UINT8,)), *AB)
GRADIENT = (Operand("input_tensor", "InputTensor", "x"), Operand("input_gradient_tensor", "InputGradientTensor", "dy"))


@dataclass(frozen=True)
class Scalar:
    name: str  # e.g. "min"
    dml_name: str  # e.g. "Min"
    default: float | None = None  # None: required


@dataclass(frozen=True)
class EnumChoice:
    name: str  # e.g. "rounding_mode"
    dml_name: str  # e.g. "RoundingMode"
    enum_type: type[enum.Enum]
    default: str | None = None  # None: required


@dataclass(frozen=True)
class ElementWise:
    """One row. Each math form takes the inputs (e.Expr, in operand order), then the FP32
    scalars (e.Expr), then the enums' members as keywords, and returns the output's value:
    `floats` over FP32 numbers (the inputs are decoded to FP32 exactly), `integers` over
    exact integers (e.integer), `bits` over the stored bits of any data type."""

    dml_name: str  # DirectML's DML_OPERATOR_TYPE without ELEMENT_WISE_, e.g. "ADD"
    name: str  # the front end's name, e.g. "add"
    formula: str
    support: tuple[Support, ...]  # DirectML's tables; BFLOAT16 is added for rows with a float form
    floats: Callable[..., e.Expr] | None = None
    integers: Callable[..., e.Expr] | None = None
    bits: Callable[..., e.Expr] | None = None
    operands: tuple[Operand, ...] = X
    scale_bias: bool = False  # DirectML's optional ScaleBias, applied to the input first
    scalars: tuple[Scalar, ...] = ()
    enums: tuple[EnumChoice, ...] = ()
    output_types: tuple[T, ...] | None = None  # a fixed set (a comparison's UINT8, UINT32); None: the inputs'
    same_type: tuple[str, ...] | None = None  # the fields sharing a DataType; None: every tensor
    in_place: bool = True
    fused_activation: bool = False  # ADD1's optional FusedActivation
    output_field: tuple[str, str] = ("output_tensor", "OutputTensor")
    level_check: Callable | None = None
    notes: str = ""
    # The math from the whole desc, where it depends on more than the inputs' type (CAST's on
    # the output's); the row then has no other form.
    custom: Callable[..., e.Expr] | None = None
    dml_prefix: str = "ELEMENT_WISE_"  # CAST is DML_CAST_OPERATOR_DESC
    class_prefix: str = "ElementWise"
    # DML_SCALAR_UNION members read as MinMaxDataType (CLIP1's Min and Max): the row then has a
    # `min_max_data_type` field, and its forms take these after the FP32 scalars, as numbers
    # for float types and exact integers for integer types.
    scalar_union: tuple[Scalar, ...] = ()
    # The kernel for a desc with a 64-bit tensor where the forms above do not give it
    # (kernels/wide.py: CAST's and IDENTITY's conversions); None: the integer or bit form runs
    # in the 64-bit kernel (plan_wide_math), and a float form is refused at compile time.
    wide: Callable[..., KernelPlan] | None = None

    @property
    def class_stem(self) -> str:
        return "".join(part.capitalize() for part in self.dml_name.split("_"))


def ladder(*rows: tuple[FL, tuple[T, ...], str]) -> tuple[Support, ...]:
    """DirectML's tables as Support rows: (level, data types, dimension counts as the page
    writes them: "4", "4 to 5" or "1 to 8")."""
    dims = {"4": range(4, 5), "4 to 5": range(4, 6), "1 to 8": range(1, 9)}
    return tuple(Support(level, types, dims[count]) for level, types, count in rows)


def _with_bfloat16(row: ElementWise) -> tuple[Support, ...]:
    """DirectML's tables, plus dmlpy's BFLOAT16 extension where the row computes floats: from
    the first level with 1-8 dims (3_0 for most), as for the activations."""
    if row.floats is None or not any(T.FLOAT32 in s.data_types for s in row.support):
        return row.support
    level = min(s.level for s in row.support if s.dimension_counts == range(1, 9) and T.FLOAT32 in s.data_types)
    return (*row.support, Support(level, (T.BFLOAT16,)))


def _form_for(row: ElementWise, data_type: T) -> Callable | None:
    """The row's math for `data_type`: its bit form (FLOAT64's only one), else its float or integer form."""
    if data_type == T.FLOAT64:
        return row.bits
    return row.bits or (row.floats if data_type in FLOATS else row.integers)


def _has_64_bit_tensor(desc) -> bool:
    """Whether any tensor the desc binds is FLOAT64, INT64 or UINT64: the forms compute none."""
    return any(is_wide(getattr(desc, t.name)) for t in desc.schema.present(desc))


def _computed_type(row: ElementWise, desc) -> T:
    """The data type that picks the math: the first operand the row's tables decide (IF's
    A, not its UINT8 condition)."""
    operand = next(o for o in row.operands if o.data_types is None)
    return getattr(desc, operand.field).data_type


def _math(row: ElementWise, desc) -> tuple[e.Expr, tuple[float, ...]]:
    """The desc's output element by element, and its FP32 scalars in order."""
    data_type = _computed_type(row, desc)
    form = row.custom or _form_for(row, data_type)
    # The 64-bit kernel computes integer and bit forms (kernels/wide.py), not float ones.
    if form is None or (_has_64_bit_tensor(desc) and (row.custom is not None or data_type in FLOATS)):
        raise UnsupportedError(
            f"{desc.schema.dml_name} on {data_type.name}: DirectML accepts it, but dmlpy does not compute "
            f"{data_type.name} for this operator yet (see docs/operators.md)", "data_type")
    if row.custom is not None:
        return row.custom(desc), ()
    scale_bias = getattr(desc, "scale_bias", None) if row.scale_bias else None
    if scale_bias is not None and data_type not in FLOATS:
        raise UnsupportedError(f"{desc.schema.dml_name}.scale_bias on {data_type.name}: dmlpy applies a ScaleBias to "
                               "float data types only", "scale_bias")
    scalar_values = [getattr(desc, s.name) for s in row.scalars]
    inputs = [e.tensor(k) for k in range(len(row.operands))]
    if form is not row.bits and data_type not in FLOATS:  # the integer form: exact integers
        floats = [o.dml_name for o in row.operands
                  if o.data_types is None and getattr(desc, o.field).data_type in FLOATS]
        if floats:
            raise UnsupportedError(f"{desc.schema.dml_name} with an integer {row.operands[0].dml_name} and a float "
                                   f"{floats[0]}: DirectML accepts it, but dmlpy computes integers with integers only",
                                   "data_type")
        inputs = [e.integer(x) if o.data_types is None else x for x, o in zip(inputs, row.operands)]
    union = []
    for s in row.scalar_union:  # after the FP32 scalars, before a ScaleBias's
        value = getattr(desc, s.name)
        index = len(scalar_values)
        if data_type in FLOATS:
            union.append(e.scalar(index))
            scalar_values.append(float(value))
        else:  # an integer's bits, a 64-bit type's in two words (low, high)
            union.append(e.integer_scalar(index, data_type_info(data_type).signed_integer))
            words = int(value) & 0xFFFFFFFFFFFFFFFF
            scalar_values += [ScalarBits(words & 0xFFFFFFFF)] + \
                ([ScalarBits(words >> 32)] if data_type_info(data_type).bits == 64 else [])
    if scale_bias is not None:  # Scale * X + Bias first, each operation rounded to FP32 on its own
        scale, bias = e.scalar(len(scalar_values)), e.scalar(len(scalar_values) + 1)
        inputs[0] = scale * inputs[0] + bias
        scalar_values += [scale_bias.scale, scale_bias.bias]
    result = form(*inputs, *[e.scalar(k) for k in range(len(row.scalars))], *union,
                  **{c.name: getattr(desc, c.name) for c in row.enums})
    activation = getattr(desc, "fused_activation", None) if row.fused_activation else None
    if activation is not None:
        result, scalar_values = _then_activation(desc, result, scalar_values, activation)
    return result, tuple(scalar_values)


def _then_activation(desc, result: e.Expr, scalar_values: list, activation) -> tuple[e.Expr, list]:
    """`result` stored as the output's data type, then the fused activation of it: the bits
    of the operator and the activation run one after the other."""
    output = getattr(desc, desc.schema.outputs[0].name)
    schema = schema_of(activation)
    bound = dataclasses.replace(activation, **{t.name: output for t in schema.tensors})
    math = schema.elementwise(bound)
    fused = e.substitute(math.result, [e.stored(result, output.data_type)], len(scalar_values))
    return fused, [*scalar_values, *math.scalars]


def _kernel(row: ElementWise):
    def plan(desc, adapter):
        if row.wide is not None and _has_64_bit_tensor(desc):
            return row.wide(desc, adapter)
        result, scalars = _math(row, desc)
        inputs = [getattr(desc, o.field) for o in row.operands]
        return plan_elementwise_any_width(inputs, getattr(desc, row.output_field[0]), adapter, result, scalars)
    return plan


def _elementwise(row: ElementWise):
    def math(desc) -> ElementwiseMath | None:
        wide = _has_64_bit_tensor(desc)
        if row.wide is not None and wide:
            return None  # a conversion kernel of its own (CAST's, IDENTITY's): not fused
        try:
            result, scalars = _math(row, desc)
            if wide:  # 64-bit math fuses only with 64-bit math (ops/fusion.py), in the 64-bit kernel
                check_wide_math(result, [getattr(desc, o.field) for o in row.operands],
                                getattr(desc, row.output_field[0]))
        except UnsupportedError:
            return None  # not fused: compiling it on its own says why
        return ElementwiseMath(result, scalars)
    return math


def declare(row: ElementWise) -> type:
    """Register the row's operator; returns its desc class."""
    annotations: dict[str, object] = {}
    namespace: dict[str, object] = {
        "__module__": __name__, "__qualname__": f"{row.class_prefix}{row.class_stem}OperatorDesc",
        "__doc__": f"DML_{row.dml_prefix}{row.dml_name}_OPERATOR_DESC: {row.formula}"}
    for operand in row.operands:
        annotations[operand.field] = BufferTensorDesc
        namespace[operand.field] = tensor_field(TensorRole.INPUT, operand.dml_name, operand.argument,
                                                operand.data_types)
    annotations[row.output_field[0]] = BufferTensorDesc
    namespace[row.output_field[0]] = tensor_field(TensorRole.OUTPUT, row.output_field[1], None, row.output_types)
    if row.scale_bias:
        annotations["scale_bias"] = ScaleBias | None
        namespace["scale_bias"] = scale_bias_field()
    for s in row.scalars:
        annotations[s.name] = float
        namespace[s.name] = scalar_field(s.dml_name, s.default, keyword_only=row.scale_bias)
    for c in row.enums:
        annotations[c.name] = c.enum_type
        namespace[c.name] = enum_field(c.enum_type, c.dml_name, c.default)
    if row.scalar_union:
        annotations["min_max_data_type"] = T | None
        namespace["min_max_data_type"] = data_type_field("MinMaxDataType", "the output's data type")
    for s in row.scalar_union:
        annotations[s.name] = float | int
        namespace[s.name] = scalar_union_field(s.dml_name)
    if row.fused_activation:
        annotations["fused_activation"] = OperatorDesc | None
        namespace["fused_activation"] = fused_activation_field()
    namespace["__annotations__"] = annotations
    cls = type(namespace["__qualname__"], (OperatorDesc,), namespace)
    same_type = row.same_type if row.same_type is not None else \
        tuple(o.field for o in row.operands if o.data_types is None) + \
        ((row.output_field[0],) if row.output_types is None else ())
    return operator(
        dml_name=f"{row.dml_prefix}{row.dml_name}", name=row.name, formula=f"{row.output_field[1]} = {row.formula}",
        family=FAMILY, support=_with_bfloat16(row),
        same={"data_type": same_type, "dimension_count": None, "sizes": None},
        shader="elementwise.comp", in_place=row.in_place, notes=row.notes,
        kernel=_kernel(row), elementwise=_elementwise(row),
        level_check=row.level_check, check=_scalar_union_check(row) if row.scalar_union else None,
    )(cls)


def _scalar_union_check(row: ElementWise):
    """DirectML's rule that MinMaxDataType equals the output's data type; each DML_SCALAR_UNION
    value must then be a value of that type (an integer type's: an int within its range)."""
    def check(desc) -> None:
        """MinMaxDataType (None: the output's) equals the output's data type; Min and Max are
        values of it (ints within its range for integer types)."""
        owner, output = type(desc).__name__, getattr(desc, row.output_field[0])
        named = desc.min_max_data_type
        if named is not None and named != output.data_type:
            raise InvalidArgumentError(
                f"{owner}.min_max_data_type {named.name} must equal {row.output_field[0]}.data_type "
                f"{output.data_type.name} (DirectML: MinMaxDataType matches the output's)", "min_max_data_type")
        info = data_type_info(output.data_type)
        if output.data_type in FLOATS:
            return
        bits = info.bits
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if info.signed_integer else (0, (1 << bits) - 1)
        for s in row.scalar_union:
            value = getattr(desc, s.name)
            if not isinstance(value, (int, np.integer)) or not low <= value <= high:
                raise InvalidArgumentError(
                    f"{owner}.{s.name} {value!r} is not a value of {output.data_type.name}: {s.dml_name} is read as "
                    f"MinMaxDataType, an int in [{low}, {high}]", s.name)
    return check


def directml_names(taken: Collection[str] = ()) -> dict[str, str]:
    """The element-wise front ends' DirectML names where an operator's own name is NumPy's:
    {DirectML's type in snake_case without ELEMENT_WISE_ (`if_` for IF, a Python keyword):
    the operator's name}. A DirectML name another operator already has (IDENTITY, TANH: the
    activations'), or one in `taken` (MAX, MIN and MEAN: NumPy's reductions in dmlpy), stays
    that one's."""
    names = {}
    for schema in OPERATORS.values():
        if schema.family is not FAMILY or not schema.dml_name.startswith("ELEMENT_WISE_"):
            continue
        name = schema.dml_name.removeprefix("ELEMENT_WISE_").lower()
        name = f"{name}_" if keyword.iskeyword(name) else name
        if name != schema.name and name not in OPERATORS and name not in taken:
            names[name] = schema.name
    return names
