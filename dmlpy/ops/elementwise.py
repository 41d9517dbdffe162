"""DirectML's ELEMENT_WISE operators: one table row per operator.

What a row is and what it becomes: dmlpy/ops/elementwise_family.py. The data types and
dimension counts of each feature level are DirectML's tables, from each operator's page.

Conventions the pages leave open (written here once, and in docs/operators.md):
- FP32 arithmetic is dmlpy's, as for the activations: each operation rounded to FP32 on its
  own (never fused), the result rounded once to the output's type; FP16 and BFLOAT16 inputs
  are decoded to FP32 exactly. A ScaleBias computes Scale * X + Bias first, in FP32.
- Integers wrap: each result is exact in 64 bits and stored as the low bits of its data
  type's width (two's complement), as NumPy, PyTorch and HLSL integers do. No page states
  DirectML's overflow rule.
- Comparisons and logical operators write 0 or 1; a front end's result is UINT8 (NumPy's
  bool, as bytes). NaN compares false, -0 equals +0.
"""

from __future__ import annotations

from ..base.errors import UnsupportedError
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..ir import expr as e
from ..kernels.wide import plan_wide_conversion
from .elementwise_family import (
    AB,
    CONDITION_AB,
    FLOATS,
    GRADIENT,
    ElementWise,
    EnumChoice,
    Operand,
    Scalar,
    declare,
    ladder,
)
from .enums import IsInfinityMode, RoundingMode

F2 = (T.FLOAT32, T.FLOAT16)
INT32S = (*F2, T.INT32, T.UINT32)
EIGHT = (*F2, T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8)
TEN = (*EIGHT, T.INT64, T.UINT64)
ELEVEN = (*TEN, T.FLOAT64)
SIGNED = (*F2, T.INT32, T.INT16, T.INT8)
LOGICAL = (T.UINT32, T.UINT8)
UNSIGNED_BITS = (T.UINT32, T.UINT16, T.UINT8)
ONE_OR_ZERO = (T.UINT8, T.UINT32)  # a comparison's output: UINT8 first, what the front ends write

# DirectML's tables shared by several operators (newest first, as the pages list them).
FLOAT_UNARY_1_0 = ladder((FL.LEVEL_3_0, F2, "1 to 8"), (FL.LEVEL_1_0, F2, "4"))
FLOAT_UNARY_2_0 = ladder((FL.LEVEL_3_0, F2, "1 to 8"), (FL.LEVEL_2_0, F2, "4"))
CLAMPS = ladder((FL.LEVEL_5_0, TEN, "1 to 8"), (FL.LEVEL_3_0, EIGHT, "1 to 8"), (FL.LEVEL_2_1, EIGHT, "4"),
                (FL.LEVEL_1_0, F2, "4"))
SUMS = ladder((FL.LEVEL_5_1, TEN, "1 to 8"), (FL.LEVEL_4_1, (*F2, T.INT64, T.INT32, T.UINT64, T.UINT32), "1 to 8"),
              (FL.LEVEL_3_0, INT32S, "1 to 8"), (FL.LEVEL_2_1, INT32S, "4 to 5"), (FL.LEVEL_1_0, F2, "4 to 5"))
LOGIC = ladder((FL.LEVEL_3_0, LOGICAL, "1 to 8"), (FL.LEVEL_2_0, LOGICAL, "4"), (FL.LEVEL_1_0, (T.UINT32,), "4"))
COMPARISONS = ladder((FL.LEVEL_4_1, TEN, "1 to 8"), (FL.LEVEL_3_0, EIGHT, "1 to 8"), (FL.LEVEL_2_1, EIGHT, "4"),
                     (FL.LEVEL_2_0, F2, "4"), (FL.LEVEL_1_0, F2, "4"))
