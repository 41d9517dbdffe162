"""A small expression language for element-wise math (rendered to GLSL by render.py's one table).

An operator's forward and gradient are written once as expressions over its inputs and
scalars (`where(x >= 0, x, alpha * x)`); the element-wise kernel family renders them. An
expression may also reduce over a row (`reduce_sum`, `reduce_max`, `index_of_extreme`...: the
softmax family, PReLU's slope gradient, REDUCE); the reduction kernel family renders those, one
stage per reduction (see kernels.reduction.plan_reduction). Every
value is either *stored* (the raw bits of an element in the data type of the tensor it came
from, passed through untouched: a select between inputs never rounds, so NaN payloads, -0
and subnormals survive on every device) or an FP32 number. Each tensor has its own data
type, given when an expression is rendered: arithmetic converts input k's stored values to
FP32 exactly by input k's type (shaders/numeric.glsl), every FP32 operation is `precise`
(no driver may fuse a multiply and an add into an FMA), and a number is rounded once to the
output's data type, to nearest even, in integer arithmetic; a condition stores as 0 or 1.

For integer data types an input becomes an *integer* value instead (`integer(tensor(i))`):
the same operators then build exact integer math, each result saturated to the data type's
range. An integer meets an FP32 number (a scalar) only in comparisons and in adding or
subtracting it, both exact (the sum rounded toward zero); anything else, and any FP32
function of an integer, is a TypeError when the row is declared.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

STORED, FLOAT, BOOL, INTEGER = "stored", "float", "bool", "integer"


@dataclass(frozen=True, eq=False)
class Expr:
    """A node: `op` names a primitive of RENDER; `args` are its operand nodes."""

    op: str
    args: tuple[Expr, ...] = ()
    value: object = None  # the input index, the scalar's name, or the constant
    kind: str = FLOAT
    serial: int = field(default_factory=itertools.count().__next__, repr=False)

    def __add__(self, other):
        return _arith("add", self, other)

    def __radd__(self, other):
        return _arith("add", other, self)

    def __sub__(self, other):
        return _arith("sub", self, other)

    def __rsub__(self, other):
        return _arith("sub", other, self)

    def __mul__(self, other):
        return _arith("mul", self, other)

    def __rmul__(self, other):
        return _arith("mul", other, self)

    def __truediv__(self, other):
        return _arith("div", self, other)

    def __rtruediv__(self, other):
        return _arith("div", other, self)

    def __neg__(self):
        return Expr("neg", (as_float(self),))  # a sign flip, so exact for an integer's FP32 operand too

    def __gt__(self, other):
        return _compare("gt", self, other)

    def __ge__(self, other):
        return _compare("ge", self, other)

    def __lt__(self, other):
        return _compare("lt", self, other)

    def __le__(self, other):
        return _compare("le", self, other)

    def equals(self, other) -> Expr:
        """IEEE equality (NaN equals nothing, -0 equals +0), decided on bits."""
        return _compare("eq", self, other)

    def __and__(self, other):
        return Expr("and", (self, other), kind=BOOL)

    def __or__(self, other):
        return Expr("or", (self, other), kind=BOOL)

    def __invert__(self):
        return Expr("not", (self,), kind=BOOL)

    def __bool__(self):
        raise TypeError("an Expr has no truth value: use where(), & and | instead of if/and/or")


def tensor(index: int) -> Expr:
    """Input `index`, as stored bits."""
    return Expr("input", value=index, kind=STORED)


def scalar(index: int) -> Expr:
    """The desc's FP32 scalar `index` (pushed at run time, never folded by a driver)."""
    return Expr("scalar", value=index)


def const(value: float) -> Expr:
    """An FP32 constant; the value must be exactly an FP32 number."""
    if float(np.float32(value)) != value:
        raise ValueError(f"constant {value!r} is not an FP32 number: write np.float32(...) explicitly")
    return Expr("const", value=float(value))


