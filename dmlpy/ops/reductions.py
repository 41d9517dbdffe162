"""The reductions family: REDUCE with each of its functions, ARGMIN, ARGMAX, the running sums
and products (CUMULATIVE_SUMMATION, CUMULATIVE_PRODUCT), and TOP_K and TOP_K1.

Each DML_REDUCE_FUNCTION is one row of REDUCTIONS: its data types and dimension counts per
feature level (DirectML's table on REDUCE's page) and its math as an expression over the row
(dmlpy/ir/expr.py), an FP32 form and, where DirectML takes integers, an exact integer form.
ARGMIN and ARGMAX (FEATURE_LEVEL_3_0) are REDUCE's ARGMIN and ARGMAX with an AxisDirection
and more output types. Every one becomes the reduction kernel family (shaders/reduce.comp),
which gives the same bits on every device, workgroup size and chunking. The cumulative
operators are the scan kernel family (shaders/scan.comp): each row walked in order; TOP_K
is the selection kernel family (shaders/select.comp).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..base.errors import InvalidArgumentError, UnsupportedError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..ir import expr as e
from ..kernels.reduction import ReductionMath, plan_reduction_math
from ..kernels.scan import plan_scan
from ..kernels.selection import plan_selection
from .enums import AxisDirection, ReduceFunction
from .family import Family, FrontEndShape, KernelKind
from .fields import enum_field, uint_field
from .schema import OperatorDesc, Support, TensorRole, axes_field, flag_field, operator, tensor_field

FAMILY = Family(
    "reductions", KernelKind.REDUCTION, FrontEndShape.OWN, "dmlpy/ops/reductions.py",
    "DirectML's REDUCE (every DML_REDUCE_FUNCTION), ARGMIN and ARGMAX: one value per row of the reduced axes, in "
    "a fixed order (the same bits on every device); the running sums and products along an axis; NumPy's sum, "
    "mean, max, min, prod, argmax, argmin, cumsum and cumprod on top (frontends/reductions.py)")

FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)  # BFLOAT16 wherever DirectML takes FLOAT16: a dmlpy extension
INT32S = (T.INT32, T.UINT32)
INT64S = (T.INT64, T.UINT64)
SMALL_INTEGERS = (T.INT16, T.INT8, T.UINT16, T.UINT8)
FOUR = range(4, 5)  # before FEATURE_LEVEL_3_0, REDUCE took 4-D tensors only
INDEX_TYPES = (T.INT32, T.UINT32, T.INT64, T.UINT64)  # ARGMIN/ARGMAX's outputs from FEATURE_LEVEL_3_0


def _log_sum_exp(x: e.Expr) -> e.Expr:
    """m + log(sum(e^(x - m))), m the row's maximum: no overflow, and e^(x - m) carries the
    rounding of x - m. An infinite m is the result (every term -inf, or one +inf)."""
    largest = e.reduce_max(x)
    return e.where(e.isinf(largest), largest, largest + e.log(e.reduce_sum(e.exp_diff(x, largest))))


@dataclass(frozen=True)
class Reduction:
    """One DML_REDUCE_FUNCTION: its table and its math. `floats` and `integers` take the
    input (stored bits, or an exact integer) and the row's element count."""

    function: ReduceFunction
    formula: str
    support: tuple[Support, ...]  # the input's data types and dimension counts per level
    floats: Callable[[e.Expr, int], e.Expr]
    integers: Callable[[e.Expr, int], e.Expr] | None = None
    indices: bool = False  # the output is an index (ARGMIN, ARGMAX)
    notes: str = ""

    def data_types(self) -> tuple[T, ...]:
        return tuple(dict.fromkeys(t for row in self.support for t in row.data_types))

    def required_level(self, input_type: T, dimension_count: int) -> FL | None:
        levels = [row.level for row in self.support
                  if input_type in row.data_types and dimension_count in row.dimension_counts]
        return min(levels) if levels else None