BITWISE = ladder((FL.LEVEL_4_1, ELEVEN, "1 to 8"), (FL.LEVEL_3_0, UNSIGNED_BITS, "1 to 8"))
MODULI = ladder((FL.LEVEL_6_0, TEN, "1 to 8"), (FL.LEVEL_3_0, EIGHT, "1 to 8"), (FL.LEVEL_2_1, EIGHT, "4"))
SHIFTS = ladder((FL.LEVEL_4_1, (T.UINT64, *UNSIGNED_BITS), "1 to 8"), (FL.LEVEL_3_0, UNSIGNED_BITS, "1 to 8"),
                (FL.LEVEL_2_1, UNSIGNED_BITS, "4"))


def _comparison_output_before_2_0(desc, device_level: FL) -> None:
    """Before FEATURE_LEVEL_2_0 a comparison's OutputTensor is UINT32 only (DirectML's 1_0
    table)."""
    output = desc.output_tensor
    if device_level < FL.LEVEL_2_0 and output is not None and output.data_type != T.UINT32:
        raise UnsupportedError(
            f"{type(desc).__name__}.output_tensor.data_type {output.data_type.name} needs {FL.LEVEL_2_0} but the "
            f"device is capped at {device_level} (UINT32 only before it)", "data_type")


def _exponent_type_before_3_0(desc, device_level: FL) -> None:
    """Until FEATURE_LEVEL_3_0 POW's ExponentTensor has InputTensor's data type (DirectML's
    remark)."""
    x, exponent = desc.input_tensor, desc.exponent_tensor
    if device_level < FL.LEVEL_3_0 and x is not None and exponent is not None and x.data_type != exponent.data_type:
        raise UnsupportedError(
            f"{type(desc).__name__}.exponent_tensor.data_type {exponent.data_type.name} differs from "
            f"input_tensor.data_type {x.data_type.name}, which needs {FL.LEVEL_3_0} but the device is capped at "
            f"{device_level}", "data_type")


def _minimum(a, b):
    return e.where(a < b, a, b)


def _maximum(a, b):
    return e.where(a < b, b, a)


def _clip_integers(x, low, high):
    """Min and Max truncated toward zero and saturated to the data type (DirectML: "cast to
    the tensor data type"), then clamped."""
    return _minimum(e.integer_from_scalar(high), _maximum(e.integer_from_scalar(low), x))


def _sign(x, one, minus_one, zero):
    return e.where(x < 0, minus_one, e.where(x > 0, one, zero))


def _either(a, b):
    return (a & ~b) | (~a & b)


def _comparison(dml_name: str, name: str, symbol: str, build, support=COMPARISONS, notes: str = "") -> ElementWise:
    return ElementWise(
        dml_name, name, f"ATensor {symbol} BTensor ? 1 : 0", support, floats=build, integers=build, operands=AB,
        output_types=ONE_OR_ZERO, in_place=False, level_check=_comparison_output_before_2_0,
        notes=notes or "A comparison of the values (exact for integers, INT64 and UINT64 included; NaN compares "
                       "false, -0 equals +0).")


def _rounding(x, rounding_mode: RoundingMode):
    return {RoundingMode.HALVES_TO_NEAREST_EVEN: e.round_half_even, RoundingMode.TOWARD_ZERO: e.trunc,
            RoundingMode.TOWARD_INFINITY: e.round_half_away}[rounding_mode](x)


def _is_infinity(x, infinity_mode: IsInfinityMode):
    infinite = e.isinf(x)
    return {IsInfinityMode.EITHER: infinite, IsInfinityMode.POSITIVE: infinite & (x > 0),
            IsInfinityMode.NEGATIVE: infinite & (x < 0)}[infinity_mode]


MIN_MAX = (Scalar("min", "Min"), Scalar("max", "Max"))


def _remainder_floored(a, b):
    """NumPy's float remainder: fmod, moved by b where its sign differs from b's."""
    truncated = e.fmod(a, b)
    zero = e.where(b < 0, -0.0, 0.0)
    moved = e.where((truncated < 0) & (b > 0) | (truncated > 0) & (b < 0), truncated + b, truncated)
    return e.where(truncated.equals(0.0), zero, moved)


