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

from ..base.errors import InvalidArgumentError, UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..ir import expr as e
from ..kernels.matmul import MatmulEpilogue, MatmulMath, MatmulOperands, plan_matmul
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
    "hardware's. K is at most 65,520 (lavapipe ends an invocation's loops after 65,535 iterations).")


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


def _output_sizes(inputs: dict[str, BufferTensorDesc], fields: dict) -> dict[str, tuple[int, ...]]:
    """{batch..., M, N} from A and B (graph functions make the output of these sizes)."""
    def transform(name: str) -> MatrixTransform:
        value = fields.get(name, MatrixTransform.NONE)
        return MatrixTransform[value.upper()] if isinstance(value, str) else value
    a, b = inputs["a_tensor"].sizes, inputs["b_tensor"].sizes
    return {"output_tensor": (*a[:-2], _matrix_sizes(a, transform("trans_a"))[0],
                              _matrix_sizes(b, transform("trans_b"))[1])}


def _matmul_math(desc) -> MatmulMath:
    """The product, and what each output element stores over the sum S (input 0, FP32 bits)
    and C's element (input 1): Alpha * S + Beta * C rounded to the output's type, then the
    fused activation."""
    value = e.scalar(0) * e.tensor(0)
    scalars = [desc.alpha]
    if desc.c_tensor is not None:
        value = value + e.scalar(1) * e.tensor(1)
        scalars.append(desc.beta)
    activation = desc.fused_activation
    if activation is not None:
        schema = schema_of(activation)
        bound = dataclasses.replace(activation, **{t.name: desc.output_tensor for t in schema.tensors})
        math = schema.elementwise(bound)
        value = e.substitute(math.result, [e.stored(value, desc.output_tensor.data_type)], len(scalars))
        scalars += math.scalars
    operands = MatmulOperands(desc.a_tensor, desc.b_tensor, desc.output_tensor,
                              desc.trans_a is MatrixTransform.TRANSPOSE, desc.trans_b is MatrixTransform.TRANSPOSE)
    inputs = () if desc.c_tensor is None else (desc.c_tensor,)
    return MatmulMath(operands, MatmulEpilogue(value, inputs, tuple(scalars)))


def _plan_gemm(desc, adapter):
    math = _matmul_math(desc)
    return plan_matmul(math.operands, math.epilogue, adapter)


