"""The operators that are not rows of the activation table (dmlpy/activations.py declares
every activation and its gradient, ACTIVATION_RELU_GRAD among them).

ACTIVATION_PARAMETERIZED_RELU_GRAD is oneDNN Graph's PReLUBackward, a dmlpy extension:
refused by strict_directml devices, and offered from FEATURE_LEVEL_3_0, the level at which
DirectML's activation gradients began, so it gates like its neighbours.
"""

from __future__ import annotations

from ..base.errors import InvalidArgumentError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel
from ..base.types import TensorDataType as T
from ..ir import expr as e
from ..kernels.codegen import broadcast_dims
from ..kernels.reduction import ReducedOutput, plan_reduction
from .family import Family, FrontEndShape, KernelKind
from .schema import OperatorDesc, Support, TensorRole, operator, tensor_field

ALL = None  # a `same` constraint over every tensor
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)


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


def _prelu_grad_output_sizes(inputs: dict[str, BufferTensorDesc], fields: dict) -> dict[str, tuple[int, ...]]:
    reduced = broadcast_dims(inputs["slope_tensor"])
    sizes = inputs["input_tensor"].sizes
    return {"output_slope_gradient_tensor": tuple(1 if r else size for r, size in zip(reduced, sizes))}


def _plan_prelu_grad(desc, adapter):
    """dX element by element while the first (and only) reduction runs; dSlope per row."""
    x, slope, dy = e.tensor(0), e.tensor(1), e.tensor(2)
    dx = e.where(e.positive(x), dy, slope * dy)
    dslope = e.reduce_sum(e.where(e.positive(x), 0, x * dy))
    return plan_reduction([desc.input_tensor, desc.slope_tensor, desc.input_gradient_tensor],
                          [ReducedOutput(desc.output_gradient_tensor, dx),
                           ReducedOutput(desc.output_slope_gradient_tensor, dslope, per_row=True)],
                          broadcast_dims(desc.slope_tensor), adapter)


FAMILY = Family(
    "prelu_grad", KernelKind.REDUCTION, FrontEndShape.OWN, "dmlpy/ops/prelu_grad.py",
    "oneDNN's PReLUBackward: dX element by element and the slope's gradient reduced over the dims it "
    "broadcasts along; its front end (frontends/prelu.py) shapes the slope by a data format")


@operator(
    dml_name="ACTIVATION_PARAMETERIZED_RELU_GRAD", family=FAMILY,
    name="prelu_grad",
    formula=("OutputGradientTensor = InputTensor > 0 ? InputGradientTensor : SlopeTensor * InputGradientTensor\n"
             "OutputSlopeGradientTensor = sum over the slope's broadcast dims of "
             "(InputTensor > 0 ? 0 : InputTensor * InputGradientTensor)"),
    support=(Support(FeatureLevel.LEVEL_3_0, FLOATS),),
    same={"data_type": ALL, "dimension_count": ALL,
          "sizes": ("input_tensor", "slope_tensor", "input_gradient_tensor", "output_gradient_tensor")},
    shader="reduce.comp",
    kernel=_plan_prelu_grad,
    extension=True,
    check=_check_prelu_grad,
    output_sizes=_prelu_grad_output_sizes,
)
class ActivationParameterizedReluGradOperatorDesc(OperatorDesc):
    """oneDNN Graph's PReLUBackward in DirectML's form (a dmlpy extension).

    SlopeTensor has the input's Sizes and broadcasts through zero strides. The slope
    gradient is reduced over those broadcast dims in a fixed-order tree with FP32
    accumulation (no float atomics): the same bits on every run and every device. Its
    scratch space is the temporary resource (binding_properties.temporary_resource_size).
    """

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor", "x")
    slope_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "SlopeTensor")
    input_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputGradientTensor", "dy")
    output_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputGradientTensor")
    output_slope_gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputSlopeGradientTensor")