def _wide_identity(desc, adapter):
    """IDENTITY of a 64-bit type: its words copied (a ScaleBias would need 64-bit arithmetic)."""
    if desc.scale_bias is not None:
        raise UnsupportedError(f"ELEMENT_WISE_IDENTITY.scale_bias on {desc.input_tensor.data_type.name}: dmlpy "
                               "applies a ScaleBias to FLOAT32, FLOAT16 and BFLOAT16 only", "scale_bias")
    return plan_wide_conversion(desc.input_tensor, desc.output_tensor, adapter)


def _cast(desc) -> e.Expr:
    """Floats to floats rounded once to nearest even (the same type: the bits as they are);
    floats to integers toward zero, saturated, NaN to 0; integers to floats to nearest even;
    integers to integers wrapped to the target's width."""
    source, target = desc.input_tensor.data_type, desc.output_tensor.data_type
    x = e.tensor(0)
    if source in FLOATS:
        if target in FLOATS:
            return x if source == target else e.as_float(x)
        return e.integer_from_scalar(x)
    value = e.integer(x)
    return e.integer_to_float(value) if target in FLOATS else value

# The functions dmlpy computes itself (shaders/trigonometric.glsl and its neighbours): within
# 2 ULP of the true result in FP32 (docs/numerics.md), NaN in gives NaN out.
_FUNCTIONS = (
    ("SIN", FLOAT_UNARY_1_0, e.sin, "dmlpy's sin, the argument reduced exactly (sin(1e30) is right)."),
    ("COS", FLOAT_UNARY_1_0, e.cos, "dmlpy's cos, the argument reduced exactly."),
    ("TAN", FLOAT_UNARY_1_0, e.tan, "dmlpy's tan, the argument reduced exactly."),
    ("ASIN", FLOAT_UNARY_1_0, e.asin, "dmlpy's asin; |x| > 1 gives NaN."),
    ("ACOS", FLOAT_UNARY_1_0, e.acos, "dmlpy's acos; |x| > 1 gives NaN."),
    ("ATAN", FLOAT_UNARY_1_0, e.atan, "dmlpy's atan."),
    ("ERF", FLOAT_UNARY_2_0, e.erf, "dmlpy's erf."),
    ("SINH", FLOAT_UNARY_2_0, e.sinh, "dmlpy's sinh; overflows to infinity only where the result does."),
    ("COSH", FLOAT_UNARY_2_0, e.cosh, "dmlpy's cosh; overflows to infinity only where the result does."),
    ("ASINH", FLOAT_UNARY_2_0, e.asinh, "dmlpy's asinh."),
    ("ACOSH", FLOAT_UNARY_2_0, e.acosh, "dmlpy's acosh; x < 1 gives NaN."),
    ("ATANH", FLOAT_UNARY_2_0, e.atanh, "dmlpy's atanh; |x| > 1 gives NaN, ±1 gives ±inf."),
)
_NUMPY_NAMES = {"ASIN": "arcsin", "ACOS": "arccos", "ATAN": "arctan", "ASINH": "arcsinh", "ACOSH": "arccosh",
                "ATANH": "arctanh"}

