"""The data-generation family: DirectML's FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE and ONE_HOT,
outputs made from a value, a sequence or an index tensor rather than from elements at the
same index. The kernel family is shaders/generate.comp (kernels/generation.py plans it).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..base.errors import InvalidArgumentError, UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..base.types import data_type_info
from ..kernels.generation import plan_one_hot, plan_sequence
from .family import Family, FrontEndShape, KernelKind
from .fields import DataTypeField, ScalarUnionField, UIntField
from .schema import OperatorDesc, Support, TensorRole, operator, tensor_field

FAMILY = Family(
    "data generation", KernelKind.OPAQUE, FrontEndShape.OWN, "dmlpy/ops/generation.py",
    "DirectML's FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE and ONE_HOT: outputs made from a value, an arithmetic "
    "sequence or an index tensor (frontends/generation.py)")

# BFLOAT16 wherever DirectML takes FLOAT16: a dmlpy extension, refused by strict_directml devices.
SMALL = (T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8)
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.FLOAT64)
FOUR, ANY = range(4, 5), range(1, 9)


class _ScalarUnion(ScalarUnionField):
    """A DML_SCALAR_UNION that may be read as FLOAT64 (its Float64 member): keyed by the
    number's 64-bit bits, so two FLOAT64 constants that round to one FP32 stay apart."""

    def key_of(self, value):
        if isinstance(value, (int, np.integer)):
            return ("integer", int(value))
        return ("float", int(np.float64(float(value)).view(np.uint64)))


def _value_field(dml_name: str, default: float):
    # A default, as ValueDataType's None must have one and DirectML's order puts these after it.
    return dataclasses.field(default=default, metadata={"value": _ScalarUnion("", dml_name)})


def _value_data_type_field():
    return dataclasses.field(default=None,
                             metadata={"value": DataTypeField("", "ValueDataType", "the output's data type")})


def _check_value(owner: str, name: str, dml_name: str, value, data_type: T) -> None:
    """A DML_SCALAR_UNION read as `data_type`: for a float type any number whose FP32 rounding
    is infinite only where it is infinite (the union's Float32 member; FLOAT64's Float64 takes any
    number); for an integer
    type an int that fits the member's bits (signed or unsigned: -2 is a UINT8's 254, as
    DirectML's own example writes it)."""
    info = data_type_info(data_type)
    if data_type is T.FLOAT64:  # the union's Float64 member: any number
        return
    if data_type in FLOATS:
        with np.errstate(over="ignore"):
            rounded = np.float32(float(value))
        if np.isinf(rounded) and not np.isinf(float(value)):
            raise InvalidArgumentError(
                f"{owner}.{name} {value!r} is beyond FP32's range: {dml_name} is read as {data_type.name} through the "
                "union's Float32 member", name)
        return
    low, high = -(1 << (info.bits - 1)), (1 << info.bits) - 1
    if not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise InvalidArgumentError(
            f"{owner}.{name} {value!r} is not a value of {data_type.name}: {dml_name} is read as ValueDataType, an int "
            f"of {info.bits} bits in [{low}, {high}]", name)


def _check_fill(desc) -> None:
    """ValueDataType (None: the output's) must match OutputTensor.DataType; each value is one of
    that type."""
    owner, data_type = type(desc).__name__, desc.output_tensor.data_type
    if desc.value_data_type is not None and desc.value_data_type != data_type:
        raise InvalidArgumentError(
            f"{owner}.value_data_type {desc.value_data_type.name} != output_tensor.data_type {data_type.name}: "
            "ValueDataType must match OutputTensor.DataType", "value_data_type")
    for field in desc.schema.values:
        if isinstance(field, ScalarUnionField):
            _check_value(owner, field.name, field.dml_name, getattr(desc, field.name), data_type)


CONSTANT_NOTES = (
    "Value is a DML_SCALAR_UNION read as ValueDataType: a float type's through its Float32 member (a number, "
    "rounded once to the output's type; +-inf and -0 kept; NaN is refused as for every DML_SCALAR_UNION), an "
    "integer type's as an int of its width (-1 is a UINT8's 255); FLOAT64's through its Float64 member (the "
    "number as it is). FLOAT64, INT64 and UINT64 from FEATURE_LEVEL_4_1, stored as pairs of 32-bit words. "
    "dmlpy's defaults (ValueDataType None: the output's; Value 0) are its own: DirectML's fields have none.")