def _levels(first: tuple[T, ...], integers_at_2_1: tuple[T, ...] = (), integers_at_3_0: tuple[T, ...] = (),
            later: tuple[tuple[FL, tuple[T, ...]], ...] = ()):
    """DirectML's rows: floats in 4-D from 1_0, some integers in 4-D from 2_1, 1 to 8
    dimensions (and maybe more integers) from 3_0, and `later` levels with the types they add
    (in 1 to 8 dimensions)."""
    rows = [Support(FL.LEVEL_1_0, first, FOUR)]
    if integers_at_2_1:
        rows.append(Support(FL.LEVEL_2_1, first + integers_at_2_1, FOUR))
    types = first + integers_at_2_1 + integers_at_3_0
    rows.append(Support(FL.LEVEL_3_0, types, range(1, 9)))
    for level, added in later:
        types += added
        rows.append(Support(level, types, range(1, 9)))
    return tuple(rows)


ARG_SUPPORT = _levels(FLOATS, INT32S + SMALL_INTEGERS, later=((FL.LEVEL_4_1, INT64S),))
AT_5_0 = (FL.LEVEL_5_0, INT64S)  # FEATURE_LEVEL_5_0's 64-bit integers for SUM, MULTIPLY, MIN, MAX, L1, SUM_SQUARE

REDUCTIONS: dict[ReduceFunction, Reduction] = {row.function: row for row in (
    Reduction(ReduceFunction.ARGMAX, "the index of the row's largest element", ARG_SUPPORT,
              lambda x, n: e.index_of_extreme(x, True, False),
              lambda x, n: e.index_of_extreme(x, True, False), indices=True,
              notes="The first largest element, its index over the reduced axes in row-major order; -0 equals "
                    "+0; a NaN counts as the largest (the first NaN, as NumPy's argmax)."),
    Reduction(ReduceFunction.ARGMIN, "the index of the row's smallest element", ARG_SUPPORT,
              lambda x, n: e.index_of_extreme(x, False, False),
              lambda x, n: e.index_of_extreme(x, False, False), indices=True,
              notes="The first smallest element; -0 equals +0; a NaN counts as the smallest (NumPy's argmin)."),
    Reduction(ReduceFunction.AVERAGE, "(x1 + ... + xn) / n", _levels(FLOATS),
              lambda x, n: e.reduce_sum(x) / e.const(float(np.float32(n))),
              notes="The FP32 sum divided by n, correctly rounded (n as FP32: exact below 2^24)."),
    Reduction(ReduceFunction.L1, "|x1| + ... + |xn|", _levels(FLOATS, later=((FL.LEVEL_5_0, INT32S + INT64S),)),
              lambda x, n: e.reduce_sum(e.abs_(x)), lambda x, n: e.reduce_sum(e.wrapping_abs(x)),
              notes="Integers: each |x| and the sum wrap to the type's width (|INT32_MIN| is INT32_MIN's bits)."),
    Reduction(ReduceFunction.L2, "sqrt(x1^2 + ... + xn^2)", _levels(FLOATS),
              lambda x, n: e.sqrt(e.reduce_sum(x * x)),
              notes="Each square rounded to FP32, summed, and the square root correctly rounded."),
    Reduction(ReduceFunction.LOG_SUM, "log(x1 + ... + xn)", _levels(FLOATS), lambda x, n: e.log(e.reduce_sum(x)),
              notes="dmlpy's log of the FP32 sum."),
    Reduction(ReduceFunction.LOG_SUM_EXP, "log(e^x1 + ... + e^xn)", _levels(FLOATS), lambda x, n: _log_sum_exp(x),
              notes="Stable: m + log(sum(e^(x - m))) with m the row's maximum, so no term overflows; a row of -inf "
                    "gives -inf, a +inf gives +inf, a NaN gives NaN."),
    Reduction(ReduceFunction.MAX, "max(x1, ..., xn)", _levels(FLOATS, INT32S, SMALL_INTEGERS, later=(AT_5_0,)),
              lambda x, n: e.reduce_max(x), lambda x, n: e.reduce_max(x),
              notes="Exact; NaN if any element is NaN; +0 is larger than -0."),
    Reduction(ReduceFunction.MIN, "min(x1, ..., xn)", _levels(FLOATS, INT32S, SMALL_INTEGERS, later=(AT_5_0,)),
              lambda x, n: e.reduce_min(x), lambda x, n: e.reduce_min(x),
              notes="Exact; NaN if any element is NaN; -0 is smaller than +0."),
    Reduction(ReduceFunction.MULTIPLY, "x1 * ... * xn", _levels(FLOATS, INT32S, later=(AT_5_0,)),
              lambda x, n: e.reduce_product(x), lambda x, n: e.reduce_product(x),
              notes="FP32 products in the sums' pairwise tree, each rounded; integers wrap to their width."),
    Reduction(ReduceFunction.SUM, "x1 + ... + xn", _levels(FLOATS, INT32S, later=(AT_5_0,)),
              lambda x, n: e.reduce_sum(x), lambda x, n: e.reduce_sum(x),
              notes="Integers wrap to their width (two's complement), as ELEMENT_WISE_ADD does."),
    Reduction(ReduceFunction.SUM_SQUARE, "x1^2 + ... + xn^2", _levels(FLOATS, later=((FL.LEVEL_5_0, INT32S + INT64S),)),
              lambda x, n: e.reduce_sum(x * x), lambda x, n: e.reduce_sum(e.wrapping_mul(x, x)),
              notes="Each square rounded to FP32, then summed; integers: each square and the sum wrap to their width."),
)}