ZERO_BITS = Expr("zero", kind=STORED)  # +0 in every data type, as stored bits


def integer(x: Expr) -> Expr:
    """An input of an integer data type, as an exact integer."""
    if x.kind != STORED:
        raise TypeError("only stored bits become an integer")
    return Expr("to_wide", (x,), kind=INTEGER)


INTEGER_ZERO = Expr("wide_zero", kind=INTEGER)


def _is_integer(value) -> bool:
    return isinstance(value, Expr) and value.kind == INTEGER


def as_float(value) -> Expr:
    if isinstance(value, Expr):
        if value.kind == INTEGER:
            raise TypeError("an integer never becomes FP32 (integer math is exact): this expression has no "
                            "integer form")
        return Expr("float", (value,)) if value.kind == STORED else value
    return const(float(value))


def _arith(op: str, a, b) -> Expr:
    if _is_integer(a) and _is_integer(b) and op == "mul":
        return Expr("wide_mul", (a, b), kind=INTEGER)
    if _is_integer(b) and op == "add":
        a, b = b, a
    if _is_integer(a) and not _is_integer(b) and op in ("add", "sub"):
        return Expr(f"wide_{op}_float", (a, as_float(b)), kind=INTEGER)
    return Expr(op, (as_float(a), as_float(b)))


_MIRRORED = {"gt": "lt", "lt": "gt", "ge": "le", "le": "ge"}


def _compare(op: str, a, b) -> Expr:
    if _is_integer(a) and _is_integer(b):
        return Expr(f"wide_{op}", (a, b), kind=BOOL)
    if _is_integer(b) and not _is_integer(a) and op in _MIRRORED:
        op, a, b = _MIRRORED[op], b, a
    if _is_integer(a) and not _is_integer(b) and op in _MIRRORED:
        return Expr(f"wide_{op}_float", (a, as_float(b)), kind=BOOL)
    return Expr(op, (as_float(a), as_float(b)), kind=BOOL)


def where(condition: Expr, if_true, if_false) -> Expr:
    """A select. Two stored operands (or an exact zero) give a stored result: no rounding."""
    def stored_or_none(v):
        if isinstance(v, Expr) and v.kind == STORED:
            return v
        if not isinstance(v, Expr) and v == 0 and math.copysign(1.0, v) > 0:
            return ZERO_BITS
        return None

    if _is_integer(if_true) or _is_integer(if_false):
        return Expr("select", (condition, _as_integer(if_true), _as_integer(if_false)), kind=INTEGER)
    a, b = stored_or_none(if_true), stored_or_none(if_false)
    if a is not None and b is not None:
        return Expr("select", (condition, a, b), kind=STORED)
    return Expr("select", (condition, as_float(if_true), as_float(if_false)))


def _as_integer(value) -> Expr:
    if _is_integer(value):
        return value
    if not isinstance(value, Expr) and value == 0:
        return INTEGER_ZERO
    raise TypeError(f"a select between an integer and {value!r} has no integer form")


def positive(x: Expr) -> Expr:
    """x > 0, decided on the stored bits when x is an input: exact on devices that flush
    subnormals, and false for NaN and -0."""
    if x.kind == STORED:
        return Expr("positive", (x,), kind=BOOL)
    return x > 0


def _unary(op: str):
    def build(x) -> Expr:
        return Expr(op, (as_float(x),))
    build.__name__ = op
    return build


def _binary(op: str):
    def build(a, b) -> Expr:
        return Expr(op, (as_float(a), as_float(b)))
    build.__name__ = op
    return build


abs_ = _unary("abs")
minimum = _binary("min")  # NaN if either is NaN
maximum = _binary("max")
exp = _unary("exp")
expm1 = _unary("expm1")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
softplus = _unary("softplus")  # log(1 + e^x), computed without overflow
sigmoid_slope = _unary("sigmoid_slope")  # sigmoid'(x), without cancellation
tanh_slope = _unary("tanh_slope")  # tanh'(x) = 1 - tanh^2 x, without cancellation


