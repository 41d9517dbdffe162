"""The operator declaration: one schema per operator drives validation, codegen, the CLI and docs.

An operator desc is a frozen dataclass decorated with `@operator(...)`. Its fields are
tensors (`tensor_field`, optional ones None where DirectML's is null), FP32 scalars
(`scalar_field`), flags, choices, axes, and the kinds of fields.py (DirectML enums, integer
lists, a ScaleBias, a fused activation); the decorator records the
feature levels, data types and dimension counts documented for it, the constraints that
tie its tensors together, and the kernel that implements it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..base.errors import InvalidArgumentError, UnsupportedError, shown
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel, TensorDataType, data_type_info
from .family import Family
from .fields import (
    FUSABLE_ACTIVATIONS,
    SCHEMAS_BY_CLASS,
    FusedActivationField,
    UIntField,
    ValueField,
    check_fp32,
    fp32_bits,
    schema_of,
)


class TensorRole(enum.Enum):
    INPUT = "input"
    OUTPUT = "output"


@dataclass(frozen=True)
class TensorField:
    name: str  # the Python field name, e.g. "input_gradient_tensor"
    dml_name: str  # DirectML's member name, e.g. "InputGradientTensor"
    role: TensorRole
    argument: str = ""  # its name in the NumPy front end and the graph function, e.g. "dy"
    # The data types it may have whatever the others have (a comparison's output: UINT8);
    # None: those the operator's Support rows list (and `same` may tie it to other tensors).
    data_types: tuple[TensorDataType, ...] | None = None
    optional: bool = False  # DirectML's _Maybenull_: None is its null


@dataclass(frozen=True)
class ScalarField:
    name: str  # e.g. "alpha"
    dml_name: str  # e.g. "Alpha"


@dataclass(frozen=True)
class FlagField:
    name: str  # e.g. "use_dst"
    meaning: str  # for the docs


@dataclass(frozen=True)
class ChoiceField:
    """A named form of the operator, e.g. GELU's `approximate`: a string among `choices`.
    The first choice is the operator DirectML defines; the others are dmlpy extensions,
    refused by a strict_directml device."""

    name: str  # e.g. "approximate"
    choices: tuple[str, ...]  # e.g. ("none", "tanh")
    meaning: str  # for the docs


@dataclass(frozen=True)
class AxesField:
    """A set of axes of the first tensor, e.g. SOFTMAX1's AxisCount and Axes: a tuple of
    distinct ints in [0, InputTensor.DimensionCount), at least one."""

    name: str  # "axes"
    dml_name: str  # "Axes"


@dataclass(frozen=True)
class Support:
    """From `level` on, these data types and dimension counts are accepted."""

    level: FeatureLevel
    data_types: tuple[TensorDataType, ...]
    dimension_counts: range = range(1, 9)


# Constraint names a schema may list in `same`, with DirectML's words for them.
SAME_ATTRIBUTES = {"data_type": "DataType", "dimension_count": "DimensionCount", "sizes": "Sizes"}


@dataclass(frozen=True)
class OperatorSchema:
    dml_name: str  # "ACTIVATION_RELU_GRAD": the DML_OPERATOR_TYPE without its prefix
    name: str  # "relu_grad": the name on the CLI, in the docs and in the NumPy front end
    formula: str
    support: tuple[Support, ...]
    # attribute -> the tensors that must agree on it (None: every tensor)
    same: dict[str, tuple[str, ...] | None]
    shader: str  # file in shaders/
    kernel: Callable  # builds the kernel plan for a desc (see codegen)
    extension: bool = False  # a dmlpy extension: refused by strict_directml devices
    # data types this operator takes as a dmlpy extension (beyond BFLOAT16, one everywhere), which
    # strict_directml devices refuse
    extension_types: tuple[TensorDataType, ...] = ()
    check: Callable | None = None  # the operator's own further rules
    level_check: Callable | None = None  # (desc, device level): rules that changed between feature levels
    in_place: bool = True  # whether an output may be bound over an input (same range, same strides)
    # (desc) -> codegen.ElementwiseMath, or None: the output's math element by element over the
    # inputs, where the operator has one for this desc; graphs fuse chains through it
    elementwise: Callable | None = None
    # (desc) -> kernels.reduction.ReductionMath, or None: its outputs as reductions over its
    # inputs' expressions (REDUCE's); graphs fuse an element-wise prologue into its first pass
    reduction: Callable | None = None
    # (desc) -> kernels.matmul.MatmulMath, or None: the operator as a matrix product and its
    # epilogue (GEMM's); graphs fuse the element-wise chain that reads it into its store
    matmul: Callable | None = None
    # ({input field: desc}, {other field: value}) -> {output field: sizes} for outputs not
    # shaped like the first input (graph builders make packed outputs of these sizes)
    output_sizes: Callable | None = None
    # A graph function's keyword-only int that is no field of the desc but sizes its output
    # (ONE_HOT's depth: DirectML takes it from OutputTensor's sizes), checked as the UINT it is
    # and passed to output_sizes among the fields.
    sizing_argument: UIntField | None = None
    # ({input field: desc}, {other field: value}) -> the output's data type, where a field
    # decides it (REDUCE's ARGMAX writes UINT32); None: the front ends' rule (result_types.py)
    output_data_type: Callable | None = None
    notes: str = ""  # conventions the specs leave open (kinks, NaN), for the docs
    desc_class: type | None = None
    tensors: tuple[TensorField, ...] = ()
    scalars: tuple[ScalarField, ...] = ()
    flags: tuple[FlagField, ...] = ()
    axes: tuple[AxesField, ...] = ()
    choices: tuple[ChoiceField, ...] = ()
    values: tuple[ValueField, ...] = ()  # the kinds of fields.py, in declaration order
    family: Family | None = None  # the family that declares it
    # A row-wise operator without axes: the name of its form over listed axes (SOFTMAX ->
    # SOFTMAX1's "softmax1"), which its front end runs when given `axes`.
    axes_form: str | None = None

    @property
    def introduced(self) -> FeatureLevel:
        return min(row.level for row in self.support)

    @property
    def inputs(self) -> tuple[TensorField, ...]:
        return tuple(t for t in self.tensors if t.role is TensorRole.INPUT)

    @property
    def outputs(self) -> tuple[TensorField, ...]:
        return tuple(t for t in self.tensors if t.role is TensorRole.OUTPUT)

    def sharing(self, attribute: str) -> tuple[TensorField, ...]:
        """The tensors that must agree on `attribute`."""
        names = self.same[attribute]
        return self.tensors if names is None else tuple(t for t in self.tensors if t.name in names)

    def present(self, desc) -> tuple[TensorField, ...]:
        """The tensors `desc` has: all but the optional ones it leaves None (and none of an
        unbound activation's, the form a fused activation takes)."""
        return tuple(t for t in self.tensors if getattr(desc, t.name) is not None)

    def unbound(self, desc) -> bool:
        """Whether `desc` is an activation DirectML fuses with every tensor None: the form a
        fused activation field holds (DirectML's null InputTensor and OutputTensor)."""
        return self.dml_name in FUSABLE_ACTIVATIONS and all(getattr(desc, t.name) is None for t in self.tensors)

    def check_bound(self, desc, consumer: str, absent_inputs: bool = True) -> None:
        """Raise UnsupportedError where `desc` cannot run on its own in `consumer`: an unbound
        activation (a fused activation's form), or an optional input left out (None) where
        `consumer` cannot leave one unbound (not `absent_inputs`)."""
        owner = type(desc).__name__
        if self.unbound(desc):
            raise UnsupportedError(
                f"{owner} has every tensor None: that is a fused activation's form, which runs only nested in "
                f"another desc's fused activation field, not on its own in {consumer}", "type")
        for field in self.tensors:
            if getattr(desc, field.name) is None and not absent_inputs:
                raise UnsupportedError(
                    f"{owner}.{field.name} is None (DirectML's null {field.dml_name}): {consumer} binds every tensor "
                    "of an operator and does not take an absent one yet", field.name)

    def validate(self, desc) -> None:
        """Every device-independent rule; raises InvalidArgumentError naming the field."""
        owner = type(desc).__name__
        unbound = self.unbound(desc)
        for field in self.tensors:
            value = getattr(desc, field.name)
            if value is None and (field.optional or unbound):
                continue
            if not isinstance(value, BufferTensorDesc):
                raise InvalidArgumentError(
                    f"{owner}.{field.name} must be a BufferTensorDesc, not {type(value).__name__}", field.name)
        present = self.present(desc)
        for scalar in self.scalars:
            check_fp32(f"{owner}.{scalar.name}", getattr(desc, scalar.name), scalar.dml_name, scalar.name)
        for flag in self.flags:
            value = getattr(desc, flag.name)
            if not isinstance(value, (bool, np.bool_)):
                raise InvalidArgumentError(f"{owner}.{flag.name} {shown(value)} must be a bool", flag.name)
        for choice in self.choices:
            value = getattr(desc, choice.name)
            if not isinstance(value, str) or value not in choice.choices:
                raise InvalidArgumentError(
                    f"{owner}.{choice.name} {shown(value)} must be one of {', '.join(map(repr, choice.choices))}",
                    choice.name)
        for field in self.values:
            field.check(f"{owner}.{field.name}", getattr(desc, field.name))
        for field in self.axes:
            first = getattr(desc, self.tensors[0].name)
            _check_axes(owner, field, getattr(desc, field.name), None if unbound else first.dimension_count)
        for attribute in self.same:
            sharing = [t for t in self.sharing(attribute) if t in present]
            if not sharing:
                continue
            first, *others = sharing
            expected = getattr(getattr(desc, first.name), attribute)
            for field in others:
                actual = getattr(getattr(desc, field.name), attribute)
                if actual != expected:
                    raise InvalidArgumentError(
                        f"{owner}.{field.name}.{attribute} {_show(actual)} != {first.name}.{attribute} "
                        f"{_show(expected)}: {self.same_rule(attribute)}", attribute)
        for field in present:
            tensor = getattr(desc, field.name)
            where = f"{owner}.{field.name}"
            if field.data_types is not None and tensor.data_type not in field.data_types:
                raise InvalidArgumentError(
                    f"{where}.data_type {tensor.data_type.name} is not supported: {self.dml_name}'s "
                    f"{field.dml_name} must be {_listed([t.name for t in field.data_types], 'or')}", "data_type")
            if field.data_types is None and not any(tensor.data_type in row.data_types for row in self.support):
                raise InvalidArgumentError(
                    f"{where}.data_type {tensor.data_type.name} is not supported: {self.dml_name} "
                    f"accepts {self.describe_data_types()}", "data_type")
            if not any(tensor.dimension_count in row.dimension_counts for row in self.support):
                raise InvalidArgumentError(
                    f"{where} has {tensor.dimension_count} dimensions: {self.dml_name} accepts "
                    f"{self.describe_dimension_counts()}", "dimension_count")
            if self.required_level(field, tensor) is None:
                raise InvalidArgumentError(
                    f"{where}: {tensor.data_type.name} with {tensor.dimension_count} dimensions is not "
                    f"a supported combination for {self.dml_name}", "data_type")
            if field.role is TensorRole.OUTPUT and not tensor.writes_each_element_once():
                raise InvalidArgumentError(
                    f"{where}.strides {_show(tensor.strides)} with sizes {_show(tensor.sizes)} make two "
                    "indices share an element (or, past 2**22 elements, cannot be proven not to): an output "
                    "must not write any element twice", "strides")
        if self.check is not None:
            self.check(desc)

    def copy(self, desc) -> OperatorDesc:
        """A new desc of this operator's own class with `desc`'s values, every tensor desc
        copied and everything validated again: what a device keeps, so nothing the caller
        does to its objects afterwards (or a subclass that skipped validation) reaches it."""
        owner = type(desc).__name__
        values = {}
        try:
            for field in self.tensors:
                tensor, where = getattr(desc, field.name), f"{owner}.{field.name}"
                values[field.name] = None if tensor is None else BufferTensorDesc.copy_of(tensor, where)
            for other in (*self.scalars, *self.flags, *self.choices):
                values[other.name] = getattr(desc, other.name)
            for field in self.axes:
                values[field.name] = tuple(getattr(desc, field.name))
            for field in self.values:  # a nested desc, a list: the copy shares nothing the caller can change
                values[field.name] = field.copied(getattr(desc, field.name))
        except InvalidArgumentError:
            raise
        except Exception as error:  # a subclass may do anything in a property
            raise InvalidArgumentError(f"{owner} could not be read: {error!r}", "type") from None
        return self.desc_class(**values)

    def key(self, desc) -> tuple:
        """What identifies the computation: the tensors (None where absent), the FP32 bits of
        each scalar and ScaleBias (0.0 and -0.0 compare equal as floats but give different
        results), and a fused activation's own key."""
        return (self.name, *(getattr(desc, t.name) for t in self.tensors),
                *(fp32_bits(getattr(desc, s.name)) for s in self.scalars),
                *(bool(getattr(desc, f.name)) for f in self.flags), *(getattr(desc, a.name) for a in self.axes),
                *(str(getattr(desc, c.name)) for c in self.choices),
                *(field.key_of(getattr(desc, field.name)) for field in self.values))

    def data_types(self) -> tuple[TensorDataType, ...]:
        """Every data type some Support row takes, in the rows' order."""
        return tuple(dict.fromkeys(t for row in self.support for t in row.data_types))

    def required_level(self, field: TensorField, tensor: BufferTensorDesc) -> FeatureLevel | None:
        """The lowest feature level that accepts `tensor` as `field`: its dimension count,
        and its data type where the Support rows decide that (not a fixed set's)."""
        levels = [row.level for row in self.support if tensor.dimension_count in row.dimension_counts
                  and (field.data_types is not None or tensor.data_type in row.data_types)]
        return min(levels) if levels else None

    def check_device(self, desc, device_level: FeatureLevel, strict_directml: bool, consumer: str = "a device",
                     absent_inputs: bool = True) -> None:
        """Raise UnsupportedError when the desc needs more than the device offers, or cannot run
        on its own in `consumer` (see check_bound)."""
        self.check_bound(desc, consumer, absent_inputs)
        self.check_level(desc, device_level, strict_directml)

    def check_level(self, desc, device_level: FeatureLevel, strict_directml: bool) -> None:
        """The device's rules on the desc's present tensors and its fused activation's:
        feature level, and DirectML's alone where `strict_directml`."""
        owner = type(desc).__name__
        if strict_directml and self.extension:
            raise UnsupportedError(
                f"{self.dml_name} is a dmlpy extension: a device created with strict_directml=True accepts "
                "only what DirectML accepts")
        if strict_directml:
            for choice in self.choices:
                value = getattr(desc, choice.name)
                if value != choice.choices[0]:
                    raise UnsupportedError(
                        f"{owner}.{choice.name} {shown(value)} is a dmlpy extension: a device created with "
                        f"strict_directml=True accepts only {choice.choices[0]!r}", choice.name)
            for field in self.present(desc):
                data_type = getattr(desc, field.name).data_type
                if data_type_info(data_type).extension or data_type in self.extension_types:
                    raise UnsupportedError(
                        f"{owner}.{field.name}.data_type {data_type.name} is a dmlpy extension: a device "
                        "created with strict_directml=True accepts only what DirectML accepts", "data_type")
        if self.introduced > device_level:
            raise UnsupportedError(
                f"{self.dml_name} needs {self.introduced} but the device is capped at {device_level}")
        if self.level_check is not None:
            self.level_check(desc, device_level)
        for field in self.present(desc):
            tensor = getattr(desc, field.name)
            level = self.required_level(field, tensor)
            if level > device_level:
                raise UnsupportedError(
                    f"{owner}.{field.name}: {tensor.data_type.name} with {tensor.dimension_count} "
                    f"dimensions needs {level} but the device is capped at {device_level}", "data_type")
        for field in self.values:
            nested = getattr(desc, field.name)
            if isinstance(field, FusedActivationField) and nested is not None:
                try:
                    schema_of(nested).check_level(nested, device_level, strict_directml)
                except UnsupportedError as error:
                    raise UnsupportedError(f"{owner}.{field.name}: {error.message}", field.name) from None

    def same_rule(self, attribute: str) -> str:
        names = [t.dml_name for t in self.sharing(attribute)]
        return f"{_listed(names)} must have the same {SAME_ATTRIBUTES[attribute]}"

    def describe_data_types(self) -> str:
        """The data types the Support rows list, each at the first level that has it, grouped by
        that level ("FLOAT32 and FLOAT16 from FEATURE_LEVEL_1_0; INT32 from FEATURE_LEVEL_5_1")."""
        first: dict = {}
        for row in sorted(self.support, key=lambda row: row.level):
            for data_type in row.data_types:
                first.setdefault(data_type, row.level)
        levels = sorted(set(first.values()))
        return "; ".join(f"{_listed([t.name for t, at in first.items() if at == level])} from {level}"
                         for level in levels)

    def describe_tensor_data_types(self, field: TensorField) -> str:
        """The data types `field` may have, for the docs: its fixed set, or the Support rows'
        (tied to the tensors `same` names)."""
        if field.data_types is not None:
            return _listed([t.name for t in field.data_types], "or")
        if "data_type" in self.same and field in self.sharing("data_type"):
            others = [t.dml_name for t in self.sharing("data_type") if t is not field]
            if others:
                return f"{self.describe_data_types()} (the same as {_listed(others)})"
        return self.describe_data_types()

    def describe_dimension_counts(self) -> str:
        return "; ".join(f"{row.dimension_counts.start} to {row.dimension_counts.stop - 1} dimensions "
                         f"from {row.level}" for row in self.support)


def _check_axes(owner: str, field: AxesField, axes, dimension_count: int | None) -> None:
    """`dimension_count` None: an unbound desc, whose axes have no tensor to lie in."""
    where = f"{owner}.{field.name}"
    if not isinstance(axes, tuple) or not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                                              for a in axes):
        raise InvalidArgumentError(f"{where} {shown(axes)} must be a tuple of ints ({field.dml_name})", field.name)
    if not axes:
        raise InvalidArgumentError(f"{where} is empty: AxisCount must be at least 1", field.name)
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"{where} {axes} repeats an axis: {field.dml_name} must be distinct", field.name)
    for axis in axes:
        if dimension_count is not None and not 0 <= axis < dimension_count:
            raise InvalidArgumentError(
                f"{where} {axes} has axis {axis}: {field.dml_name} must lie in [0, {dimension_count - 1}] "
                f"(InputTensor.DimensionCount - 1)", field.name)


