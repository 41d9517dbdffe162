"""The data type of a front end's result, where an operator's output may differ in type from
its inputs: what the NumPy functions, device arrays and graph functions all follow."""

from __future__ import annotations

from collections.abc import Mapping

from ..base.types import TensorDataType
from ..ops.schema import OperatorSchema


def _sharing_data_type(schema: OperatorSchema) -> set[str]:
    """The fields that must share one data type (the schema's `same`)."""
    return {t.name for t in schema.sharing("data_type")} if "data_type" in schema.same else set()


def type_groups(schema: OperatorSchema) -> list[tuple[str, ...]]:
    """The inputs' front-end arguments grouped by the data type they share (the schema's
    `same`): IF's condition on its own, its A and B together."""
    shared = _sharing_data_type(schema)
    together = tuple(f.argument for f in schema.inputs if f.name in shared)
    return ([together] if together else []) + [(f.argument,) for f in schema.inputs if f.name not in shared]


def free_output(schema: OperatorSchema) -> bool:
    """Whether the output's data type is tied to no input's and fixed to no set (CAST's): the
    front end then takes it as `dtype`."""
    field = schema.outputs[0]
    shared = _sharing_data_type(schema)
    return field.data_types is None and field.name not in shared and schema.output_data_type is None


def output_data_type(schema: OperatorSchema, input_types: Mapping[str, TensorDataType],
                     requested: TensorDataType | None = None) -> TensorDataType:
    """The data type of a front end's result from its inputs' (by argument): `requested`
    where the output's type is free (CAST's `dtype`), else that of the inputs whose data
    type the output shares, unless the output's field fixes a set (a comparison's UINT8 or
    UINT32): then the first of the set, NumPy's bool as bytes."""
    if requested is not None and free_output(schema):
        return requested
    field = schema.outputs[0]
    shared = _sharing_data_type(schema)
    source = next((f for f in schema.inputs if f.name in shared), None) if field.name in shared else None
    own = input_types[source.argument] if source is not None else None
    if field.data_types is None:
        return own if own is not None else input_types[schema.inputs[0].argument]
    return own if own in field.data_types else field.data_types[0]
