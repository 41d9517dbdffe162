"""The data type of a front end's result, where an operator's output may differ in type from
its inputs: what the NumPy functions, device arrays and graph functions all follow."""

from __future__ import annotations

from ..base.errors import InvalidArgumentError
from ..base.types import TensorDataType
from ..ops.schema import OperatorSchema


def output_data_type(schema: OperatorSchema, input_type: TensorDataType) -> TensorDataType:
    """The data type of a front end's result from its inputs' one data type: the same, unless
    the output's field fixes others (a comparison's UINT8)."""
    field = schema.outputs[0]
    if field.data_types is None or input_type in field.data_types:
        return input_type
    if len(field.data_types) == 1:
        return field.data_types[0]
    choices = ", ".join(t.name for t in field.data_types)
    raise InvalidArgumentError(
        f"{schema.name} on {input_type.name} inputs may give {choices}: the front end does not choose; build a "
        f"{schema.desc_class.__name__} with the output's data type", "data_type")