def _listed(names: list[str], conjunction: str = "and") -> str:
    return ", ".join(names[:-1]) + f", {conjunction} {names[-1]}" if len(names) > 2 \
        else f" {conjunction} ".join(names)


def _show(value) -> str:
    if isinstance(value, enum.Enum):
        return value.name
    return "None" if value is None else str(tuple(value)) if isinstance(value, tuple) else str(value)


def tensor_field(role: TensorRole, dml_name: str, argument: str | None = None,
                 data_types: tuple[TensorDataType, ...] | None = None, optional: bool = False):
    """A tensor desc; `argument` names it in the front ends (default: the field's name
    without `_tensor`, so `a_tensor` is `a`); `data_types`, where given, the only data types
    it may have (else those of the operator's Support rows); `optional`: it may be None,
    DirectML's null (still passed, in DirectML's member order: it has no default)."""
    return dataclasses.field(metadata={"tensor": TensorField("", dml_name, role, argument or "", data_types,
                                                             optional)})


def scalar_field(dml_name: str, default: float | None = None, keyword_only: bool = False):
    """An FP32 scalar; without a default it is required. `keyword_only`: a required scalar
    after an optional member in DirectML's order (CLIP's Min after its ScaleBias) is given
    by name."""
    if default is None:
        return dataclasses.field(metadata={"scalar": ScalarField("", dml_name)}, kw_only=keyword_only)
    return dataclasses.field(default=default, metadata={"scalar": ScalarField("", dml_name)}, kw_only=keyword_only)