@operator(
    dml_name="FILL_VALUE_CONSTANT", family=FAMILY, name="fill_value_constant",
    formula="OutputTensor[coordinate] = Value for each coordinate",
    support=(Support(FL.LEVEL_2_1, SMALL, FOUR), Support(FL.LEVEL_4_0, SMALL, ANY),
             Support(FL.LEVEL_4_1, (*SMALL, T.FLOAT64, T.INT64, T.UINT64), ANY)),
    same={}, shader="generate.comp", check=_check_fill, in_place=False, notes=CONSTANT_NOTES,
    kernel=lambda desc, adapter: plan_sequence(desc.output_tensor, desc.value, None, adapter),
)
class FillValueConstantOperatorDesc(OperatorDesc):
    """DML_FILL_VALUE_CONSTANT_OPERATOR_DESC: every element of the output is `value`, read as
    `value_data_type` (which must be the output's data type)."""

    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor")
    value_data_type: T | None = _value_data_type_field()
    value: float | int = _value_field("Value", 0)


SEQUENCE_NOTES = (
    "Element i, in row-major order of OutputTensor's sizes (whatever its strides), is ValueStart + i * ValueDelta, "
    "as DirectML's page now writes it (OutputTensor[elementIndex] = Value + elementIndex * Delta), not a running "
    "sum: no error accumulates. Floats: element 0 is ValueStart itself (DirectML: 'the initial value to fill the "
    "first element'; so -0 stays -0, and an infinite delta gives no NaN there); element i > 0 is "
    "fl(ValueStart + fl(fl(i) * ValueDelta)): i rounded to FP32, each operation rounded to FP32 on its own (never "
    "an FMA), subnormals kept, then rounded once to the output's type (nearest even): NumPy's float32 arithmetic "
    "then astype reproduces it. Integers wrap: (ValueStart + i * ValueDelta) modulo 2^bits in two's complement "
    "(DirectML's UINT8 example: 10, then 10 + 254 = 8, 6, 4); INT64 and UINT64 (FEATURE_LEVEL_5_0) modulo 2^64 "
    "on pairs of 32-bit words. dmlpy's defaults (ValueDataType None: the output's; ValueStart 0, ValueDelta 1) are "
    "its own: DirectML's fields have none.")


@operator(
    dml_name="FILL_VALUE_SEQUENCE", family=FAMILY, name="fill_value_sequence",
    formula="OutputTensor[elementIndex] = ValueStart + elementIndex * ValueDelta",
    support=(Support(FL.LEVEL_2_1, SMALL, FOUR), Support(FL.LEVEL_4_0, SMALL, ANY),
             Support(FL.LEVEL_5_0, (*SMALL, T.INT64, T.UINT64), ANY)),
    same={}, shader="generate.comp", check=_check_fill, in_place=False, notes=SEQUENCE_NOTES,
    kernel=lambda desc, adapter: plan_sequence(desc.output_tensor, desc.value_start, desc.value_delta, adapter),
)
class FillValueSequenceOperatorDesc(OperatorDesc):
    """DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC: element i (row-major) is `value_start + i *
    value_delta`, read as `value_data_type` (the output's data type); integers wrap."""

    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor")
    value_data_type: T | None = _value_data_type_field()
    value_start: float | int = _value_field("ValueStart", 0)
    value_delta: float | int = _value_field("ValueDelta", 1)


ONE_HOT_VALUES = (T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8)
INDEX_TYPES = (T.UINT32, T.INT32, T.UINT64, T.INT64)


def _check_one_hot(desc) -> None:
    """Axis below IndicesTensor's DimensionCount; IndicesTensor's sizes OutputTensor's but 1 along
    Axis; ValuesTensor at least two elements."""
    owner, axis = type(desc).__name__, desc.axis
    indices, output = desc.indices_tensor.sizes, desc.output_tensor.sizes
    if axis >= len(indices):
        raise InvalidArgumentError(
            f"{owner}.axis {axis}: Axis must be less than the DimensionCount of the IndicesTensor ({len(indices)})",
            "axis")
    expected = tuple(1 if d == axis else size for d, size in enumerate(output))
    if indices != expected:
        raise InvalidArgumentError(
            f"{owner}.indices_tensor.sizes {indices} must be {expected}: IndicesTensor must have sizes equal to the "
            "OutputTensor except for the dimension specified by Axis, whose size must be 1", "sizes")
    if desc.values_tensor.element_count < 2:
        raise InvalidArgumentError(
            f"{owner}.values_tensor.sizes {desc.values_tensor.sizes}: ValuesTensor may have any size, so long as it "
            "contains at least two elements", "sizes")


