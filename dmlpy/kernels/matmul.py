"""The matrix-product planner (shaders/gemm.comp): batched products of two matrices, each
output element's K products summed in increasing k, then an element-wise epilogue over the
sum and further tensors of the output's sizes (rendered from an expression, as the
element-wise family's math is): GEMM's Alpha, Beta, C and fused activation, and any
element-wise chain a graph fuses into the store.

Tiles. A workgroup computes a block of BLOCK_M x BLOCK_N outputs: its invocations lie along N
(neighbouring invocations, neighbouring columns: coalesced loads of B and stores on a GPU,
SIMD lanes over consecutive columns on a CPU device), each holding TILE_M x TILE_N
accumulators in registers (rows m0..m0+TILE_M-1, columns a lane-row apart). The tile shape
comes from the device's kind and limits, never from the desc's values, and the bits do not
depend on it: each accumulator sees its products in the same order whatever the tile.

Exactness. Where the device may flush subnormals (codegen.float_controls_defines), a first
stage writes, for every row of A and column of B, the smallest nonzero magnitude it holds (as
bits, minus one: zeros drop out of the minimum). An invocation whose rows' and columns'
smallest magnitudes multiply to 2^-102 or more sums with the hardware's operations: every
product is then a normal multiple of 2^-125, and so is every partial sum (or zero), so no
operand or result of the hardware's is subnormal. Any other invocation takes dmlpy's exact
operations (numeric.glsl's dml_mul and dml_add). The results are the same bits either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base.adapter import SUBGROUP_BASIC, SUBGROUP_SHUFFLE, SUBGROUP_VOTE, AdapterInfo, AdapterType
from ..base.errors import UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import TensorDataType, data_type_info
from ..ir import expr as e
from ..ir import render
from .codegen import (
    KernelPlan,
    KernelStage,
    float_controls_defines,
    fp32_bits,
    starts_on,
    uint_list,
    workgroup_size_for,
)
from .interface import KernelInterface, moves_vectors_in_64bit_words

# lavapipe ends an invocation's loops after 65,535 iterations in all: the exact path takes one
# k an iteration (the others K_STEP), and a 16-bit store's compare-and-swap a few more.
K_STEP = 4
MAX_K = 65520

FLOAT_TYPES = (TensorDataType.FLOAT32, TensorDataType.FLOAT16, TensorDataType.BFLOAT16)

# Input types whose products and sums can never be subnormal in FP32 (every FLOAT16 value is a
# multiple of 2^-24, so every product and sum is a multiple of 2^-48): no exactness stage.
NEVER_SUBNORMAL = (TensorDataType.FLOAT16,)


@dataclass(frozen=True)
class MatmulOperands:
    """The tensors of a batched product: A (read transposed where `transpose_a`), B (likewise),
    and the output {batch..., M, N}; for integers (INT8, UINT8), optional zero points of A's
    rows and B's columns (one for all, or one each: sizes ending (M, 1) or (1, N)). `bound`
    names the product's own inputs in their binding order (the operator's member order)."""

    a: BufferTensorDesc
    b: BufferTensorDesc
    output: BufferTensorDesc
    transpose_a: bool = False
    transpose_b: bool = False
    a_zero: BufferTensorDesc | None = None
    b_zero: BufferTensorDesc | None = None
    bound: tuple[str, ...] = ("a", "b")

    @property
    def integer(self) -> bool:
        return self.a.data_type not in FLOAT_TYPES

    @property
    def sum_type(self) -> TensorDataType:
        """The data type the epilogue reads the sum S as: FP32, or INT32 for integers."""
        return TensorDataType.INT32 if self.integer else TensorDataType.FLOAT32

    @property
    def dimensions(self) -> tuple[int, int, int]:
        """(M, N, K)."""
        m, n = self.output.sizes[-2:]
        k = self.a.sizes[-2] if self.transpose_a else self.a.sizes[-1]
        return m, n, k


@dataclass(frozen=True)
class MatmulEpilogue:
    """What each output element stores: `result` over the sum S (e.tensor(0), FP32 bits) and
    the element at its place of each of `inputs` (e.tensor(1 + t)), with FP32 `scalars`."""

    result: e.Expr
    inputs: tuple[BufferTensorDesc, ...] = ()
    scalars: tuple[float, ...] = ()


@dataclass(frozen=True)
class MatmulMath:
    """An operator as a matrix product and its epilogue (GEMM's): what a graph fuses an
    element-wise chain into, its output's value becoming the chain's input."""

    operands: MatmulOperands
    epilogue: MatmulEpilogue


@dataclass(frozen=True)
class TileShape:
    lanes_n: int  # invocations along N in a workgroup
    lanes_m: int  # rows of invocations
    tile_m: int  # rows each invocation computes
    tile_n: int  # columns each invocation computes, lanes_n apart
    # Where not 0, the workgroup is one subgroup of this many lanes, which share their rows
    # (gemm.comp's SHARED_ROWS): lanes_m 1, tile_m a multiple of it.
    shared_lanes: int = 0

    @property
    def block(self) -> tuple[int, int]:
        return self.lanes_m * self.tile_m, self.lanes_n * self.tile_n


# What the lanes of a subgroup sharing their rows need: shuffles (each value read from a
# constant lane), and a vote where the exactness stage may send some of them to the exact
# arithmetic.
SHARED_ROWS_OPERATIONS = SUBGROUP_BASIC | SUBGROUP_SHUFFLE | SUBGROUP_VOTE
# Products smaller than this (64^3) keep 4 x 4 outputs a lane: they take well under a
# millisecond either way, and the shared kernel's longer unrolled body costs lavapipe about
# half a second more to compile.
SHARED_ROWS_MIN_PAIRS = 1 << 18


def tile_shape(adapter: AdapterInfo, operands: MatmulOperands) -> TileShape:
    """The outputs each invocation computes, from the device's kind and limits and the
    product's size, never from its values.

    A CPU device (lavapipe) runs a subgroup's invocations as the SIMD lanes of one thread and
    loads storage buffers lane by lane, so a load costs many times an arithmetic operation:
    where its subgroups can shuffle (4 or 8 lanes), a workgroup is one subgroup whose lanes
    share TILE_M rows (each row of A loaded once and shuffled to the others), each lane with 8
    columns of its own. Products of 2^21 pairs or more take 32 rows, each value of B loaded
    once for all of them (lavapipe, FP32 1024^3: 4 x 4 outputs a lane 1,782 ms; 32 shared rows
    x 8 columns 253 ms, and 160-180 ms with each 16-byte vector loaded as two 64-bit
    components, where the device has shaderInt64; a training step's 256 x 64 x 128 ran in
    0.41-0.58 ms on 32 rows against 0.52-0.99 on 16); smaller ones fewer, which compile
    faster and leave no lane idle. Elsewhere 4 x 4 outputs an invocation (16
    accumulators, whole 16-byte vectors of A and B where their layouts allow): a CPU device
    without shuffles 8 lanes along N; a GPU 16 or 32 lanes along N for coalesced rows of B."""
    m, n, k = operands.dimensions
    size = workgroup_size_for(adapter)
    if adapter.adapter_type == AdapterType.CPU:
        lanes = adapter.subgroup_size
        pairs = m * n * k
        if lanes in (4, 8) and adapter.has_subgroup_operations(SHARED_ROWS_OPERATIONS) and not operands.integer \
                and pairs >= SHARED_ROWS_MIN_PAIRS:
            rows = 32 if pairs >= 1 << 21 else 16 if pairs >= 1 << 20 else lanes
            return TileShape(lanes, 1, min(rows, max(lanes, -(-m // lanes) * lanes)), 8, shared_lanes=lanes)
        lanes_n = min(size, 8)
        return TileShape(lanes_n, max(1, min(16, size // lanes_n)), 4, 4)
    lanes_n = min(size, 32 if n >= 32 else 16)
    return TileShape(lanes_n, max(1, min(size, 256) // lanes_n // 4), 4, 4)


def _matrix_strides(tensor: BufferTensorDesc, transposed: bool) -> tuple[int, int]:
    """The element strides along the matrix's rows and columns once read (transposed or not)."""
    row, column = tensor.element_strides[-2:]
    return (column, row) if transposed else (row, column)


def _vector_elements(tensor: BufferTensorDesc, shape: TileShape) -> int:
    """Elements of `tensor` in a 16-byte vector where the kernel may read it in vectors: 4 for
    FP32; 8 for FLOAT16 and BFLOAT16 where 8 lanes share their rows (a chunk of 8 k, or a
    lane's 8 columns, is one vector); else 0."""
    if tensor.data_type == TensorDataType.FLOAT32:
        return 4
    if tensor.data_type in FLOAT_TYPES and shape.shared_lanes == 8 and shape.tile_n == 8:
        return 8
    return 0


def _vector_dims(operands: MatmulOperands, shape: TileShape) -> tuple[str | None, str | None]:
    """Along which dim A and B are read as 16-byte vectors ("K", "M" / "N", or None: element
    by element): contiguous along that dim, a whole number of vectors long, and every other
    stride and the binding's start whole vectors (_vector_elements: FP32, or 16-bit types
    where lanes share their rows)."""
    m, n, k = operands.dimensions

    def along(tensor: BufferTensorDesc, strides: tuple[int, int], choices: tuple[tuple[str, int, int], ...]):
        batch_strides = tensor.element_strides[:-2]
        elements = _vector_elements(tensor, shape)
        if not elements or not starts_on(tensor, 16) or any(s % elements for s in batch_strides):
            return None
        for name, dim, length in choices:
            if strides[dim] == 1 and strides[1 - dim] % elements == 0 and length % elements == 0:
                return name
        return None

    # Vectors across rows or columns are a tile's rows (4 of them; whole groups of 4 where the
    # lanes share their rows) or a lane's run of columns (4, or a multiple where they share).
    across_m = shape.tile_m == 4 or shape.shared_lanes
    across_n = shape.tile_n == 4 or (shape.shared_lanes and shape.tile_n % 4 == 0)
    a = along(operands.a, _matrix_strides(operands.a, operands.transpose_a),
              (("K", 1, k), *((("M", 0, m),) if across_m else ())))
    b = along(operands.b, _matrix_strides(operands.b, operands.transpose_b),
              (("K", 0, k), *((("N", 1, n),) if across_n else ())))
    return a, b


def _value(tensor: BufferTensorDesc, load: str) -> str:
    """GLSL of an element (its stored bits `load`) as the product's VALUE: FP32, or an int."""
    if tensor.data_type in FLOAT_TYPES:
        return render.STORED_FORMS[tensor.data_type].to_float.format(load)
    info = data_type_info(tensor.data_type)
    return f"bitfieldExtract(int({load}), 0, {info.bits})" if info.signed_integer else f"int({load})"


def _body(operands: MatmulOperands, epilogue: MatmulEpilogue) -> tuple[str, ...]:
    """gemm_body.glsl: the operands' values, their zero points, the sum's bits, and the
    epilogue's stored bits."""
    inputs = (operands.sum_type, *(t.data_type for t in epilogue.inputs))
    value, start, bits = ("int", "0", "uint(s)") if operands.integer else \
        ("float", "uintBitsToFloat(0x80000000u)", "dml_isnan(s) ? 0x7FC00000u : floatBitsToUint(s)")
    zeros = []
    for name, zero, dim, index in (("a", operands.a_zero, -2, "m"), ("b", operands.b_zero, -1, "n")):
        if zero is None:
            zeros.append(f"{value} {name}_zero(uint {index}) {{ return {value}(0); }}")
            continue
        binding = f"{operands.bound.index(name + '_zero')}u"
        stride = zero.element_strides[dim] if zero.sizes[dim] > 1 else 0
        zeros.append(f"{value} {name}_zero(uint {index}) {{ return "
                     f"{_value(zero, f'input_load({binding}, params.base[{binding}] + {index} * {stride}u)')}; }}")
    return (f"#define VALUE {value}", f"#define SUM_START {start}",
            f"uint sum_bits(VALUE s) {{ return {bits}; }}",
            f"VALUE a_value(uint e) {{ return {_value(operands.a, 'input_load(A_INPUT, e)')}; }}",
            f"VALUE b_value(uint e) {{ return {_value(operands.b, 'input_load(B_INPUT, e)')}; }}",
            f"VALUE a_bits_value(uint bits) {{ return {_value(operands.a, 'bits')}; }}",
            f"VALUE b_bits_value(uint bits) {{ return {_value(operands.b, 'bits')}; }}",
            *zeros,
            f"#define EPILOGUE_INPUTS {len(inputs)}",
            "uint gemm_epilogue(uint bits[EPILOGUE_INPUTS]) {",
            *(f"    {line}" for line in render.render(epilogue.result, inputs, operands.output.data_type)),
            "    return result;",
            "}")


def plan_matmul(operands: MatmulOperands, epilogue: MatmulEpilogue, adapter: AdapterInfo) -> KernelPlan:
    """Plan output = epilogue(S, ...) element by element, S the sum of A's row times B's
    column in increasing k (binding order: A, B, the epilogue's inputs, the output)."""
    a, b, output = operands.a, operands.b, operands.output
    scalars = epilogue.scalars
    m, n, k = operands.dimensions
    if k > MAX_K:
        raise UnsupportedError(
            f"K = {k}: dmlpy's matrix product sums at most {MAX_K:,} products an output (lavapipe ends an "
            "invocation's loops after 65,535 iterations); split K and add the partial products", "sizes")
    batch_sizes = output.sizes[:-2]
    batch_count = math.prod(batch_sizes)
    product_inputs = [getattr(operands, name) for name in operands.bound]
    tensors = [*product_inputs, *epilogue.inputs, output]
    exactness = "DENORMALS_EXACT" in float_controls_defines(adapter) and a.data_type not in NEVER_SUBNORMAL \
        and not operands.integer
    shape = tile_shape(adapter, operands)
    a_vectors, b_vectors = _vector_dims(operands, shape)
    # Lanes that share their rows run on a device that loads a vector component by component:
    # two 64-bit components a vector, where it has them, instead of four 32-bit ones.
    loads_64 = bool(shape.shared_lanes and moves_vectors_in_64bit_words(adapter) and (a_vectors or b_vectors))
    interface = KernelInterface(tuple(t.data_type for t in tensors[:-1]), (output.data_type,), scratch=exactness,
                                scalar_count=len(scalars), vector_views=bool(a_vectors or b_vectors),
                                vector_words_64=loads_64)
    interface.check(adapter)
    block_m, block_n = shape.block
    workgroup_size = shape.lanes_n * shape.lanes_m
    a_rows, a_columns = _matrix_strides(a, operands.transpose_a)
    b_rows, b_columns = _matrix_strides(b, operands.transpose_b)
    defines: dict[str, object] = {
        f"DTYPE_{output.data_type.name}": "",
        "ELEMENT_BITS": data_type_info(output.data_type).bits,
        "WORKGROUP_SIZE": workgroup_size,
        **float_controls_defines(adapter),
        **render.transcendental_defines(epilogue.result),
        "M": f"{m}u", "N": f"{n}u", "K": f"{k}u", "K_STEP": f"{K_STEP}u",
        "A_INPUT": operands.bound.index('a'), "B_INPUT": operands.bound.index('b'),
        "EPILOGUE_FIRST": len(product_inputs), **({"INTEGER_PRODUCT": ""} if operands.integer else {}),
        **({"VECTOR_VIEWS": ""} if interface.vector_views else {}),
        **interface.defines,
        "A_STRIDES": uint_list((a_rows, a_columns)), "B_STRIDES": uint_list((b_rows, b_columns)),
        "A_VECTOR_ELEMENTS": f"{_vector_elements(a, shape) or 4}u",
        "B_VECTOR_ELEMENTS": f"{_vector_elements(b, shape) or 4}u",
        "EPILOGUE_TENSORS": len(epilogue.inputs), "OUTPUT_STRIDES": uint_list(output.element_strides[-2:]),
        "BATCH_COUNT": f"{batch_count}u", "BATCH_RANK": len(batch_sizes),
        **({"EXACTNESS_KEYS": ""} if exactness else {}),
    }
    if epilogue.inputs:
        defines["EPILOGUE_STRIDES"] = uint_list(s for t in epilogue.inputs for s in t.element_strides[-2:])
    if batch_sizes:
        defines["BATCH_SIZES"] = uint_list(batch_sizes)
        defines["BATCH_STRIDES"] = uint_list(  # a size of 1 (a zero point's) is the same element for every batch
            t.element_strides[d] if t.sizes[d] > 1 else 0 for d in range(len(batch_sizes)) for t in tensors)
    generated = (("kernel_interface.glsl", interface.header()), ("gemm_body.glsl", _body(operands, epilogue)))
    blocks = batch_count * math.ceil(m / block_m) * math.ceil(n / block_n)
    main = KernelStage("main", "gemm.comp", {
        **defines, "STAGE_PRODUCT": "", "LANES_N": f"{shape.lanes_n}u", "TILE_M": shape.tile_m,
        "TILE_N": shape.tile_n, "BLOCK_M": f"{block_m}u", "BLOCK_N": f"{block_n}u",
        "COLUMN_RUN": f"{shape.tile_n if b_vectors == 'N' else 1}u",
        **({"SHARED_ROWS": "", "SHARED_LANES": shape.shared_lanes} if shape.shared_lanes else {}),
        **({f"A_VECTORS_ALONG_{a_vectors}": ""} if a_vectors else {}),
        **({f"B_VECTORS_ALONG_{b_vectors}": ""} if b_vectors else {})},
        workgroup_size, invocations=blocks * workgroup_size, generated=generated)
    lanes = (f"one subgroup of {shape.shared_lanes} lanes sharing {shape.tile_m} rows, each with {shape.tile_n} "
             f"columns" if shape.shared_lanes else f"{shape.lanes_m} x {shape.lanes_n} invocations, each "
             f"{shape.tile_m} x {shape.tile_n} outputs")
    reason = (f"{batch_count} product(s) of {m} x {k} by {k} x {n}: workgroups of {lanes} ({block_m} x {block_n} a "
              "workgroup); A read "
              f"{f'in vectors along {a_vectors}' if a_vectors else 'by element'}, B "
              f"{f'in vectors along {b_vectors}' if b_vectors else 'by element'}"
              f"{' (each vector two 64-bit loads)' if loads_64 else ''}")
    if not exactness:
        return KernelPlan("matmul", (main,), output.element_count, scalar_bits=fp32_bits(scalars),
                          interface=interface, reason=reason + "; the hardware's arithmetic keeps subnormals here")
    key_size = workgroup_size_for(adapter)
    # (The keys of a vector's words are FP32 magnitudes: a 16-bit type's vectors read by element.)
    vectors = {f"A_VECTORS_ALONG_{a_vectors}": ""} if a_vectors and _vector_elements(a, shape) == 4 else {}
    vectors.update({f"B_VECTORS_ALONG_{b_vectors}": ""} if b_vectors and _vector_elements(b, shape) == 4 else {})
    items = m // (4 if "A_VECTORS_ALONG_M" in vectors else 1) + n // (4 if "B_VECTORS_ALONG_N" in vectors else 1)
    keys = KernelStage("keys", "gemm.comp", {**defines, **vectors, "STAGE_KEYS": "", "WORKGROUP_SIZE": key_size},
                       key_size, invocations=batch_count * items, generated=generated)
    return KernelPlan("matmul", (keys, main), output.element_count, temporary_size=4 * batch_count * (m + n),
                      scalar_bits=fp32_bits(scalars), interface=interface,
                      reason=reason + "; a first stage finds each row's and column's smallest magnitude, so that "
                                      "only outputs whose products could be subnormal take the exact arithmetic")
