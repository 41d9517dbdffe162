"""The operator declarations: one decorated desc class per operator.

ACTIVATION_RELU_GRAD is DirectML's. The others are dmlpy extensions from oneDNN Graph
(HardSigmoidBackward, PReLUBackward): refused by strict_directml devices, and offered from
FEATURE_LEVEL_3_0, the level at which DirectML's activation gradients began (their
forward passes and 1-8 dims were already there), so they gate like their neighbour.
"""

from __future__ import annotations

from .codegen import broadcast_dims, plan_elementwise, plan_prelu_grad
from .errors import InvalidArgumentError
from .schema import OperatorDesc, Support, TensorRole, operator, scalar_field, tensor_field
from .tensor_desc import BufferTensorDesc
from .types import FeatureLevel
from .types import TensorDataType as T

ALL = None  # a `same` constraint over every tensor
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)


def _plan_relu_grad(desc, adapter):
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
    same={"data_type": ALL, "dimension_count": ALL, "sizes": ALL},
    shader="relu_grad.comp",
    kernel=_plan_relu_grad,
)
class ActivationReluGradOperatorDesc(OperatorDesc):
    """DML_ACTIVATION_RELU_GRAD_OPERATOR_DESC: the gradient of ReLU.

    A select on bit patterns: where X > 0 the bits of dY pass through unchanged (NaN, -0
    and inf included); everywhere else, X = NaN and X = -0 included, the result is +0.
    The same shader serves oneDNN's use_dst: ReLU's output Y = max(X, 0) is > 0 exactly
    where X is, so Y can stand in for X.
    """

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor")
    input_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputGradientTensor")
    output_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputGradientTensor")


def _plan_hard_sigmoid_grad(desc, adapter):
    return plan_elementwise(desc.schema.shader, [desc.input_tensor, desc.input_gradient_tensor],
                            desc.output_gradient_tensor, adapter, (desc.alpha, desc.beta))


@operator(
    dml_name="ACTIVATION_HARD_SIGMOID_GRAD",
    name="hard_sigmoid_grad",
    formula="OutputGradientTensor = 0 < Alpha * InputTensor + Beta < 1 ? InputGradientTensor * Alpha : 0",
    support=(Support(FeatureLevel.LEVEL_3_0, FLOATS),),
    same={"data_type": ALL, "dimension_count": ALL, "sizes": ALL},
    shader="hard_sigmoid_grad.comp",
    kernel=_plan_hard_sigmoid_grad,
    extension=True,
)
class ActivationHardSigmoidGradOperatorDesc(OperatorDesc):
    """oneDNN Graph's HardSigmoidBackward in DirectML's form (a dmlpy extension).

    In FP32 from the stored values: Alpha * X and + Beta each rounded on its own (never
    fused), the strict tests 0 < s < 1, dY * Alpha, then one rounding to the data type.
    Alpha and Beta are FP32 values and must be finite.
    """

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor")
    input_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputGradientTensor")
    output_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputGradientTensor")
    alpha: float = scalar_field("Alpha")
    beta: float = scalar_field("Beta")


def _check_prelu_grad(desc) -> None:
    """OutputSlopeGradientTensor has size 1 where the slope broadcasts, the input's size elsewhere."""
    reduced = broadcast_dims(desc.slope_tensor)
    expected = tuple(1 if r else size for r, size in zip(reduced, desc.input_tensor.sizes))
    actual = desc.output_slope_gradient_tensor.sizes
    if actual != expected:
        raise InvalidArgumentError(
            f"{type(desc).__name__}.output_slope_gradient_tensor.sizes {actual} != {expected}: it must be 1 on "
            f"each dim where slope_tensor broadcasts (zero stride; here strides "
            f"{desc.slope_tensor.element_strides}) and the input's size elsewhere", "sizes")


def _plan_prelu_grad(desc, adapter):
    return plan_prelu_grad(desc.input_tensor, desc.slope_tensor, desc.input_gradient_tensor,
                           desc.output_gradient_tensor, desc.output_slope_gradient_tensor, adapter)


@operator(
    dml_name="ACTIVATION_PARAMETERIZED_RELU_GRAD",
    name="prelu_grad",
    formula=("OutputGradientTensor = InputTensor > 0 ? InputGradientTensor : SlopeTensor * InputGradientTensor\n"
             "OutputSlopeGradientTensor = sum over the slope's broadcast dims of "
             "(InputTensor > 0 ? 0 : InputTensor * InputGradientTensor)"),
    support=(Support(FeatureLevel.LEVEL_3_0, FLOATS),),
    same={"data_type": ALL, "dimension_count": ALL,
          "sizes": ("input_tensor", "slope_tensor", "input_gradient_tensor", "output_gradient_tensor")},
    shader="prelu_grad.comp",
    kernel=_plan_prelu_grad,
    extension=True,
    check=_check_prelu_grad,
)
class ActivationParameterizedReluGradOperatorDesc(OperatorDesc):
    """oneDNN Graph's PReLUBackward in DirectML's form (a dmlpy extension).

    SlopeTensor has the input's Sizes and broadcasts through zero strides. The slope
    gradient is reduced over those broadcast dims in a fixed-order tree with FP32
    accumulation (no float atomics): the same bits on every run and every device. Its
    scratch space is the temporary resource (binding_properties.temporary_resource_size).
    """

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor")
    slope_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "SlopeTensor")
    input_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputGradientTensor")
    output_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputGradientTensor")
    output_slope_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputSlopeGradientTensor")