def isnan(x) -> Expr:
    """Whether x is NaN; on an input, decided on its stored bits (always false for integers)."""
    if isinstance(x, Expr) and x.kind == STORED:
        return Expr("isnan_stored", (x,), kind=BOOL)
    if _is_integer(x):
        return Expr("never", kind=BOOL)
    return Expr("isnan", (as_float(x),), kind=BOOL)


def rounded(x, data_type=None) -> Expr:
    """x rounded to `data_type` (default: the output's), as stored bits: what an unfused
    forward would have written (so a gradient from X matches the gradient from the forward's
    output)."""
    x = as_float(x)
    return Expr("round", (x,), value=data_type, kind=STORED)


def stored(value: Expr, data_type=None) -> Expr:
    """`value` as the stored bits an operator writing it to a tensor of `data_type` (default:
    the output's) would store: a number rounded to the data type, an integer's low bits, a
    condition as 0 or 1, stored bits as they are."""
    if value.kind == STORED:
        return value
    if value.kind == INTEGER:
        return Expr("narrow", (value,), value=data_type, kind=STORED)
    if value.kind == FLOAT:
        return rounded(value, data_type)
    if data_type is None:
        raise ValueError("a condition is stored only as a tensor of a named data type")
    return Expr("select", (value, Expr("one_bits", value=data_type, kind=STORED), ZERO_BITS), kind=STORED)


def substitute(result: Expr, inputs: list[Expr], scalar_offset: int) -> Expr:
    """`result` with input k replaced by `inputs[k]` (stored bits) and scalar k by scalar
    `scalar_offset + k`: one operator's math inside a fused chain. A node shared in `result`
    stays one node, so it is computed once."""
    made: dict[int, Expr] = {}

    def visit(node: Expr) -> Expr:
        if node.serial not in made:
            if node.op == "input":
                made[node.serial] = inputs[node.value]
            elif node.op in ("scalar", "wide_scalar", "wide_scalar_signed"):
                made[node.serial] = Expr(node.op, value=node.value + scalar_offset, kind=node.kind)
            elif not node.args:
                made[node.serial] = node
            else:
                made[node.serial] = _rebuilt(node, tuple(visit(arg) for arg in node.args))
        return made[node.serial]

    return visit(result)


def _rebuilt(node: Expr, args: tuple[Expr, ...]) -> Expr:
    """`node` over new operands. A select between two numbers rounded to one data type (a fused
    IF over two CASTs) rounds the selected number once: the same bits, half the conversions."""
    if node.op == "select" and node.kind == STORED:
        condition, if_true, if_false = args
        if (if_true.op == if_false.op == "round" and if_true.value == if_false.value
                and if_true.args[0].kind == if_false.args[0].kind == FLOAT):
            chosen = Expr("select", (condition, if_true.args[0], if_false.args[0]))
            return Expr("round", (chosen,), if_true.value, STORED)
    return Expr(node.op, args, node.value, node.kind)