REDUCE_NOTES = (
    "Floats are reduced in FP32 (FLOAT16 and BFLOAT16 converted exactly) and rounded once to the output's type. "
    "Sums, and products, run in the balanced pairwise tree over the row's elements in row-major order of the "
    "reduced axes: the same bits for any layout, chunking, workgroup size or device (docs/numerics.md). "
    "Data types and dimension counts per function: " + "; ".join(
        f"{row.function.name} " + ", ".join(
            f"{'/'.join(t.name for t in r.data_types if t is not T.BFLOAT16)} in "
            f"{'4' if r.dimension_counts == FOUR else '1 to 8'} dimensions from {r.level.name}"
            for r in row.support) for row in REDUCTIONS.values())
    + ". BFLOAT16 wherever FLOAT16 (a dmlpy extension). ARGMAX and ARGMIN write UINT32 before FEATURE_LEVEL_3_0, "
    "and INT32, UINT32, INT64 or UINT64 from it (a 64-bit index is the index zero-extended). INT64 and UINT64 "
    "inputs are reduced in 64-bit integer arithmetic built from 32-bit words (any device, with or without "
    "shaderInt64): sums and products wrap modulo 2^64, as NumPy's do; extremes compare exactly. "
    + " ".join(f"{row.function.name}: {row.notes}" for row in REDUCTIONS.values() if row.notes))


def reduced_sizes(sizes: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if d in axes else size for d, size in enumerate(sizes))


def _check_output_sizes(desc) -> None:
    """OutputTensor has InputTensor's Sizes, but 1 on each reduced axis."""
    expected = reduced_sizes(desc.input_tensor.sizes, desc.axes)
    actual = desc.output_tensor.sizes
    if actual != expected:
        raise InvalidArgumentError(
            f"{type(desc).__name__}.output_tensor.sizes {actual} != {expected}: the output has the input's Sizes but 1 "
            f"on each reduced axis (axes {desc.axes})", "sizes")


def _output_sizes(inputs: dict[str, BufferTensorDesc], fields: dict) -> dict[str, tuple[int, ...]]:
    return {"output_tensor": reduced_sizes(inputs["input_tensor"].sizes, tuple(fields["axes"]))}


def _check_reduce(desc) -> None:
    """The function's own table: its input data types, and the output's type (the input's,
    or an index type for ARGMIN and ARGMAX)."""
    _check_output_sizes(desc)
    row = REDUCTIONS[desc.function]
    owner, input_type, output_type = type(desc).__name__, desc.input_tensor.data_type, desc.output_tensor.data_type
    if input_type not in row.data_types():
        raise InvalidArgumentError(
            f"{owner}.input_tensor.data_type {input_type.name} is not supported by REDUCE's {row.function.name}, "
            f"which takes {', '.join(t.name for t in row.data_types())}", "data_type")
    if row.indices and output_type not in (T.UINT32, *INDEX_TYPES):
        raise InvalidArgumentError(
            f"{owner}.output_tensor.data_type {output_type.name}: REDUCE's {row.function.name} writes indices, so "
            f"OutputTensor must be {', '.join(t.name for t in INDEX_TYPES)}", "data_type")
    if not row.indices and output_type != input_type:
        raise InvalidArgumentError(
            f"{owner}.output_tensor.data_type {output_type.name} != input_tensor.data_type {input_type.name}: "
            f"InputTensor and OutputTensor must have the same DataType but for ARGMAX and ARGMIN", "data_type")


