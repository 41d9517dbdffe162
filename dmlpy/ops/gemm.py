"""The matrix-multiplication family: DirectML's GEMM, `FusedActivation(Alpha * TransA(A) x
TransB(B) + Beta * C)` over up to two leading batch dimensions.

Each output element's K products are summed in one documented order (docs/numerics.md): the
sum starts at -0 and takes the products in increasing k, every product and every sum rounded
to FP32 on its own, subnormals kept; then Alpha times it, plus Beta times C, each rounded,
stored once in the output's data type, and the fused activation run on that stored value as
the activation's own operator would. So the bits are the same on every device, workgroup size
and tile shape. The kernel family is shaders/gemm.comp (kernels/matmul.py plans it).
"""

from __future__ import annotations

import dataclasses

from ..base.errors import InvalidArgumentError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..ir import expr as e
from ..kernels.matmul import MatmulOperands, plan_matmul
from .enums import MatrixTransform
from .family import Family, FrontEndShape, KernelKind
from .fields import enum_field, fused_activation_field, schema_of
from .schema import OperatorDesc, Support, TensorRole, operator, scalar_field, tensor_field

FAMILY = Family(
    "matrix multiplication", KernelKind.EPILOGUE_HOST, FrontEndShape.OWN, "dmlpy/ops/gemm.py",
    "DirectML's GEMM: batched matrix products in one documented summation order (the same bits on every "
    "device), Alpha, Beta and C, and a fused activation on the stored result; NumPy's matmul on top "
    "(frontends/matmul.py)")

FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)  # BFLOAT16 wherever DirectML takes FLOAT16: a dmlpy extension

GEMM_NOTES = (
    "Each output element is S = (((-0 + p0) + p1) + ... + p(K-1)), p_k = A[m, k] * B[k, n], every product and "
    "every sum rounded to FP32 on its own (never fused into an FMA), subnormals kept on every device; FLOAT16 "
    "and BFLOAT16 inputs are converted to FP32 exactly. Then Alpha * S, plus Beta * C where CTensor is given, "
    "each rounded to FP32, stored once in the output's data type (to nearest even), and the fused activation "
    "applied to that stored value as its own operator would: the bits of GEMM and the activation run one after "
    "the other. Leading batch dimensions of A, B and C have OutputTensor's sizes; broadcast them (and C, e.g. a "
    "bias row) with zero strides. Where the device may flush subnormals, a first pass finds the rows of A and "
    "columns of B whose smallest nonzero magnitudes could make a product or a partial sum subnormal, and only "
    "the outputs they meet take the exact (integer-emulated) arithmetic; every other output takes the "
    "hardware's. K is at most 131,072 (lavapipe ends an invocation's loops after 65,535 iterations).")


def _matrix_sizes(sizes: tuple[int, ...], transform: MatrixTransform) -> tuple[int, int]:
    """(rows, columns) of the matrix a tensor holds once `transform` is applied."""
    rows, columns = sizes[-2:]
    return (columns, rows) if transform is MatrixTransform.TRANSPOSE else (rows, columns)


def _check_gemm(desc) -> None:
    """TransA(A) is {batch, M, K}, TransB(B) {batch, K, N}, Output {batch, M, N}; C has
    Output's sizes; A's and B's batch sizes are Output's."""
    owner = type(desc).__name__
    m, k = _matrix_sizes(desc.a_tensor.sizes, desc.trans_a)
    k_b, n = _matrix_sizes(desc.b_tensor.sizes, desc.trans_b)
    if k_b != k:
        raise InvalidArgumentError(
            f"{owner}.b_tensor.sizes {desc.b_tensor.sizes} (trans_b {desc.trans_b.name}) has K = {k_b} but "
            f"a_tensor.sizes {desc.a_tensor.sizes} (trans_a {desc.trans_a.name}) has K = {k}: TransA(A)'s columns "
            "must equal TransB(B)'s rows", "sizes")
    output = desc.output_tensor.sizes
    batch = output[:-2]
    if output[-2:] != (m, n):
        raise InvalidArgumentError(
            f"{owner}.output_tensor.sizes {output} must end in (M, N) = {(m, n)}: OutputTensor's Sizes are "
            "{ BatchCount, ChannelCount, M, N }", "sizes")
    for name in ("a_tensor", "b_tensor"):
        sizes = getattr(desc, name).sizes
        if sizes[:-2] != batch:
            raise InvalidArgumentError(
                f"{owner}.{name}.sizes {sizes} has batch sizes {sizes[:-2]} but output_tensor.sizes {output} has "
                f"{batch}: the leading dimensions must be equal (broadcast with zero strides)", "sizes")
    if desc.c_tensor is not None and desc.c_tensor.sizes != output:
        raise InvalidArgumentError(
            f"{owner}.c_tensor.sizes {desc.c_tensor.sizes} != output_tensor.sizes {output}: CTensor and "
            "OutputTensor must have the same Sizes (broadcast C with zero strides)", "sizes")


def _epilogue(desc) -> tuple[e.Expr, tuple[float, ...]]:
    """What each output element stores, over the sum S (input 0, FP32 bits) and C's element
    (input 1): Alpha * S + Beta * C rounded to the output's type, then the fused activation."""
    value = e.scalar(0) * e.tensor(0)
    scalars = [desc.alpha]
    if desc.c_tensor is not None:
        value = value + e.scalar(1) * e.tensor(1)
        scalars.append(desc.beta)
    activation = desc.fused_activation
    if activation is None:
        return value, tuple(scalars)
    schema = schema_of(activation)
    bound = dataclasses.replace(activation, **{t.name: desc.output_tensor for t in schema.tensors})
    math = schema.elementwise(bound)
    fused = e.substitute(math.result, [e.stored(value, desc.output_tensor.data_type)], len(scalars))
    return fused, (*scalars, *math.scalars)


def _plan_gemm(desc, adapter):
    result, scalars = _epilogue(desc)
    operands = MatmulOperands(desc.a_tensor, desc.b_tensor, desc.c_tensor, desc.output_tensor,
                              desc.trans_a is MatrixTransform.TRANSPOSE, desc.trans_b is MatrixTransform.TRANSPOSE)
    return plan_matmul(operands, result, scalars, adapter)


@operator(
    dml_name="GEMM", family=FAMILY, name="gemm",
    formula="OutputTensor = FusedActivation(Alpha * TransA(ATensor) x TransB(BTensor) + Beta * CTensor)",
    support=(Support(FL.LEVEL_1_0, FLOATS, range(4, 5)), Support(FL.LEVEL_4_0, FLOATS, range(2, 5))),
    same={"data_type": None, "dimension_count": None}, shader="gemm.comp", kernel=_plan_gemm, check=_check_gemm,
    in_place=False, notes=GEMM_NOTES,
)
class GemmOperatorDesc(OperatorDesc):
    """DML_GEMM_OPERATOR_DESC: `FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C)`;
    `c_tensor` may be None (DirectML's null: no C term)."""

    a_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "ATensor")
    b_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "BTensor")
    c_tensor: BufferTensorDesc | None = tensor_field(TensorRole.INPUT, "CTensor", optional=True)
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor")
    trans_a: MatrixTransform = enum_field(MatrixTransform, "TransA", "NONE")
    trans_b: MatrixTransform = enum_field(MatrixTransform, "TransB", "NONE")
    alpha: float = scalar_field("Alpha", 1.0)
    beta: float = scalar_field("Beta", 0.0)
    fused_activation: OperatorDesc | None = fused_activation_field()


DESCS = (GemmOperatorDesc,)
