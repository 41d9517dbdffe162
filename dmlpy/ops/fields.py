"""The field kinds beyond tensors, FP32 scalars, flags, choices and axes, for families such as
DirectML's REDUCE, GEMM and BATCH_NORMALIZATION: DirectML enums, integer lists, a
DML_SCALE_BIAS and a fused activation (a nested activation desc). Each kind says how a value
is taken (an enum member's name for the member, a list for its tuple), checked, copied and
keyed; the schema (schema.py) runs them for every field of a desc.

A fused activation is DirectML's: an activation desc of a type DirectML fuses, whose
InputTensor and OutputTensor are null. dmlpy writes that null as None: an activation desc
whose tensors are all None is its unbound form, valid only nested in another desc's
`fused_activation` field (every device refuses it on its own).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass

import numpy as np

from ..base.errors import InvalidArgumentError, shown
from ..base.types import TensorDataType

# The activations DirectML fuses into another operator ("Using fused operators to improve
# performance": any other is refused there).
FUSABLE_ACTIVATIONS = tuple(f"ACTIVATION_{name}" for name in (
    "ELU", "HARD_SIGMOID", "IDENTITY", "LEAKY_RELU", "LINEAR", "PARAMETRIC_SOFTPLUS", "RELU", "SCALED_ELU",
    "SCALED_TANH", "SIGMOID", "SOFTPLUS", "SOFTSIGN", "TANH", "THRESHOLDED_RELU", "SHRINK", "CELU"))

# Each desc class's schema, found by class (schema.operator registers them): a nested desc's
# schema is found as any desc's, never by an attribute the object could override.
SCHEMAS_BY_CLASS: dict[type, object] = {}


def schema_of(desc):
    """The schema of the operator class `desc` is (or derives from), or None."""
    for cls in type(desc).__mro__:
        schema = SCHEMAS_BY_CLASS.get(cls)
        if schema is not None:
            return schema
    return None


def fp32_bits(value) -> int:
    """The bits of a finite number rounded to FP32."""
    return int(np.float32(float(value)).view(np.uint32))


def check_fp32(where: str, value, dml_name: str, field: str) -> None:
    """A number (not a bool) whose FP32 rounding is finite, as DirectML's FLOAT members must be."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise InvalidArgumentError(f"{where} {shown(value)} must be a number", field)
    try:
        with np.errstate(over="ignore"):
            as_fp32 = np.float32(float(value))
    except OverflowError:  # an int beyond any float
        as_fp32 = np.float32(np.inf)
    if not np.isfinite(as_fp32):
        raise InvalidArgumentError(
            f"{where} {shown(value)} is not a finite FP32 value: {dml_name} must be finite", field)


@dataclass(frozen=True)
class ScaleBias:
    """DML_SCALE_BIAS: `scale * x + bias`, two FP32 values, each finite."""

    scale: float
    bias: float

    def __post_init__(self):
        check_fp32("ScaleBias.scale", self.scale, "Scale", "scale")
        check_fp32("ScaleBias.bias", self.bias, "Bias", "bias")


def _snake(name: str) -> str:
    """ReduceFunction -> REDUCE_FUNCTION: DirectML's spelling of an enum's name."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


@dataclass(frozen=True)
class ValueField:
    """What the field kinds of this module share: the desc's field `name`, DirectML's member
    `dml_name`, and how a value is taken (normalised), copied and keyed: as it is, unless a
    kind says otherwise. Each kind adds `check` and `describe`."""

    name: str  # e.g. "function"
    dml_name: str  # e.g. "Function"

    def taken(self, value):
        return value

    def copied(self, value):
        return value

    def key_of(self, value):
        return value


@dataclass(frozen=True)
class EnumField(ValueField):
    """A DirectML enum (dmlpy/ops/enums.py): a member of `enum_type`, or its name as DirectML
    writes it ("SUM_SQUARE"), taken as the member. Every member is DirectML's."""

    enum_type: type[enum.Enum]  # e.g. ReduceFunction

    def taken(self, value):
        return self.enum_type.__members__.get(value, value) if isinstance(value, str) else value

    def check(self, where: str, value) -> None:
        if not isinstance(value, self.enum_type):
            kind = self.enum_type.__name__
            raise InvalidArgumentError(
                f"{where} {shown(value)} must be a {kind} or one of its names "
                f"({', '.join(self.enum_type.__members__)}): "
                f"{self.dml_name} is a DML_{_snake(kind)}", self.name)

    def describe(self, default) -> str:
        return (f"{self.enum_type.__name__} (DML_{_snake(self.enum_type.__name__)}), or its name: "
                f"{', '.join(self.enum_type.__members__)}; {_default(default, lambda d: d.name)}")