def _reduce_level_check(desc, device_level: FL) -> None:
    """The level the function's own table gives the input's data type and dimension count
    (and FEATURE_LEVEL_3_0 for an ARGMAX or ARGMIN output other than UINT32)."""
    row = REDUCTIONS[desc.function]
    tensor = desc.input_tensor
    level = row.required_level(tensor.data_type, tensor.dimension_count)
    if row.indices and desc.output_tensor.data_type != T.UINT32:
        level = max(level, FL.LEVEL_3_0)
    if level > device_level:
        raise UnsupportedError(
            f"REDUCE's {row.function.name} on {tensor.data_type.name} in {tensor.dimension_count} dimensions "
            f"writing {desc.output_tensor.data_type.name} needs {level} but the device is capped at "
            f"{device_level}", "data_type")


def _reduce_output_type(inputs: dict[str, BufferTensorDesc], fields: dict) -> T:
    function = fields["function"]
    function = ReduceFunction[function.upper()] if isinstance(function, str) else function
    return T.UINT32 if REDUCTIONS[function].indices else inputs["input_tensor"].data_type


def _row_math(desc, value: e.Expr) -> ReductionMath:
    """One value per row, stored at the row's place in the output (size 1 on reduced axes)."""
    return ReductionMath(((value, True),), tuple(d in desc.axes for d in range(desc.input_tensor.dimension_count)))


def _input_value(desc, row_math: Callable[[e.Expr], e.Expr], integer_math: Callable[[e.Expr], e.Expr] | None):
    x = e.tensor(0)
    if desc.input_tensor.data_type in FLOATS:
        return row_math(x)
    return integer_math(e.integer(x))


def _reduce_math(desc) -> ReductionMath:
    row = REDUCTIONS[desc.function]
    count = math.prod(desc.input_tensor.sizes[d] for d in desc.axes)
    return _row_math(desc, _input_value(desc, lambda x: row.floats(x, count),
                                        row.integers and (lambda x: row.integers(x, count))))


def _plan(reduction_math: Callable):
    def plan(desc, adapter):
        return plan_reduction_math(reduction_math(desc), [desc.input_tensor], [desc.output_tensor], adapter)
    return plan


@operator(
    dml_name="REDUCE", family=FAMILY, name="reduce",
    formula="OutputTensor = Function over InputTensor's elements along Axes (size 1 there in OutputTensor)",
    support=(Support(FL.LEVEL_1_0, (*FLOATS, T.UINT32), FOUR),
             Support(FL.LEVEL_2_1, (*FLOATS, *INT32S, *SMALL_INTEGERS), FOUR),
             Support(FL.LEVEL_3_0, (*FLOATS, *INT32S, *SMALL_INTEGERS, T.INT64, T.UINT64))),
    same={"dimension_count": None},
    shader="reduce.comp", kernel=_plan(_reduce_math), reduction=_reduce_math, check=_check_reduce,
    level_check=_reduce_level_check,
    in_place=False, output_sizes=_output_sizes, output_data_type=_reduce_output_type, notes=REDUCE_NOTES,
)
class ReduceOperatorDesc(OperatorDesc):
    """DML_REDUCE_OPERATOR_DESC: `function` (a ReduceFunction or its name) over `axes` of the
    input; the output keeps the input's dimension count, with size 1 on the reduced axes."""

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor", "x")
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor")
    function: ReduceFunction = enum_field(ReduceFunction, "Function")
    axes: tuple[int, ...] = axes_field()


ARG_NOTES = ("The index is over the reduced axes in row-major order. Ties: the first index with "
             "AxisDirection.INCREASING, the last with DECREASING; -0 equals +0; a NaN counts as the extreme (the "
             "first or last NaN). Integers compare exactly, INT64 and UINT64 inputs (FEATURE_LEVEL_4_1) too. INT64 "
             "and UINT64 outputs hold the index zero-extended.")