def _one_hot_level(desc, level: FL) -> None:
    """Index types other than UINT32 (negative indices among them) from FEATURE_LEVEL_3_0."""
    data_type = desc.indices_tensor.data_type
    if data_type is not T.UINT32 and level < FL.LEVEL_3_0:
        raise UnsupportedError(
            f"{type(desc).__name__}.indices_tensor.data_type {data_type.name} needs {FL.LEVEL_3_0} but the device is "
            f"capped at {level}: IndicesTensor is UINT32 before it", "data_type")


def _one_hot_output_sizes(inputs: dict[str, BufferTensorDesc], fields: dict) -> dict[str, tuple[int, ...]]:
    """A graph function's output: the indices' sizes with `depth` along Axis."""
    sizes = list(inputs["indices_tensor"].sizes)
    if not 0 <= fields["axis"] < len(sizes):
        return {}  # the desc's own check names the axis
    sizes[fields["axis"]] = fields["depth"]
    return {"output_tensor": tuple(sizes)}


def _one_hot_output_type(inputs: dict[str, BufferTensorDesc], fields: dict) -> T:
    """OutputTensor has ValuesTensor's data type (graph builders make it so)."""
    return inputs["values_tensor"].data_type


ONE_HOT_NOTES = (
    "An index is measured from the start of its sequence along Axis; a negative one (signed IndicesTensor, from "
    "FEATURE_LEVEL_3_0) from its end (-1: the last); one still out of [0, size) sets the whole sequence to OffValue. "
    "OffValue is ValuesTensor's 0th element, OnValue its 1st along the fastest-changing dimension of size > 1; "
    "their bits are copied, never converted (NaN payloads kept). INT64 and UINT64 indices are read whole (an index "
    "beyond 32 bits is out of range). FLOAT64, INT64 and UINT64 values (FEATURE_LEVEL_4_1) are copied word for "
    "word.")


@operator(
    dml_name="ONE_HOT", family=FAMILY, name="one_hot",
    formula="OutputTensor[..., i, ...] = i == IndicesTensor[..., 0, ...] ? OnValue : OffValue (along Axis)",
    support=(Support(FL.LEVEL_2_0, (T.FLOAT32, T.FLOAT16, T.BFLOAT16), FOUR),
             Support(FL.LEVEL_2_1, (T.FLOAT32, T.FLOAT16, T.BFLOAT16, *ONE_HOT_VALUES), FOUR),
             Support(FL.LEVEL_3_0, (T.FLOAT32, T.FLOAT16, T.BFLOAT16, *ONE_HOT_VALUES), ANY),
             Support(FL.LEVEL_4_1, (T.FLOAT32, T.FLOAT16, T.BFLOAT16, *ONE_HOT_VALUES, T.FLOAT64, T.INT64, T.UINT64),
                     ANY)),
    same={"dimension_count": None, "data_type": ("values_tensor", "output_tensor")}, shader="generate.comp",
    check=_check_one_hot, level_check=_one_hot_level, in_place=False, notes=ONE_HOT_NOTES,
    output_data_type=_one_hot_output_type, output_sizes=_one_hot_output_sizes,
    sizing_argument=UIntField("depth", "OutputTensor.Sizes[Axis]", 1, "the output's size along the axis"),
    kernel=lambda desc, adapter: plan_one_hot(desc.indices_tensor, desc.values_tensor, desc.output_tensor,
                                              desc.axis, adapter),
)
class OneHotOperatorDesc(OperatorDesc):
    """DML_ONE_HOT_OPERATOR_DESC: along `axis`, OnValue (values' second element) where the
    position is the row's index (negative: from the end), OffValue (its first) elsewhere."""

    indices_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "IndicesTensor", data_types=INDEX_TYPES)
    values_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "ValuesTensor")
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor")
    axis: int = dataclasses.field(metadata={"value": UIntField("", "Axis", 0, "a dimension of IndicesTensor")})


DESCS = (FillValueConstantOperatorDesc, FillValueSequenceOperatorDesc, OneHotOperatorDesc)