def axes_field(dml_name: str = "Axes"):
    """A required tuple of axes (DirectML's AxisCount and Axes)."""
    return dataclasses.field(metadata={"axes": AxesField("", dml_name)})


def choice_field(choices: tuple[str, ...], meaning: str):
    """A string field among `choices`, the first by default (DirectML's own form)."""
    return dataclasses.field(default=choices[0], metadata={"choice": ChoiceField("", choices, meaning)})


def flag_field(meaning: str):
    """A bool field (False by default) that selects a form of the operator."""
    return dataclasses.field(default=False, metadata={"flag": FlagField("", meaning)})


OPERATORS: dict[str, OperatorSchema] = {}


class OperatorDesc:
    """Base of every operator desc; validation runs when the desc is constructed."""

    schema: OperatorSchema

    def __post_init__(self):
        for field in self.schema.axes:  # DirectML's Axes is an array: a list is taken as the tuple it means
            if isinstance(getattr(self, field.name), list):
                object.__setattr__(self, field.name, tuple(getattr(self, field.name)))
        for field in self.schema.values:  # an enum member's name, a list: what they mean
            object.__setattr__(self, field.name, field.taken(getattr(self, field.name)))
        self.schema.validate(self)


def operator(register: bool = True, **schema_fields):
    """Class decorator: turn an OperatorDesc subclass into a frozen dataclass with a schema,
    listed in OPERATORS (what the front ends, graph functions and docs are built over)
    unless `register` is False."""

    def declare(cls):
        cls = dataclass(frozen=True)(cls)
        fields = dataclasses.fields(cls)
        tensors = tuple(dataclasses.replace(f.metadata["tensor"], name=f.name,
                                            argument=f.metadata["tensor"].argument or f.name.removesuffix("_tensor"))
                        for f in fields if "tensor" in f.metadata)
        scalars = tuple(ScalarField(f.name, f.metadata["scalar"].dml_name) for f in fields if "scalar" in f.metadata)
        flags = tuple(FlagField(f.name, f.metadata["flag"].meaning) for f in fields if "flag" in f.metadata)
        axes = tuple(AxesField(f.name, f.metadata["axes"].dml_name) for f in fields if "axes" in f.metadata)
        choices = tuple(dataclasses.replace(f.metadata["choice"], name=f.name)
                        for f in fields if "choice" in f.metadata)
        values = tuple(dataclasses.replace(f.metadata["value"], name=f.name) for f in fields if "value" in f.metadata)
        if tensors and tensors[0].optional:  # its dimension count is what axes and describe() read
            raise TypeError(f"{cls.__name__}.{tensors[0].name}: an operator's first tensor cannot be optional")
        schema = OperatorSchema(**schema_fields, desc_class=cls, tensors=tensors, scalars=scalars, flags=flags,
                                axes=axes, choices=choices, values=values)
        cls.schema = schema
        if register:
            OPERATORS[schema.name] = schema
        SCHEMAS_BY_CLASS[cls] = schema
        return cls

    return declare


def describe(desc: OperatorDesc) -> str:
    """An operator desc in a few words: its DirectML name, data type and first tensor's sizes."""
    first = getattr(desc, desc.schema.tensors[0].name)
    return f"{desc.schema.dml_name} {first.data_type.name} {first.sizes}"


class Operator:
    """IDMLOperator: the device's own validated copy of a desc, accepted by its feature level
    (`device.create_operator`; `device` is the device that accepted it)."""

    def __init__(self, device: object, desc: OperatorDesc):
        self.device = device
        self.desc = desc

    def __repr__(self) -> str:
        return f"<dmlpy.Operator {describe(self.desc)}>"