def _arg_math(function: ReduceFunction):
    def reduction_math(desc) -> ReductionMath:
        largest, last = function is ReduceFunction.ARGMAX, desc.axis_direction is AxisDirection.DECREASING

        def index(x: e.Expr) -> e.Expr:
            return e.index_of_extreme(x, largest, last)
        return _row_math(desc, _input_value(desc, index, index))
    return reduction_math


def _arg_schema(dml_name: str, function: ReduceFunction, extreme: str) -> dict:
    return dict(
        dml_name=dml_name, family=FAMILY, name=dml_name.lower(),
        formula=f"OutputTensor = the index along Axes of InputTensor's {extreme} element",
        support=(Support(FL.LEVEL_3_0, (*FLOATS, *INT32S, *SMALL_INTEGERS)),
                 Support(FL.LEVEL_4_1, (*FLOATS, *INT32S, *SMALL_INTEGERS, *INT64S))),
        same={"dimension_count": None}, shader="reduce.comp", kernel=_plan(_arg_math(function)),
        reduction=_arg_math(function), check=_check_output_sizes,
        in_place=False, output_sizes=_output_sizes, notes=ARG_NOTES)


@operator(**_arg_schema("ARGMIN", ReduceFunction.ARGMIN, "smallest"))
class ArgMinOperatorDesc(OperatorDesc):
    """DML_ARGMIN_OPERATOR_DESC: the index of the smallest element along `axes`."""

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor", "x")
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor", data_types=INDEX_TYPES)
    axes: tuple[int, ...] = axes_field()
    axis_direction: AxisDirection = enum_field(AxisDirection, "AxisDirection", "INCREASING")


@operator(**_arg_schema("ARGMAX", ReduceFunction.ARGMAX, "largest"))
class ArgMaxOperatorDesc(OperatorDesc):
    """DML_ARGMAX_OPERATOR_DESC: the index of the largest element along `axes`."""

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor", "x")
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor", data_types=INDEX_TYPES)
    axes: tuple[int, ...] = axes_field()
    axis_direction: AxisDirection = enum_field(AxisDirection, "AxisDirection", "INCREASING")


def _check_cumulative(desc) -> None:
    """Axis lies in [0, InputTensor.DimensionCount - 1]."""
    count = desc.input_tensor.dimension_count
    if desc.axis >= count:
        raise InvalidArgumentError(
            f"{type(desc).__name__}.axis {desc.axis}: Axis must be less than InputTensor.DimensionCount ({count})",
            "axis")


def _plan_cumulative(combine: str, exclusive: str):
    def plan(desc, adapter):
        return plan_scan(desc.input_tensor, desc.output_tensor, desc.axis, combine,
                         desc.axis_direction is AxisDirection.DECREASING, getattr(desc, exclusive), adapter)
    return plan


# DirectML's page lists FLOAT32, FLOAT16, INT32 and UINT32 (and from FEATURE_LEVEL_5_0 INT64 and
# UINT64); its earlier version listed UINT16 where INT32 is now, and dmlpy keeps taking it as an
# extension (refused under strict_directml).
CUMULATIVE_TYPES = (T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32, T.UINT16, T.BFLOAT16)
CUMULATIVE_NOTES = (
    "Each row is walked in order (backwards for DECREASING) and each output is the running value, FP32 for "
    "floats (FLOAT16 and BFLOAT16 converted exactly, each output rounded once) and integers wrapping at their "
    "width (32 bits, or 64 for FEATURE_LEVEL_5_0's INT64 and UINT64): NumPy's cumsum and cumprod, bit for bit, "
    "on every device. An exclusive scan writes +0 (or 1) first. BFLOAT16 is a dmlpy extension, and so is "
    "UINT16 (in the earlier version of DirectML's table, not the current one; strict_directml devices refuse "
    "it). The output may be bound over the input. A row is walked 4,096 elements a dispatch, the running value "
    "carried between them (lavapipe ends an invocation's loops after 65,535 iterations).")


