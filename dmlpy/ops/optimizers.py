"""The optimizer family: DirectML's ADAM_OPTIMIZER, the weight update of a training step,
parameters and both moment estimates written in one pass (kernels/pointwise.py) and bound
in place over their inputs where the caller wants.

The arithmetic, in FP32 with every operation rounded on its own (never contracted into an
FMA), in this order, B1, B2, LR and EPS the desc's FP32 scalars and T the step tensor's value:

    M' = B1 * M + (1 - B1) * G
    V' = B2 * V + ((1 - B2) * G) * G
    A  = sqrt(1 - pow(B2, T)) / (1 - pow(B1, T))
    X' = X - ((LR * A) * M') / (sqrt(V') + EPS)

sqrt and division are correctly rounded; pow is dmlpy's (ELEMENT_WISE_POW's, within 2 ULP),
so A is the same bits on every device. X' reads M' and V' as stored (for FLOAT16, rounded
to FLOAT16 first, so the stored state alone reproduces the update), and each output is
rounded once to the tensors' data type.
"""

from __future__ import annotations

from ..base.errors import InvalidArgumentError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..ir import expr as e
from ..kernels.pointwise import plan_pointwise
from .family import Family, FrontEndShape, KernelKind
from .schema import OperatorDesc, Support, TensorRole, operator, scalar_field, tensor_field

FAMILY = Family(
    "optimizers", KernelKind.OPAQUE, FrontEndShape.OWN, "dmlpy/ops/optimizers.py",
    "DirectML's ADAM_OPTIMIZER: parameters and moment estimates updated in one pass, in place where bound so "
    "(frontends/optimizers.py)")

ADAM_NOTES = (
    "DirectML's page ties every tensor to one data type (FLOAT32 or FLOAT16) in its constraints and table, while "
    "its TrainingStepTensor paragraph says UINT32: dmlpy follows the constraints and the table, so the step is a "
    "{1,1,1,1} tensor of the parameters' data type holding a whole number. The formula divides by 1 - pow(Beta1, "
    "T), which is 0 at T = 0 (the update is then NaN, as the formula says): start the count at 1 (the page's "
    "\"starts at 0\" contradicts its own formula), as Kingma and Ba's algorithm and PyTorch's Adam do. Rounding "
    "order: M' = B1*M + (1-B1)*G; V' = B2*V + ((1-B2)*G)*G; A = sqrt(1 - pow(B2, T)) / (1 - pow(B1, T)); X' = X - "
    "((LR*A)*M') / (sqrt(V') + EPS), each operation rounded to FP32, M' and V' read as stored; pow is "
    "ELEMENT_WISE_POW's. Every output may be bound in place over its own input (the step tensor excepted).")

PARAMETER_TENSORS = ("input_parameters_tensor", "input_first_moment_tensor", "input_second_moment_tensor",
                     "gradient_tensor", "output_parameters_tensor", "output_first_moment_tensor",
                     "output_second_moment_tensor")


def _check_adam(desc) -> None:
    """TrainingStepTensor is a scalar: every size 1."""
    step = desc.training_step_tensor
    if any(size != 1 for size in step.sizes):
        raise InvalidArgumentError(
            f"{type(desc).__name__}.training_step_tensor.sizes {step.sizes}: TrainingStepTensor must be a scalar "
            "(every size 1)", "sizes")


def adam_update() -> list[e.Expr]:
    """The three outputs' expressions over inputs (X, M, V, G, T) and scalars (LR, B1, B2, EPS)."""
    x, m, v, g, step = (e.tensor(k) for k in range(5))
    rate, beta1, beta2, epsilon = (e.scalar(k) for k in range(4))
    one = e.const(1.0)
    first = e.rounded(beta1 * m + (one - beta1) * g)
    second = e.rounded(beta2 * v + (one - beta2) * g * g)
    correction = e.sqrt(one - e.pow_(beta2, step)) / (one - e.pow_(beta1, step))
    parameters = x - rate * correction * first / (e.sqrt(second) + epsilon)
    return [parameters, first, second]


def _plan_adam(desc, adapter):
    parameters = desc.input_parameters_tensor
    step = desc.training_step_tensor
    # The step, one element, is read by every element: zero strides over the parameters' sizes.
    broadcast_step = BufferTensorDesc(step.data_type, parameters.sizes, (0,) * parameters.dimension_count,
                                      total_tensor_size_in_bytes=step.total_tensor_size_in_bytes,
                                      guaranteed_base_offset_alignment=step.guaranteed_base_offset_alignment)
    inputs = [parameters, desc.input_first_moment_tensor, desc.input_second_moment_tensor, desc.gradient_tensor,
              broadcast_step]
    outputs = [desc.output_parameters_tensor, desc.output_first_moment_tensor, desc.output_second_moment_tensor]
    return plan_pointwise(inputs, outputs, adam_update(), adapter,
                          (desc.learning_rate, desc.beta1, desc.beta2, desc.epsilon))


@operator(
    dml_name="ADAM_OPTIMIZER", family=FAMILY, name="adam_optimizer",
    formula="M' = Beta1*M + (1-Beta1)*G; V' = Beta2*V + (1-Beta2)*G*G; "
            "X' = X - LearningRate*sqrt(1-Beta2^T)/(1-Beta1^T)*M'/(sqrt(V')+Epsilon)",
    support=(Support(FL.LEVEL_3_0, (T.FLOAT32, T.FLOAT16), range(4, 5)),),
    same={"data_type": None, "sizes": PARAMETER_TENSORS},
    shader="pointwise.comp", kernel=_plan_adam, check=_check_adam, notes=ADAM_NOTES,
)
class AdamOptimizerOperatorDesc(OperatorDesc):
    """DML_ADAM_OPTIMIZER_OPERATOR_DESC: one Adam step of `input_parameters_tensor` with the
    gradient, the two moment estimates and the step count T (a one-element tensor, from 1)."""

    input_parameters_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputParametersTensor", "parameters")
    input_first_moment_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputFirstMomentTensor",
                                                               "first_moment")
    input_second_moment_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputSecondMomentTensor",
                                                                "second_moment")
    gradient_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "GradientTensor", "gradient")
    training_step_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "TrainingStepTensor", "training_step")
    output_parameters_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputParametersTensor",
                                                              "new_parameters")
    output_first_moment_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputFirstMomentTensor",
                                                                "new_first_moment")
    output_second_moment_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputSecondMomentTensor",
                                                                 "new_second_moment")
    learning_rate: float = scalar_field("LearningRate")
    # DirectML's members have no defaults; these are the typical values its page names (and PyTorch's).
    beta1: float = scalar_field("Beta1", 0.9)
    beta2: float = scalar_field("Beta2", 0.999)
    epsilon: float = scalar_field("Epsilon", 1e-8)


DESCS = (AdamOptimizerOperatorDesc,)