@operator(
    dml_name="GEMM", family=FAMILY, name="gemm",
    formula="OutputTensor = FusedActivation(Alpha * TransA(ATensor) x TransB(BTensor) + Beta * CTensor)",
    support=(Support(FL.LEVEL_1_0, FLOATS, range(4, 5)), Support(FL.LEVEL_4_0, FLOATS, range(2, 5))),
    same={"data_type": None, "dimension_count": None}, shader="gemm.comp", kernel=_plan_gemm, check=_check_gemm,
    in_place=False, output_sizes=_output_sizes, matmul=_matmul_math, notes=GEMM_NOTES,
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



INTEGER_NOTES = (
    "Output[m, n] = sum over k of (A[m, k] - AZeroPoint) * (B[k, n] - BZeroPoint), exact in 32-bit two's "
    "complement (it wraps only past 2^31, which takes K above 33,000 with the largest 8-bit values). A zero point "
    "is one for the whole tensor (sizes all 1) or one per row of A (sizes ending (M, 1), or (M,) in one "
    "dimension) or per column of B (sizes ending (1, N), or (N,)); a null zero point is 0. ATensor, BTensor and "
    "OutputTensor have 4 dimensions at FEATURE_LEVEL_2_1 and 2 to 4 from 4_0; AZeroPointTensor 1 to 4 from 4_0, "
    "BZeroPointTensor 2 to 4 from 4_0 and 1 to 4 from 5_2, whatever A's and B's counts. The products run on the "
    "GEMM kernel family.")


def _check_integer(desc) -> None:
    """A {batch, M, K}, B {batch, K, N}, Output {batch, M, N}, of 2 to 4 dimensions; each zero
    point per tensor or per row (A) or column (B), its count on the last dimension when it has
    one; B's zero point has B's data type (A's, A's: `same`)."""
    owner = type(desc).__name__
    for name in ("a_tensor", "b_tensor", "output_tensor"):
        count = getattr(desc, name).dimension_count
        if count < 2:
            raise InvalidArgumentError(
                f"{owner}.{name}.dimension_count {count}: ATensor, BTensor and OutputTensor have 2 to 4 dimensions "
                "(a zero point may have 1)", "dimension_count")
    (m, k), (k_b, n) = desc.a_tensor.sizes[-2:], desc.b_tensor.sizes[-2:]
    if k_b != k:
        raise InvalidArgumentError(
            f"{owner}.b_tensor.sizes {desc.b_tensor.sizes} has K = {k_b} but a_tensor.sizes {desc.a_tensor.sizes} "
            f"has K = {k}: A's columns must equal B's rows", "sizes")
    output = desc.output_tensor.sizes
    if output[-2:] != (m, n) or any(t.sizes[:-2] != output[:-2] for t in (desc.a_tensor, desc.b_tensor)):
        raise InvalidArgumentError(
            f"{owner}.output_tensor.sizes {output} must be {(*desc.a_tensor.sizes[:-2], m, n)}: OutputTensor's Sizes "
            "are { BatchCount, ChannelCount, M, N } with A's and B's batch sizes", "sizes")
    for name, dim, count, what in (("a_zero_point_tensor", -2, m, "row of A (M)"),
                                   ("b_zero_point_tensor", -1, n, "column of B (N)")):
        zero = getattr(desc, name)
        if zero is None:
            continue
        dim = -1 if zero.dimension_count == 1 else dim  # one dimension: the count itself
        others = [size for d, size in enumerate(zero.sizes) if d != len(zero.sizes) + dim]
        if any(size != 1 for size in others) or zero.sizes[dim] not in (1, count):
            raise InvalidArgumentError(
                f"{owner}.{name}.sizes {zero.sizes}: a zero point is one for the tensor (every size 1) or one per "
                f"{what}: 1 everywhere but {count} or 1 at dimension {len(zero.sizes) + dim}", "sizes")
    if desc.b_zero_point_tensor is not None and desc.b_zero_point_tensor.data_type != desc.b_tensor.data_type:
        raise InvalidArgumentError(
            f"{owner}.b_zero_point_tensor.data_type {desc.b_zero_point_tensor.data_type.name} != b_tensor.data_type "
            f"{desc.b_tensor.data_type.name}: BTensor and BZeroPointTensor must have the same DataType", "data_type")


def _integer_output_sizes(inputs: dict[str, BufferTensorDesc], fields: dict) -> dict[str, tuple[int, ...]]:
    a, b = inputs["a_tensor"].sizes, inputs["b_tensor"].sizes
    return {"output_tensor": (*a[:-1], b[-1])}


def _integer_level(desc, device_level: FL) -> None:
    """A one-dimensional BZeroPointTensor is FEATURE_LEVEL_5_2's (AZeroPointTensor's is 4_0's, the
    Support rows')."""
    zero = desc.b_zero_point_tensor
    if zero is not None and zero.dimension_count == 1 and device_level < FL.LEVEL_5_2:
        raise UnsupportedError(
            f"{type(desc).__name__}.b_zero_point_tensor with 1 dimension needs {FL.LEVEL_5_2} but the device is "
            f"capped at {device_level}", "dimension_count")


def _as_matrix(zero: BufferTensorDesc | None, column: bool) -> BufferTensorDesc | None:
    """A one-dimensional zero point as the matrix it stands for: (count, 1) for A's rows,
    (1, count) for B's columns (the same elements, the same bytes)."""
    if zero is None or zero.dimension_count != 1:
        return zero
    (count,), (stride,) = zero.sizes, zero.element_strides
    sizes, strides = ((1, count), (stride, stride)) if column else ((count, 1), (stride, stride))
    return BufferTensorDesc(zero.data_type, sizes, strides, total_tensor_size_in_bytes=zero.total_tensor_size_in_bytes)


def _integer_math(desc) -> MatmulMath:
    bound = tuple(name for name, field in (("a", "a_tensor"), ("a_zero", "a_zero_point_tensor"), ("b", "b_tensor"),
                                           ("b_zero", "b_zero_point_tensor")) if getattr(desc, field) is not None)
    operands = MatmulOperands(desc.a_tensor, desc.b_tensor, desc.output_tensor,
                              a_zero=_as_matrix(desc.a_zero_point_tensor, False),
                              b_zero=_as_matrix(desc.b_zero_point_tensor, True), bound=bound)
    return MatmulMath(operands, MatmulEpilogue(e.tensor(0)))


def _plan_integer(desc, adapter):
    math = _integer_math(desc)
    return plan_matmul(math.operands, math.epilogue, adapter)


INTEGERS = (T.INT8, T.UINT8)


@operator(
    dml_name="MATRIX_MULTIPLY_INTEGER", family=FAMILY, name="matrix_multiply_integer",
    formula="OutputTensor = (ATensor - AZeroPointTensor) x (BTensor - BZeroPointTensor), in INT32",
    support=(Support(FL.LEVEL_2_1, INTEGERS, range(4, 5)), Support(FL.LEVEL_4_0, INTEGERS, range(1, 5))),
    same={"dimension_count": ("a_tensor", "b_tensor", "output_tensor"),
          "data_type": ("a_tensor", "a_zero_point_tensor")},
    shader="gemm.comp", kernel=_plan_integer, check=_check_integer, level_check=_integer_level, in_place=False,
    output_sizes=_integer_output_sizes,
    matmul=_integer_math, notes=INTEGER_NOTES,
)
class MatrixMultiplyIntegerOperatorDesc(OperatorDesc):
    """DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC: INT8/UINT8 matrices less their zero points
    (None: 0), multiplied exactly into INT32."""

    a_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "ATensor")
    a_zero_point_tensor: BufferTensorDesc | None = tensor_field(TensorRole.INPUT, "AZeroPointTensor",
                                                                "a_zero_point", optional=True)
    b_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "BTensor")
    b_zero_point_tensor: BufferTensorDesc | None = tensor_field(TensorRole.INPUT, "BZeroPointTensor",
                                                                "b_zero_point", optional=True)
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor", data_types=(T.INT32,))


DESCS = (GemmOperatorDesc, MatrixMultiplyIntegerOperatorDesc)