@operator(
    dml_name="CUMULATIVE_SUMMATION", family=FAMILY, name="cumulative_summation",
    formula="OutputTensor[i] = InputTensor[0] + ... + InputTensor[i] along Axis (without [i] when HasExclusiveSum)",
    support=(Support(FL.LEVEL_2_1, CUMULATIVE_TYPES, FOUR), Support(FL.LEVEL_4_0, CUMULATIVE_TYPES),
             Support(FL.LEVEL_5_0, (*CUMULATIVE_TYPES, *INT64S))),
    same={"data_type": None, "sizes": None}, extension_types=(T.UINT16,), shader="scan.comp",
    kernel=_plan_cumulative("sum", "has_exclusive_sum"),
    check=_check_cumulative, notes=CUMULATIVE_NOTES,
)
class CumulativeSummationOperatorDesc(OperatorDesc):
    """DML_CUMULATIVE_SUMMATION_OPERATOR_DESC: the running sum along `axis`."""

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor", "x")
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor")
    axis: int = uint_field("Axis", "a dimension of InputTensor")
    axis_direction: AxisDirection = enum_field(AxisDirection, "AxisDirection", "INCREASING")
    has_exclusive_sum: bool = flag_field("HasExclusiveSum: each output leaves out its own element")


@operator(
    dml_name="CUMULATIVE_PRODUCT", family=FAMILY, name="cumulative_product",
    formula="OutputTensor[i] = InputTensor[0] * ... * InputTensor[i] along Axis (without [i] when "
            "HasExclusiveProduct)",
    support=(Support(FL.LEVEL_3_1, CUMULATIVE_TYPES, FOUR), Support(FL.LEVEL_4_0, CUMULATIVE_TYPES),
             Support(FL.LEVEL_5_0, (*CUMULATIVE_TYPES, *INT64S))),
    same={"data_type": None, "sizes": None}, extension_types=(T.UINT16,), shader="scan.comp",
    kernel=_plan_cumulative("product", "has_exclusive_product"), check=_check_cumulative, notes=CUMULATIVE_NOTES,
)
class CumulativeProductOperatorDesc(OperatorDesc):
    """DML_CUMULATIVE_PRODUCT_OPERATOR_DESC: the running product along `axis`."""

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor", "x")
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor")
    axis: int = uint_field("Axis", "a dimension of InputTensor")
    axis_direction: AxisDirection = enum_field(AxisDirection, "AxisDirection", "INCREASING")
    has_exclusive_product: bool = flag_field("HasExclusiveProduct: each output leaves out its own element")


ALL_EIGHT = (*FLOATS, *INT32S, *SMALL_INTEGERS)
TOP_K_NOTES = (
    "Values are ordered as PyTorch's topk and NumPy's sort order them: a NaN is above every number (first among "
    "the largest, last among the smallest), -0 equals +0, and equal values come in increasing index order "
    "whatever the direction (DirectML's rule). Values are copied as stored (bit for bit); indices count from the "
    "row's start. 1 <= K <= the row's length. The kernel selects one element after another (O(length) each), "
    "one invocation per row, as many a dispatch as 32,768 comparisons allow (lavapipe ends an invocation's loops "
    "after 65,535 iterations); rows longer than 32,768 elements are refused at compile time for now. TOP_K, "
    "introduced in FEATURE_LEVEL_2_0, takes FLOAT32 and FLOAT16 there and TOP_K1's types from 2_1 on. From "
    "FEATURE_LEVEL_5_0 OutputIndexTensor may be UINT64 (the index zero-extended), and the values INT64 and "
    "UINT64, ordered exactly by their signedness.")


def _top_k_sizes(inputs: dict[str, BufferTensorDesc], fields: dict) -> dict[str, tuple[int, ...]]:
    sizes = list(inputs["input_tensor"].sizes)
    axis = int(fields["axis"])
    if 0 <= axis < len(sizes):
        sizes[axis] = int(fields["k"])
    return {"output_value_tensor": tuple(sizes), "output_index_tensor": tuple(sizes)}