TABLE: tuple[ElementWise, ...] = (
    # --- Unary ---------------------------------------------------------------------------------
    ElementWise(
        "IDENTITY", "element_wise_identity", "ScaleBias(InputTensor)",
        ladder((FL.LEVEL_4_1, ELEVEN, "1 to 8"), (FL.LEVEL_3_0, EIGHT, "1 to 8"), (FL.LEVEL_2_1, EIGHT, "4 to 5"),
               (FL.LEVEL_1_0, F2, "4 to 5")),
        floats=lambda x: x, integers=lambda x: x, scale_bias=True, wide=_wide_identity,
        notes="Without a ScaleBias the bits pass through unchanged (NaN payloads, -0, subnormals), FLOAT64, "
              "INT64 and UINT64 too (CAST's 64-bit kernel, each element's words copied); a ScaleBias applies to "
              "the 32-bit and narrower float types."),
    ElementWise(
        "ABS", "abs", "abs(ScaleBias(InputTensor))",
        ladder((FL.LEVEL_4_1, (*SIGNED, T.INT64), "1 to 8"), (FL.LEVEL_3_0, SIGNED, "1 to 8"),
               (FL.LEVEL_2_1, SIGNED, "4"), (FL.LEVEL_1_0, F2, "4")),
        floats=e.abs_, integers=e.wrapping_abs, scale_bias=True,
        notes="Clears the sign bit of floats (NaN stays NaN); the most negative integer stays itself (it wraps)."),
    ElementWise("CEIL", "ceil", "ceil(ScaleBias(InputTensor))", FLOAT_UNARY_1_0, floats=e.ceil, scale_bias=True,
                notes="Exact; -0.5 gives -0."),
    ElementWise("FLOOR", "floor", "floor(ScaleBias(InputTensor))", FLOAT_UNARY_1_0, floats=e.floor, scale_bias=True,
                notes="Exact; a negative subnormal gives -1 on every device."),
    ElementWise(
        "ROUND", "round", "the integral value RoundingMode picks",
        ladder((FL.LEVEL_3_0, F2, "1 to 8"), (FL.LEVEL_2_1, F2, "4")), floats=_rounding,
        enums=(EnumChoice("rounding_mode", "RoundingMode", RoundingMode, "HALVES_TO_NEAREST_EVEN"),),
        notes="Exact. HALVES_TO_NEAREST_EVEN (the default, DirectML's value 0) as np.round; TOWARD_ZERO as "
              "np.trunc; TOWARD_INFINITY halves away from zero."),
    ElementWise(
        "CLIP", "clip", "min(Max, max(Min, ScaleBias(InputTensor)))", CLAMPS,
        floats=lambda x, low, high: e.minimum(high, e.maximum(low, x)), integers=_clip_integers,
        scale_bias=True, scalars=MIN_MAX,
        notes="NaN gives NaN. On integers Min and Max are truncated toward zero and saturated to the data type "
              "first (DirectML's cast); on floats rounding them to the data type first gives the same result."),
    ElementWise(
        "CLIP1", "clip1", "min(Max, max(Min, ScaleBias(InputTensor)))", ladder((FL.LEVEL_5_0, TEN, "1 to 8")),
        floats=lambda x, low, high: e.minimum(high, e.maximum(low, x)),
        integers=lambda x, low, high: _minimum(high, _maximum(low, x)), scale_bias=True, scalar_union=MIN_MAX,
        notes="CLIP with Min and Max of the data type (MinMaxDataType; None stands for the output's): exact "
              "integers for integer types, FP32 numbers for float types (DML_SCALAR_UNION has no FLOAT16 "
              "member, so FLOAT16's are given as FP32, its Float32). NaN gives NaN."),
    ElementWise("EXP", "exp", "exp(ScaleBias(InputTensor))", FLOAT_UNARY_1_0, floats=e.exp, scale_bias=True,
                notes="dmlpy's exp (shaders/transcendental.glsl): the same bits on every device."),
    ElementWise("LOG", "log", "log(ScaleBias(InputTensor))", FLOAT_UNARY_1_0, floats=e.log, scale_bias=True,
                notes="dmlpy's log: log(0) = -inf, a negative input gives NaN."),
    ElementWise("RECIP", "reciprocal", "1 / ScaleBias(InputTensor)", FLOAT_UNARY_1_0,
                floats=lambda x: 1 / x, scale_bias=True, notes="Correctly rounded; 1/±0 = ±inf."),
    ElementWise(
        "THRESHOLD", "threshold", "max(ScaleBias(InputTensor), Min)",
        ladder((FL.LEVEL_3_0, EIGHT, "1 to 8"), (FL.LEVEL_2_1, EIGHT, "4"), (FL.LEVEL_1_0, F2, "4")),
        floats=lambda x, low: e.maximum(x, low), integers=lambda x, low: _maximum(x, e.integer_from_scalar(low)),
        scale_bias=True, scalars=(Scalar("min", "Min"),),
        notes="NaN gives NaN; on integers Min is truncated toward zero and saturated first, as CLIP's."),
    ElementWise("SQRT", "sqrt", "sqrt(ScaleBias(InputTensor))", FLOAT_UNARY_1_0, floats=e.sqrt, scale_bias=True,
                notes="Correctly rounded; sqrt(-0) = -0, a negative input gives NaN."),
    *(ElementWise(name, name.lower() if name not in _NUMPY_NAMES else _NUMPY_NAMES[name],
                  f"{name.lower()}(ScaleBias(InputTensor))", support, floats=build, scale_bias=True, notes=notes)
      for name, support, build, notes in _FUNCTIONS),
    ElementWise(
        "CONSTANT_POW", "constant_pow", "pow(ScaleBias(InputTensor), Exponent)", FLOAT_UNARY_1_0,
        floats=e.pow_, scale_bias=True, scalars=(Scalar("exponent", "Exponent"),),
        notes="dmlpy's pow, C's special cases (pow(x, 0) = 1 even for NaN x; a negative x to a non-integral "
              "Exponent gives NaN)."),
    ElementWise("LOGICAL_NOT", "logical_not", "InputTensor == 0 ? 1 : 0", LOGIC, bits=lambda x: ~e.nonzero(x)),
    ElementWise(
        "SIGN", "sign", "InputTensor < 0 ? -1 : InputTensor > 0 ? 1 : 0",
        ladder((FL.LEVEL_4_1, TEN, "1 to 8"), (FL.LEVEL_3_0, EIGHT, "1 to 8"), (FL.LEVEL_2_1, EIGHT, "4"),
               (FL.LEVEL_2_0, F2, "4")),
        floats=lambda x: _sign(x, 1, -1, 0),
        integers=lambda x: _sign(x, e.integer_constant(1), e.integer_constant(-1), 0),
        notes="-0 and NaN give +0, as DirectML's formula says (NumPy's sign gives NaN for NaN)."),
    ElementWise(
        "IS_NAN", "isnan", "InputTensor is NaN ? 1 : 0", ladder((FL.LEVEL_3_0, F2, "1 to 8"), (FL.LEVEL_2_0, F2, "4")),
        floats=e.isnan, output_types=ONE_OR_ZERO, in_place=False, notes="Decided on the stored bits."),
    ElementWise(
        "IS_INFINITY", "isinf", "InputTensor is an infinity InfinityMode names ? 1 : 0",
        ladder((FL.LEVEL_3_0, F2, "1 to 8"), (FL.LEVEL_2_1, F2, "4")), floats=_is_infinity,
        enums=(EnumChoice("infinity_mode", "InfinityMode", IsInfinityMode, "EITHER"),), output_types=(T.UINT8,),
        in_place=False, notes="EITHER (the default, DirectML's value 0), POSITIVE or NEGATIVE."),
    ElementWise("TANH", "element_wise_tanh", "tanh(ScaleBias(InputTensor))", FLOAT_UNARY_2_0, floats=e.tanh,
                scale_bias=True, notes="dmlpy's tanh, as ACTIVATION_TANH's."),
    ElementWise(
        "NEGATE", "negative", "-InputTensor", ladder((FL.LEVEL_5_0, (*SIGNED, T.INT64), "1 to 8")),
        floats=lambda x: -x, integers=e.wrapping_neg,
        notes="Flips the sign bit of floats (NaN included); the most negative integer stays itself (it wraps)."),
    ElementWise("BIT_NOT", "bitwise_not", "~InputTensor", BITWISE, bits=e.bits_not,
                notes="On the stored bits of any data type of the table, as DirectML: only the width counts."),
    ElementWise(
        "BIT_COUNT", "bitwise_count", "the number of 1 bits of InputTensor", BITWISE, bits=e.bits_count,
        output_types=ONE_OR_ZERO, in_place=False, notes="On the stored bits, as BIT_NOT's."),
    # --- Binary and ternary ----------------------------------------------------------------------
    ElementWise("ADD", "add", "ATensor + BTensor", SUMS, floats=lambda a, b: a + b, integers=e.wrapping_add,
                operands=AB),
    ElementWise(
        "ADD1", "add1", "FusedActivation(ATensor + BTensor)",
        ladder((FL.LEVEL_3_0, F2, "1 to 8"), (FL.LEVEL_2_0, F2, "4 to 5")), floats=lambda a, b: a + b, operands=AB,
        fused_activation=True,
        notes="The sum is rounded to the output's data type before the activation: the bits of ADD then the "
              "activation on its own."),
    ElementWise(
        "SUBTRACT", "subtract", "ATensor - BTensor",
        ladder((FL.LEVEL_5_1, TEN, "1 to 8"), (FL.LEVEL_4_1, (*F2, T.INT64, T.INT32, T.UINT64, T.UINT32), "1 to 8"),
               (FL.LEVEL_3_0, INT32S, "1 to 8"), (FL.LEVEL_2_1, INT32S, "4"), (FL.LEVEL_1_0, F2, "4")),
        floats=lambda a, b: a - b, integers=e.wrapping_sub, operands=AB),
    ElementWise("MULTIPLY", "multiply", "ATensor * BTensor", SUMS, floats=lambda a, b: a * b,
                integers=e.wrapping_mul, operands=AB),
    ElementWise(
        "DIVIDE", "divide", "ATensor / BTensor",
        ladder((FL.LEVEL_6_0, TEN, "1 to 8"), (FL.LEVEL_5_1, EIGHT, "1 to 8"), (FL.LEVEL_3_0, INT32S, "1 to 8"),
               (FL.LEVEL_2_1, INT32S, "4"), (FL.LEVEL_1_0, F2, "4")),
        floats=lambda a, b: a / b, integers=e.divide_truncated, operands=AB,
        notes="Correctly rounded on floats. Integers: truncated toward zero (DirectML's rule); by zero the "
              "result is 0 (NumPy's; DirectML states none); the most negative value over -1 wraps to itself."),
    ElementWise("MAX", "maximum", "max(ATensor, BTensor)", CLAMPS, floats=e.maximum, integers=_maximum,
                operands=AB, notes="NaN if either is NaN (the first NaN operand, as NumPy's maximum); where the two "
                "compare equal (-0 and +0 included) the result is BTensor's bits."),
    ElementWise("MIN", "minimum", "min(ATensor, BTensor)", CLAMPS, floats=e.minimum, integers=_minimum,
                operands=AB, notes="NaN if either is NaN (the first NaN operand, as NumPy's minimum); where the two "
                "compare equal (-0 and +0 included) the result is BTensor's bits."),
    ElementWise(
        "MEAN", "element_wise_mean", "(ATensor + BTensor) / 2",
        ladder((FL.LEVEL_3_0, INT32S, "1 to 8"), (FL.LEVEL_2_1, INT32S, "4"), (FL.LEVEL_1_0, F2, "4")),
        floats=lambda a, b: (a + b) * 0.5, integers=lambda a, b: e.halved(e.wrapping_add(a, b)), operands=AB,
        notes="The sum in FP32, then halved (exact but for a subnormal result, which rounds): DirectML's formula "
              "as written, so two FP32 values near the largest overflow. Integers: the exact sum halved toward "
              "zero (C's (a + b) / 2 without its overflow)."),
    ElementWise(
        "DIFFERENCE_SQUARE", "difference_square", "(ATensor - BTensor) * (ATensor - BTensor)",
        ladder((FL.LEVEL_3_1, INT32S, "1 to 8")), operands=AB,
        floats=lambda a, b: (lambda d: d * d)(a - b), integers=lambda a, b: (lambda d: e.wrapping_mul(d, d))(
            e.wrapping_sub(a, b))),
    ElementWise(
        "POW", "power", "pow(ScaleBias(InputTensor), ExponentTensor)",
        ladder((FL.LEVEL_3_0, EIGHT, "1 to 8"), (FL.LEVEL_1_0, F2, "4")), floats=e.pow_, integers=e.wrapping_pow,
        operands=(Operand("input_tensor", "InputTensor", "x"), Operand("exponent_tensor", "ExponentTensor",
                                                                        "exponent")),
        same_type=("input_tensor", "output_tensor"), scale_bias=True, level_check=_exponent_type_before_3_0,
        notes="dmlpy's pow, C's special cases (as CONSTANT_POW's); the ScaleBias applies to InputTensor only. "
              "From 3_0 ExponentTensor may have its own data type (a float InputTensor takes an integer exponent "
              "exactly). Integers: exact, wrapping as repeated multiplication; a negative exponent gives the "
              "integer part of 1 / x^n (1 for 1, +-1 for -1, else 0; NumPy raises); an integer InputTensor with "
              "a float exponent is refused at compile."),
    ElementWise(
        "ATAN_YX", "arctan2", "atan2(ATensor, BTensor)", ladder((FL.LEVEL_3_1, F2, "1 to 8")),
        floats=e.atan2, operands=AB,
        notes="The angle of the point (BTensor, ATensor) in [-pi, pi], C's atan2 for zeros and infinities "
              "(NumPy's arctan2(a, b))."),
    ElementWise("LOGICAL_AND", "logical_and", "ATensor != 0 && BTensor != 0 ? 1 : 0", LOGIC, operands=AB,
                bits=lambda a, b: e.nonzero(a) & e.nonzero(b)),
    ElementWise("LOGICAL_OR", "logical_or", "ATensor != 0 || BTensor != 0 ? 1 : 0", LOGIC, operands=AB,
                bits=lambda a, b: e.nonzero(a) | e.nonzero(b)),
    ElementWise("LOGICAL_XOR", "logical_xor", "(ATensor != 0) != (BTensor != 0) ? 1 : 0", LOGIC, operands=AB,
                bits=lambda a, b: _either(e.nonzero(a), e.nonzero(b))),
    ElementWise(
        "MODULUS_TRUNCATE", "fmod", "ATensor - BTensor * trunc(ATensor / BTensor)",
        MODULI, floats=e.fmod, integers=e.remainder_truncated, operands=AB,
        notes="C's fmod: the sign of ATensor (NumPy's fmod). Exact on floats; a zero BTensor or an infinite "
              "ATensor gives NaN, an infinite BTensor gives ATensor. Integers by zero: 0, as NumPy's."),
    ElementWise(
        "MODULUS_FLOOR", "remainder", "ATensor - BTensor * floor(ATensor / BTensor)",
        MODULI, floats=_remainder_floored, integers=e.remainder_floored, operands=AB,
        notes="Python's remainder: the sign of BTensor (NumPy's remainder). On floats C's fmod, plus BTensor "
              "where the signs differ (one rounding), a zero result with BTensor's sign; a zero BTensor gives "
              "NaN. Integers by zero: 0, as NumPy's."),
    _comparison("LOGICAL_EQUALS", "equal", "==", lambda a, b: a.equals(b)),
    _comparison("LOGICAL_GREATER_THAN", "greater", ">", lambda a, b: a > b),
    _comparison("LOGICAL_LESS_THAN", "less", "<", lambda a, b: a < b),
    _comparison("LOGICAL_GREATER_THAN_OR_EQUAL", "greater_equal", ">=", lambda a, b: a >= b, COMPARISONS[:2]),
    _comparison("LOGICAL_LESS_THAN_OR_EQUAL", "less_equal", "<=", lambda a, b: a <= b, COMPARISONS[:2]),
    ElementWise("BIT_AND", "bitwise_and", "ATensor & BTensor", BITWISE, bits=e.bits_and, operands=AB),
    ElementWise("BIT_OR", "bitwise_or", "ATensor | BTensor", BITWISE, bits=e.bits_or, operands=AB),
    ElementWise("BIT_XOR", "bitwise_xor", "ATensor ^ BTensor", BITWISE, bits=e.bits_xor, operands=AB),
    ElementWise("BIT_SHIFT_LEFT", "left_shift", "ATensor << BTensor", SHIFTS, bits=e.bits_shift_left, operands=AB,
                notes="A logical shift; by the element's width or more it gives 0 (NumPy's left_shift)."),
    ElementWise("BIT_SHIFT_RIGHT", "right_shift", "ATensor >> BTensor", SHIFTS, bits=e.bits_shift_right,
                operands=AB, notes="A logical shift; by the element's width or more it gives 0."),
    ElementWise(
        "IF", "where", "ConditionTensor != 0 ? ATensor : BTensor",
        ladder((FL.LEVEL_5_0, ELEVEN, "1 to 8"), (FL.LEVEL_3_0, EIGHT, "1 to 8"), (FL.LEVEL_2_0, (T.FLOAT16,), "4")),
        bits=lambda condition, a, b: e.where(e.nonzero(condition), a, b), operands=CONDITION_AB, in_place=False,
        notes="A select: the chosen element's bits pass through unchanged (FLOAT64, INT64 and UINT64 too). "
              "DirectML's 2_0 table lists FLOAT16 only; from 3_0 every type of its table."),
    ElementWise(
        "CAST", "cast", "InputTensor converted to OutputTensor's data type",
        ladder((FL.LEVEL_4_1, ELEVEN, "1 to 8"), (FL.LEVEL_3_1, TEN, "1 to 8"), (FL.LEVEL_3_0, TEN, "4"),
               (FL.LEVEL_1_0, (*F2, T.INT16, T.INT8, T.UINT16, T.UINT8), "4")),
        custom=_cast, same_type=("input_tensor",), in_place=False, dml_prefix="", class_prefix="",
        wide=lambda desc, adapter: plan_wide_conversion(desc.input_tensor, desc.output_tensor, adapter),
        notes="DirectML's page states no rounding rule; dmlpy's: floats to floats round once to nearest even "
              "(overflow gives infinity, NaN stays NaN); floats to integers truncate toward zero and saturate to "
              "the range, NaN gives 0; integers to floats round to nearest even; integers to integers keep the "
              "low bits of the target's width (two's complement), as C and HLSL casts do. Where either side is "
              "FLOAT64, INT64 or UINT64 the same rules hold, computed in 32-bit integer arithmetic on any device "
              "(no shaderFloat64 or shaderInt64): floats and 64-bit integers round once, straight to the target "
              "(an INT64 to FLOAT16 never passes through FP32), a NaN keeps its sign and the top of its payload, "
              "quieted; a type to itself keeps its bits. The front end takes the result's type: "
              "cast(x, np.float16), and NumPy's float64 and int64 arrays as they are."),
    # --- Gradients --------------------------------------------------------------------------------
    ElementWise(
        "CLIP_GRAD", "clip_grad", "InputTensor <= Min || InputTensor >= Max ? 0 : InputGradientTensor",
        ladder((FL.LEVEL_5_0, TEN, "1 to 8"), (FL.LEVEL_3_1, EIGHT, "1 to 8")),
        floats=lambda x, dy, low, high: e.where((x <= low) | (x >= high), 0, dy),
        integers=lambda x, dy, low, high: e.where(
            (x <= e.integer_from_scalar(low)) | (x >= e.integer_from_scalar(high)), 0, dy),
        operands=GRADIENT, scalars=MIN_MAX, output_field=("output_gradient_tensor", "OutputGradientTensor"),
        notes="dY's bits pass through where Min < X < Max (NaN X included: both comparisons are false)."),
    ElementWise(
        "CLIP_GRAD1", "clip_grad1", "InputTensor <= Min || InputTensor >= Max ? 0 : InputGradientTensor",
        ladder((FL.LEVEL_5_0, TEN, "1 to 8")),
        floats=lambda x, dy, low, high: e.where((x <= low) | (x >= high), 0, dy),
        integers=lambda x, dy, low, high: e.where((x <= low) | (x >= high), 0, dy),
        operands=GRADIENT, scalar_union=MIN_MAX, output_field=("output_gradient_tensor", "OutputGradientTensor"),
        notes="CLIP_GRAD with Min and Max of the data type, as CLIP1's (DirectML's page says MinMaxDataType "
              "matches OutputTensor's data type: OutputGradientTensor's)."),
)

DESCS = {cls.__name__: cls for cls in (declare(row) for row in TABLE)}
