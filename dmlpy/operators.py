"""The operator declarations: one decorated desc class per operator."""

from __future__ import annotations

from .codegen import plan_elementwise
from .schema import OperatorDesc, Support, TensorRole, operator, tensor_field
from .tensor_desc import BufferTensorDesc
from .types import FeatureLevel
from .types import TensorDataType as T


def _plan_x_dy_to_dx(desc, adapter):
    return plan_elementwise(desc.schema.shader, [desc.input_tensor, desc.input_gradient_tensor],
                            desc.output_gradient_tensor, adapter)


@operator(
    dml_name="ACTIVATION_RELU_GRAD",
    name="relu_grad",
    formula="OutputGradientTensor = InputTensor > 0 ? InputGradientTensor : 0",
    support=(
        Support(FeatureLevel.LEVEL_3_0, (T.FLOAT32, T.FLOAT16)),
        Support(FeatureLevel.LEVEL_5_1, (T.INT32, T.INT16, T.INT8)),
        Support(FeatureLevel.LEVEL_3_0, (T.BFLOAT16,)),  # dmlpy extension (oneDNN, InfiniCore list BF16)
    ),
    same={"data_type": None, "dimension_count": None, "sizes": None},
    shader="relu_grad.comp",
    kernel=_plan_x_dy_to_dx,
)
class ActivationReluGradOperatorDesc(OperatorDesc):
    """DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC: the gradient of ReLU.

    A select on bit patterns: where X > 0 the bits of dY pass through unchanged (NaN, -0
    and inf included); everywhere else, X = NaN and X = -0 included, the result is +0.
    """

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor")
    input_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputGradientTensor")
    output_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputGradientTensor")