def _check_top_k(desc) -> None:
    """Axis lies in [0, InputTensor.DimensionCount - 1]; 1 <= K <= InputTensor.Sizes[Axis];
    both outputs have the input's Sizes with K on Axis."""
    owner, sizes = type(desc).__name__, desc.input_tensor.sizes
    if desc.axis >= len(sizes):
        raise InvalidArgumentError(
            f"{owner}.axis {desc.axis}: Axis must be less than InputTensor.DimensionCount ({len(sizes)})", "axis")
    if desc.k > sizes[desc.axis]:
        raise InvalidArgumentError(
            f"{owner}.k {desc.k} is more than InputTensor.Sizes[{desc.axis}] ({sizes[desc.axis]}): K elements must "
            "exist along Axis", "k")
    expected = _top_k_sizes({"input_tensor": desc.input_tensor}, {"axis": desc.axis, "k": desc.k})
    for name, want in expected.items():
        actual = getattr(desc, name).sizes
        if actual != want:
            raise InvalidArgumentError(
                f"{owner}.{name}.sizes {actual} != {want}: the outputs have InputTensor's Sizes with K on Axis",
                "sizes")


def _top_k_level_check(desc, device_level: FL) -> None:
    """UINT64 indices are FEATURE_LEVEL_5_0's (the index field's own type set is not in the
    Support rows)."""
    if desc.output_index_tensor.data_type is T.UINT64 and device_level < FL.LEVEL_5_0:
        raise UnsupportedError(
            f"{type(desc).__name__}.output_index_tensor.data_type UINT64 needs {FL.LEVEL_5_0} but the device is "
            f"capped at {device_level}", "data_type")


def _plan_top_k(desc, adapter):
    # TOP_K has no AxisDirection: it is TOP_K1's DECREASING
    smallest = getattr(desc, "axis_direction", AxisDirection.DECREASING) is AxisDirection.INCREASING
    return plan_selection(desc.input_tensor, desc.output_value_tensor, desc.output_index_tensor, desc.axis,
                          smallest, adapter)


def _top_k_schema(dml_name: str, formula: str, support: tuple[Support, ...]) -> dict:
    return dict(dml_name=dml_name, family=FAMILY, name=dml_name.lower(), formula=formula, support=support,
                same={"dimension_count": None, "data_type": ("input_tensor", "output_value_tensor")},
                shader="select.comp", kernel=_plan_top_k, check=_check_top_k, level_check=_top_k_level_check,
                in_place=False,
                output_sizes=_top_k_sizes, notes=TOP_K_NOTES)


@operator(**_top_k_schema(
    "TOP_K", "the K largest elements along Axis, largest first, and their indices",
    (Support(FL.LEVEL_2_0, FLOATS, FOUR), Support(FL.LEVEL_2_1, ALL_EIGHT, FOUR),
     Support(FL.LEVEL_3_1, ALL_EIGHT), Support(FL.LEVEL_5_0, (*ALL_EIGHT, *INT64S)))))
class TopKOperatorDesc(OperatorDesc):
    """DML_TOP_K_OPERATOR_DESC: the `k` largest elements along `axis` and their indices."""

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor", "x")
    output_value_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputValueTensor")
    output_index_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputIndexTensor",
                                                         data_types=(T.UINT32, T.UINT64))
    axis: int = uint_field("Axis", "a dimension of InputTensor")
    k: int = uint_field("K", "how many elements to select", minimum=1)


@operator(**_top_k_schema(
    "TOP_K1", "the K largest (DECREASING) or smallest (INCREASING) elements along Axis in that order, and "
              "their indices",
    (Support(FL.LEVEL_2_1, ALL_EIGHT, FOUR), Support(FL.LEVEL_3_1, ALL_EIGHT),
     Support(FL.LEVEL_5_0, (*ALL_EIGHT, *INT64S)))))
class TopK1OperatorDesc(OperatorDesc):
    """DML_TOP_K1_OPERATOR_DESC: the `k` largest or smallest elements along `axis`, by
    `axis_direction`, and their indices."""

    input_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor", "x")
    output_value_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputValueTensor")
    output_index_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputIndexTensor",
                                                         data_types=(T.UINT32, T.UINT64))
    axis: int = uint_field("Axis", "a dimension of InputTensor")
    k: int = uint_field("K", "how many elements to select", minimum=1)
    axis_direction: AxisDirection = enum_field(AxisDirection, "AxisDirection", "DECREASING")


DESCS = (ReduceOperatorDesc, ArgMinOperatorDesc, ArgMaxOperatorDesc, CumulativeSummationOperatorDesc,
         CumulativeProductOperatorDesc, TopKOperatorDesc, TopK1OperatorDesc)