@dataclass(frozen=True)
class IntListField(ValueField):
    """A UINT or INT array of DirectML's (strides, window sizes, paddings): a tuple of ints (a
    list is taken as the tuple), `length` of them where given, each at least `minimum` where
    given and within 32 bits (UINT32 where `minimum` is 0 or more, else INT32)."""

    length: int | None = None
    minimum: int | None = None

    @property
    def bounds(self) -> tuple[int, int]:
        unsigned = self.minimum is not None and self.minimum >= 0
        low, high = (0, 2**32 - 1) if unsigned else (-2**31, 2**31 - 1)
        return max(low, self.minimum) if self.minimum is not None else low, high

    def taken(self, value):
        return tuple(value) if isinstance(value, list) else value

    def check(self, where: str, value) -> None:
        if not isinstance(value, tuple) or not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in value):
            raise InvalidArgumentError(f"{where} {shown(value)} must be a tuple of ints ({self.dml_name})", self.name)
        if self.length is not None and len(value) != self.length:
            raise InvalidArgumentError(
                f"{where} {value} has {len(value)} values: {self.dml_name} has exactly {self.length}", self.name)
        low, high = self.bounds
        for v in value:
            if not low <= v <= high:
                raise InvalidArgumentError(
                    f"{where} {value} has {v}: each of {self.dml_name} must lie in [{low}, {high}]", self.name)

    def copied(self, value):
        return tuple(value)

    def key_of(self, value):
        return tuple(int(v) for v in value)

    def describe(self, default) -> str:
        low, high = self.bounds
        count = f"{self.length} " if self.length is not None else ""
        return f"tuple of {count}ints in [{low}, {high}]; {_default(default, str)}"


@dataclass(frozen=True)
class ScaleBiasField(ValueField):
    """DirectML's optional `const DML_SCALE_BIAS*`: a ScaleBias, or None (null, the default)."""

    def check(self, where: str, value) -> None:
        if value is None:
            return
        if not isinstance(value, ScaleBias):
            raise InvalidArgumentError(f"{where} must be a ScaleBias or None, not {type(value).__name__}", self.name)
        check_fp32(f"{where}.scale", value.scale, f"{self.dml_name}.Scale", self.name)
        check_fp32(f"{where}.bias", value.bias, f"{self.dml_name}.Bias", self.name)

    def copied(self, value):
        return None if value is None else ScaleBias(value.scale, value.bias)

    def key_of(self, value):
        return None if value is None else (fp32_bits(value.scale), fp32_bits(value.bias))

    def describe(self, default) -> str:
        return f"ScaleBias(scale, bias) of finite FP32 values, or None (null); {_default(default, repr)}"


@dataclass(frozen=True)
class FusedActivationField(ValueField):
    """DirectML's optional `const DML_OPERATOR_DESC* FusedActivation`: None (null, the default)
    or the unbound form of an activation DirectML fuses (FUSABLE_ACTIVATIONS): its desc with
    every tensor None, as DirectML requires its InputTensor and OutputTensor to be null."""

    def check(self, where: str, value) -> None:
        if value is None:
            return
        schema = schema_of(value)
        if schema is None or schema.dml_name not in FUSABLE_ACTIVATIONS:
            what = type(value).__name__ if schema is None else schema.dml_name
            raise InvalidArgumentError(
                f"{where} {what} is not an activation DirectML fuses: {self.dml_name} must be None or one of "
                f"{', '.join(FUSABLE_ACTIVATIONS)}", self.name)
        bound = [t.name for t in schema.tensors if getattr(value, t.name) is not None]
        if bound:
            raise InvalidArgumentError(
                f"{where}.{bound[0]} is not None: a fused activation's tensors must be None (DirectML requires "
                f"its {' and '.join(t.dml_name for t in schema.tensors)} to be null)", self.name)

    def copied(self, value):
        return None if value is None else schema_of(value).copy(value)

    def key_of(self, value):
        return None if value is None else schema_of(value).key(value)

    def describe(self, default) -> str:
        names = ", ".join(name.removeprefix("ACTIVATION_") for name in FUSABLE_ACTIVATIONS)
        return (f"an activation desc with every tensor None (DirectML's null InputTensor and OutputTensor), one of "
                f"{names}; or None (null); {_default(default, repr)}")