log = _unary("log")
sqrt = _unary("sqrt")  # correctly rounded
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
atan2 = _binary("atan2")  # atan2(y, x): the angle of the point (x, y), C's rules for zeros and infinities
sinh = _unary("sinh")
cosh = _unary("cosh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
erf = _unary("erf")
pow_ = _binary("pow")  # C's pow, its special cases included
fmod = _binary("fmod")  # C's fmod: exact, the sign of the dividend
product_error = _binary("product_error")  # a·b - fl(a·b), exactly: what rounding the product dropped
gelu = _unary("gelu")  # x·Φ(x), Φ the standard normal CDF (1 + erf(x/√2))/2, without 1 - erf cancelling
gelu_slope = _unary("gelu_slope")  # GELU'(x) = Φ(x) + x·φ(x)
exp_diff = _binary("exp_diff")  # e^(a - b) with a - b carried exactly (a softmax's x - max)


def reduce_sum(value) -> Expr:
    """The sum of `value` over the row: FP32 in a fixed pairwise tree (the same bits for any
    chunking, workgroup size or device), or for an integer the sum wrapped to 32 bits."""
    if _is_integer(value):
        return Expr("reduce_wrapping_sum", (value,), kind=INTEGER)
    return Expr("reduce_sum", (as_float(value),))


def reduce_product(value) -> Expr:
    """The product of `value` over the row: FP32 in the sum's pairwise tree, or for an
    integer the product wrapped to 32 bits."""
    if _is_integer(value):
        return Expr("reduce_wrapping_product", (value,), kind=INTEGER)
    return Expr("reduce_product", (as_float(value),))


def reduce_max(value) -> Expr:
    """The largest `value` in the row; NaN if any is NaN, +0 over -0. An integer's by its
    input's signedness, exactly."""
    if _is_integer(value):
        return Expr("reduce_integer_max", (value,), kind=INTEGER)
    return Expr("reduce_max", (as_float(value),))


def reduce_min(value) -> Expr:
    """The smallest `value` in the row; NaN if any is NaN, -0 under +0."""
    if _is_integer(value):
        return Expr("reduce_integer_min", (value,), kind=INTEGER)
    return Expr("reduce_min", (as_float(value),))


def is_element(index: Expr) -> Expr:
    """Whether this element's index in its row (in index order over the reduced axes) is
    `index`, an integer such as index_of_extreme's."""
    return Expr("is_element", (index,), kind=BOOL)


def index_of_extreme(value, largest: bool, last: bool) -> Expr:
    """The index of the row's largest (or smallest) `value`, the first (or, with `last`, the
    last) where several tie, found in one pass: -0 equals +0, a NaN is the extreme (the first
    or last NaN), an integer compares by its input's signedness, exactly."""
    term = value if _is_integer(value) else as_float(value)
    return Expr("index_of_max" if largest else "index_of_min", (term,), value="last" if last else "first",
                kind=INTEGER)


# Each reduce primitive and the shader's name for it (REDUCE_<name> in shaders/reduce.comp).
REDUCTIONS = {"reduce_sum": "SUM", "reduce_product": "PRODUCT", "reduce_max": "MAX", "reduce_min": "MIN",
              "index_of_max": "ARG_MAX", "index_of_min": "ARG_MIN",
              "reduce_wrapping_sum": "WRAPPING_SUM", "reduce_wrapping_product": "WRAPPING_PRODUCT",
              "reduce_integer_max": "INTEGER_MAX", "reduce_integer_min": "INTEGER_MIN"}


def reductions(*results: Expr) -> list[Expr]:
    """The reduce nodes `results` use, each after those its own value depends on."""
    ordered, seen = [], set()

    def visit(node: Expr) -> None:
        if node.serial in seen:
            return
        seen.add(node.serial)
        for arg in node.args:
            visit(arg)
        if node.op in REDUCTIONS:
            ordered.append(node)

    for result in results:
        visit(result)
    return ordered


def needed_reductions(result: Expr) -> set[int]:
    """The ids of the reduce nodes `result` reads as totals (not those inside them)."""
    found, seen, stack = set(), set(), [result]
    while stack:
        node = stack.pop()
        if node.serial in seen:
            continue
        seen.add(node.serial)
        if node.op in REDUCTIONS:
            found.add(node.serial)
        else:
            stack.extend(node.args)
    return found


def isinf(x) -> Expr:
    return Expr("isinf", (as_float(x),), kind=BOOL)


# Exact FP32 roundings to an integral value, on the number's bits (a subnormal is never
# handed to hardware that might flush it: floor(-1e-40) is -1 on every device).
floor = _unary("floor")
ceil = _unary("ceil")
trunc = _unary("trunc")
round_half_even = _unary("round_half_even")
round_half_away = _unary("round_half_away")  # ties away from zero


# Integer arithmetic that wraps: exact in 64 bits, and the stored result keeps the low bits of
# the data type's width (two's complement), as NumPy, PyTorch and HLSL integers do. The
# activations' integer forms saturate instead (the arithmetic operators above).
def _operation(op: str, operand_kind: str, result_kind: str, arity: int = 2):
    """A builder of `op` over `arity` operands of `operand_kind` (integers, stored bits): any
    other operand is a TypeError when the row is declared."""
    def build(*operands: Expr) -> Expr:
        if len(operands) != arity or any(not isinstance(x, Expr) or x.kind != operand_kind for x in operands):
            raise TypeError(f"{op} takes {arity} {operand_kind} operand(s)")
        return Expr(op, operands, kind=result_kind)
    build.__name__ = op
    return build


wrapping_add = _operation("wide_add", INTEGER, INTEGER)
wrapping_sub = _operation("wide_sub", INTEGER, INTEGER)
wrapping_mul = _operation("wide_mul_low", INTEGER, INTEGER)
wrapping_pow = _operation("wide_pow", INTEGER, INTEGER)  # a negative exponent: the integer part of 1 / x^n
# Integer division of values of at most 32 bits, exact: the quotient truncated toward zero, the
# remainder with the dividend's sign (C's) or the divisor's (Python's); by zero, 0.
divide_truncated = _operation("wide_div", INTEGER, INTEGER)
remainder_truncated = _operation("wide_mod_trunc", INTEGER, INTEGER)
remainder_floored = _operation("wide_mod_floor", INTEGER, INTEGER)


halved = _operation("wide_half", INTEGER, INTEGER, 1)  # toward zero


def integer_constant(value: int) -> Expr:
    """An integer constant (the 64-bit two's-complement words of `value`)."""
    words = value & 0xFFFFFFFFFFFFFFFF
    return Expr("wide_const", value=(words & 0xFFFFFFFF, words >> 32), kind=INTEGER)


def wrapping_neg(x: Expr) -> Expr:
    return wrapping_sub(INTEGER_ZERO, x)


def wrapping_abs(x: Expr) -> Expr:
    """|x| of an exact integer, negated where below 0 (stored, the most negative value of a
    signed type keeps its bits: it wraps)."""
    return where(x < 0, wrapping_neg(x), x)


integer_to_float = _operation("wide_to_float", INTEGER, FLOAT, 1)  # of at most 32 bits: nearest, ties to even


def integer_scalar(index: int, signed: bool) -> Expr:
    """Scalar `index` pushed as the 32 bits of an integer (kernels.codegen.ScalarBits), as an
    exact integer: sign-extended where `signed`."""
    return Expr("wide_scalar_signed" if signed else "wide_scalar", value=index, kind=INTEGER)


def integer_from_scalar(x) -> Expr:
    """An FP32 number (a scalar) as the integer of the output's data type it converts to:
    truncated toward zero, saturated to the type's range (NaN: 0)."""
    return Expr("wide_from_float", (as_float(x),), kind=INTEGER)


# Operations on the raw bits of stored values, whatever their data type (DirectML's BIT_*
# operators "ignore the data type except for the width of each element").
bits_and = _operation("bits_and", STORED, STORED)
bits_or = _operation("bits_or", STORED, STORED)
bits_xor = _operation("bits_xor", STORED, STORED)
bits_shift_left = _operation("bits_shift_left", STORED, STORED)  # a logical shift; by the element width or more: 0
bits_shift_right = _operation("bits_shift_right", STORED, STORED)
bits_not = _operation("bits_not", STORED, STORED, 1)
bits_count = _operation("bits_count", STORED, INTEGER, 1)  # how many of the element's bits are 1
nonzero = _operation("nonzero", STORED, BOOL, 1)  # the stored bits are not all 0: DirectML's logical truth