@dataclass(frozen=True)
class DataTypeField(ValueField):
    """A DML_TENSOR_DATA_TYPE member (CLIP1's MinMaxDataType): a TensorDataType or its name; None
    (the default) stands for the data type DirectML requires it to equal."""

    meaning: str = ""  # what None stands for

    def taken(self, value):
        return TensorDataType.__members__.get(value, value) if isinstance(value, str) else value

    def check(self, where: str, value) -> None:
        if value is not None and not isinstance(value, TensorDataType):
            raise InvalidArgumentError(
                f"{where} {shown(value)} must be a TensorDataType, one of its names, or None "
                f"({self.meaning}): {self.dml_name} is a DML_TENSOR_DATA_TYPE", self.name)

    def describe(self, default) -> str:
        return f"TensorDataType or its name, or None ({self.meaning}); {_default(default, repr)}"


@dataclass(frozen=True)
class ScalarUnionField(ValueField):
    """A DML_SCALAR_UNION, read as the data type its operator names: an int for an integer
    type, a number for a float type (taken as its FP32 rounding, the union's Float32 member).
    The operator's own check ties it to that type; here: a number, not NaN."""

    def check(self, where: str, value) -> None:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InvalidArgumentError(f"{where} {shown(value)} must be a number ({self.dml_name})", self.name)
        if isinstance(value, (float, np.floating)) and np.isnan(value):
            raise InvalidArgumentError(f"{where} is NaN: {self.dml_name} must be a number", self.name)

    def key_of(self, value):
        if isinstance(value, (int, np.integer)):
            return ("integer", int(value))
        with np.errstate(over="ignore"):
            return ("float", int(np.float32(float(value)).view(np.uint32)))

    def describe(self, default) -> str:
        return f"an int, or a number for a float data type; {_default(default, repr)}"


@dataclass(frozen=True)
class UIntField(ValueField):
    """A UINT of DirectML's (an axis, a count such as TOP_K's K): an int in [minimum, 2**32 - 1];
    the operator's own check ties it to its tensors (an axis below InputTensor's dimension
    count)."""

    minimum: int = 0
    meaning: str = ""  # for the docs, e.g. "a dimension of InputTensor"

    def check(self, where: str, value) -> None:
        if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)) \
                or not self.minimum <= value <= 2**32 - 1:
            raise InvalidArgumentError(f"{where} {shown(value)} must be an int in [{self.minimum}, {2**32 - 1}] "
                                       f"({self.dml_name}: {self.meaning})", self.name)

    def key_of(self, value):
        return int(value)

    def describe(self, default) -> str:
        return f"an int, at least {self.minimum} ({self.meaning}); {_default(default, str)}"


ValueField = EnumField | IntListField | ScaleBiasField | FusedActivationField | DataTypeField | ScalarUnionField | \
    UIntField


def _default(default, show) -> str:
    return "required" if default is dataclasses.MISSING else f"default {show(default)}"


def enum_field(enum_type: type[enum.Enum], dml_name: str, default: enum.Enum | str | None = None):
    """A DirectML enum; without a default it is required."""
    metadata = {"value": EnumField("", dml_name, enum_type)}
    if default is None:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=enum_type[default] if isinstance(default, str) else default, metadata=metadata)


def data_type_field(dml_name: str, meaning: str):
    """An optional DML_TENSOR_DATA_TYPE, None by default (`meaning`: what None stands for);
    keyword-only, as it follows an optional member in DirectML's order."""
    return dataclasses.field(default=None, metadata={"value": DataTypeField("", dml_name, meaning)}, kw_only=True)


def scalar_union_field(dml_name: str):
    """A required DML_SCALAR_UNION, keyword-only (it follows optional members)."""
    return dataclasses.field(metadata={"value": ScalarUnionField("", dml_name)}, kw_only=True)


def uint_field(dml_name: str, meaning: str, minimum: int = 0):
    """A required UINT (an axis, a count)."""
    return dataclasses.field(metadata={"value": UIntField("", dml_name, minimum, meaning)})


def int_list_field(dml_name: str, length: int | None = None, minimum: int | None = None):
    """A required tuple of ints (DirectML's count and array members, e.g. Strides)."""
    return dataclasses.field(metadata={"value": IntListField("", dml_name, length, minimum)})


def scale_bias_field(dml_name: str = "ScaleBias"):
    """An optional ScaleBias, None by default."""
    return dataclasses.field(default=None, metadata={"value": ScaleBiasField("", dml_name)})


def fused_activation_field(dml_name: str = "FusedActivation"):
    """An optional fused activation, None by default."""
    return dataclasses.field(default=None, metadata={"value": FusedActivationField("", dml_name)})
