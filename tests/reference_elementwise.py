"""Independent references for DirectML's ELEMENT_WISE operators, written plainly (NumPy in
FP32 for floats, Python integers for integers; never the shader's code), shared by
tests/test_elementwise.py and the fuzz tests."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
from reference import ulp_error

import dmlpy as dml

T = dml.TensorDataType
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16, T.INT32: np.int32,
         T.INT16: np.int16, T.INT8: np.int8, T.UINT32: np.uint32, T.UINT16: np.uint16, T.UINT8: np.uint8}
WIDE_NUMPY = {T.INT64: np.int64, T.UINT64: np.uint64, T.FLOAT64: np.float64}  # the 64-bit kernel's types
UNSIGNED_OF = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)


# --- The references --------------------------------------------------------------------------


# (exponent bits, mantissa bits) of each float type, and the unsigned type of its width.
FORMATS = {np.dtype(np.float64): (11, 52, np.uint64), np.dtype(np.float32): (8, 23, np.uint32),
           np.dtype(np.float16): (5, 10, np.uint16), np.dtype(ml_dtypes.bfloat16): (8, 7, np.uint16)}


def is_float(dtype) -> bool:
    return np.dtype(dtype) in FORMATS


def exact(value) -> Fraction | None:
    """A finite float or an integer as an exact rational; None for inf and NaN."""
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    value = float(value)  # exact for every float type here
    return Fraction(value) if math.isfinite(value) else None


def rounded_bits(value: Fraction, negative: bool, dtype) -> int:
    """The bits of `value` (nonnegative) rounded to nearest, ties to even, in the float type
    `dtype`: the plain definition, on exact rationals."""
    exponent_bits, mantissa_bits, _ = FORMATS[np.dtype(dtype)]
    bias = (1 << (exponent_bits - 1)) - 1
    sign = (1 << (exponent_bits + mantissa_bits)) if negative else 0
    infinity = ((1 << exponent_bits) - 1) << mantissa_bits
    if value == 0:
        return sign
    top = value.numerator.bit_length() - value.denominator.bit_length()  # 2^top <= value < 2^(top + 2)
    if Fraction(2) ** top > value:
        top -= 1
    elif Fraction(2) ** (top + 1) <= value:
        top += 1
    quantum = Fraction(2) ** (max(top, 1 - bias) - mantissa_bits)
    units, rest = divmod(value, quantum)
    units = int(units)
    if rest > quantum / 2 or (rest == quantum / 2 and units % 2 == 1):
        units += 1
    # A normal number's units hold its leading bit, which carries into the exponent field.
    field = top + bias - 1 if top >= 1 - bias else 0
    bits = (field << mantissa_bits) + units
    return sign | min(bits, infinity)


def exact_cast_reference(x: np.ndarray, target) -> np.ndarray:
    """CAST as dmlpy documents it, on exact rationals (any pair of types, the 64-bit ones
    too): floats rounded once to nearest even (inf and NaN kept, a NaN quieted, its payload's
    top kept); floats to integers toward zero, saturated, NaN 0; integers to integers wrapped;
    a type to itself unchanged."""
    target = np.dtype(target)
    flat = np.ravel(x)
    if flat.dtype == target:
        return flat.copy()
    if is_float(target):
        exponent_bits, mantissa_bits, unsigned = FORMATS[target]
        out = []
        for v in flat:
            negative = bool(np.signbit(v)) if is_float(flat.dtype) else int(v) < 0
            number = exact(v)
            if number is not None:
                out.append(rounded_bits(abs(number), negative, target))
                continue
            sign = (1 << (exponent_bits + mantissa_bits)) if negative else 0
            infinity = ((1 << exponent_bits) - 1) << mantissa_bits
            if np.isinf(v):
                out.append(sign | infinity)
            else:  # NaN: quiet, the payload's top bits
                source_exponent, source_mantissa, source_unsigned = FORMATS[flat.dtype]
                payload = int(np.array([v]).view(source_unsigned)[0]) & ((1 << source_mantissa) - 1)
                aligned = payload << (64 - source_mantissa) >> (64 - mantissa_bits)
                out.append(sign | infinity | (1 << (mantissa_bits - 1)) | aligned)
        return np.array(out, dtype=unsigned).view(target)
    info = np.iinfo(target)
    if is_float(flat.dtype):
        values = []
        for v in flat:
            number = exact(v)
            if np.isnan(v):
                values.append(0)
            elif number is None:
                values.append(info.max if v > 0 else info.min)
            else:
                values.append(min(max(int(number), info.min), info.max))  # int(): toward zero
        return np.array(values, target)
    span = 1 << info.bits
    return np.array([(int(v) - info.min) % span + info.min for v in flat], target)


def f32(x):
    """A float input decoded to FP32 (exact for FP16 and BF16)."""
    return np.asarray(x).astype(np.float32)


def wrap(values, dtype):
    """Python integers stored as `dtype`: their low bits, two's complement."""
    info = np.iinfo(dtype)
    span = 1 << info.bits
    wrapped = [((int(v) - info.min) % span) + info.min for v in values]  # Python ints: never through a float
    return np.array(wrapped, dtype)


def ints(x):
    return [int(v) for v in np.ravel(x)]


def truncated(value: float, dtype) -> int:
    """An FP32 scalar cast to an integer type: toward zero, saturated, NaN 0."""
    if np.isnan(value):
        return 0
    info = np.iinfo(dtype)
    if not np.isfinite(value):
        return info.max if value > 0 else info.min
    whole = int(np.trunc(np.float64(np.float32(value))))
    return min(max(whole, info.min), info.max)


def first_if(keep_a, a, b):
    """dmlpy's min and max: the first operand where it is NaN or `keep_a` holds, else the
    second (so a NaN in either gives NaN, and a tie, -0 against +0 included, the second)."""
    return np.where(np.isnan(a) | keep_a, a, b)


def fp32_then(dtype, compute):
    def reference(*args, **scalars):
        with np.errstate(all="ignore"):
            return np.asarray(compute(*[f32(a) for a in args], **scalars), np.float32).astype(dtype)
    return reference


def round_half_away(x):
    return np.where(np.abs(x - np.trunc(x)) == 0.5, np.trunc(x) + np.sign(x), np.round(x))


FLOAT_MATH = {
    "IDENTITY": lambda x: x,
    "ABS": np.abs,
    "CEIL": np.ceil,
    "FLOOR": np.floor,
    "ROUND": np.round,
    "CLIP": lambda x, min, max: (lambda m: first_if(np.float32(max) < m, np.float32(max), m))(
        first_if(x < np.float32(min), np.float32(min), x)),
    "RECIP": lambda x: np.float32(1) / x,
    "THRESHOLD": lambda x, min: first_if(np.float32(min) < x, x, np.float32(min)),
    "SIGN": lambda x: np.where(x < 0, -1, np.where(x > 0, 1, 0)).astype(np.float32),
    "NEGATE": np.negative,
    "ADD": np.add,
    "ADD1": np.add,
    "SUBTRACT": np.subtract,
    "MULTIPLY": np.multiply,
    "DIVIDE": np.divide,
    "MAX": lambda a, b: first_if(b < a, a, b),
    "MIN": lambda a, b: first_if(a < b, a, b),
    "MEAN": lambda a, b: (a + b) * np.float32(0.5),
    "DIFFERENCE_SQUARE": lambda a, b: (a - b) * (a - b),
    "SQRT": np.sqrt,
    "CLIP1": lambda x, min, max: FLOAT_MATH["CLIP"](x, min, max),
    "MODULUS_TRUNCATE": np.fmod,
    "MODULUS_FLOOR": np.remainder,
}

INTEGER_MATH = {
    "IDENTITY": lambda x: x,
    "ABS": abs,
    "NEGATE": lambda x: -x,
    "SIGN": lambda x: (x > 0) - (x < 0),
    "ADD": lambda a, b: a + b,
    "SUBTRACT": lambda a, b: a - b,
    "MULTIPLY": lambda a, b: a * b,
    "MAX": max,
    "MIN": min,
    "DIFFERENCE_SQUARE": lambda a, b: (a - b) * (a - b),
    "DIVIDE": lambda a, b: 0 if b == 0 else abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1),
    "MEAN": lambda a, b: (a + b) // 2 if a + b >= 0 else -((-(a + b)) // 2),
    "MODULUS_TRUNCATE": lambda a, b: 0 if b == 0 else (abs(a) % abs(b)) * (1 if a >= 0 else -1),
    "MODULUS_FLOOR": lambda a, b: 0 if b == 0 else a % b,
    # 64 bits of the power are all any data type keeps; a negative exponent: int(1 / a^-b)
    "POW": lambda a, b: pow(a, b, 1 << 64) if b >= 0 else 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0,
}

COMPARE = {"LOGICAL_EQUALS": np.equal, "LOGICAL_GREATER_THAN": np.greater, "LOGICAL_LESS_THAN": np.less,
           "LOGICAL_GREATER_THAN_OR_EQUAL": np.greater_equal, "LOGICAL_LESS_THAN_OR_EQUAL": np.less_equal}
LOGIC = {"LOGICAL_AND": np.logical_and, "LOGICAL_OR": np.logical_or, "LOGICAL_XOR": np.logical_xor}


def expected_of(name: str, data_type: T, args: list[np.ndarray], scalars: dict, output_type: T) -> np.ndarray:
    """The reference result, stored as `output_type`."""
    dtype, out = {**NUMPY, **WIDE_NUMPY}[data_type], {**NUMPY, **WIDE_NUMPY}[output_type]
    if name == "CAST":  # the 64-bit types round from their exact values, never through FP32
        wide = data_type in WIDE_NUMPY or output_type in WIDE_NUMPY
        return (exact_cast_reference if wide else cast_reference)(args[0], out)
    if name in COMPARE:
        if data_type in FLOATS:
            return COMPARE[name](f32(args[0]), f32(args[1])).astype(out)
        return np.array([COMPARE[name](a, b) for a, b in zip(ints(args[0]), ints(args[1]))], out).reshape(
            args[0].shape)
    if name in LOGIC:
        return LOGIC[name](args[0] != 0, args[1] != 0).astype(out)
    if name == "LOGICAL_NOT":
        return (args[0] == 0).astype(out)
    if name == "IS_NAN":
        return np.isnan(f32(args[0])).astype(out)
    if name == "IS_INFINITY":
        x = f32(args[0])
        mode = scalars.get("infinity_mode", "EITHER")
        return {"EITHER": np.isinf(x), "POSITIVE": x == np.inf, "NEGATIVE": x == -np.inf}[mode].astype(out)
    if name.startswith("BIT_"):
        return bits_reference(name, args, out)
    if name == "IF":
        return np.where(args[0] != 0, args[1], args[2])
    if name == "IDENTITY" and data_type is T.FLOAT64:  # a copy of the bits (no ScaleBias on 64-bit types)
        return args[0].copy()
    if name in ("CLIP_GRAD", "CLIP_GRAD1"):
        low, high = scalars["min"], scalars["max"]
        if name == "CLIP_GRAD1" and data_type not in FLOATS:
            kept = np.array([low < v < high for v in ints(args[0])]).reshape(args[0].shape)
        elif data_type in FLOATS:
            x = f32(args[0])
            kept = ~((x <= np.float32(low)) | (x >= np.float32(high)))
        else:
            low, high = truncated(low, dtype), truncated(high, dtype)
            kept = np.array([not (v <= low or v >= high) for v in ints(args[0])]).reshape(args[0].shape)
        return np.where(kept, args[1], np.zeros_like(args[1]))
    if data_type in FLOATS:
        math = FLOAT_MATH[name]
        if name == "ROUND":
            mode = scalars.get("rounding_mode", "HALVES_TO_NEAREST_EVEN")
            math = {"HALVES_TO_NEAREST_EVEN": np.round, "TOWARD_ZERO": np.trunc, "TOWARD_INFINITY": round_half_away}[
                mode]
            scalars = {}
        return fp32_then(out, math)(*args, **scalars)
    if name == "CLIP1":
        return wrap([min(scalars["max"], max(scalars["min"], v)) for v in ints(args[0])], out).reshape(args[0].shape)
    if name in ("CLIP", "THRESHOLD"):
        low = truncated(scalars["min"], dtype)
        high = truncated(scalars["max"], dtype) if name == "CLIP" else None
        values = [max(low, v) if high is None else min(high, max(low, v)) for v in ints(args[0])]
        return wrap(values, out).reshape(args[0].shape)
    math = INTEGER_MATH[name]
    values = [math(*operands) for operands in zip(*(ints(a) for a in args))]
    return wrap(values, out).reshape(args[0].shape)


def bits_reference(name, args, out):
    width = args[0].dtype.itemsize * 8
    unsigned = UNSIGNED_OF[args[0].dtype.itemsize]
    a = [int(v) for v in np.ravel(args[0].view(unsigned))]
    mask = (1 << width) - 1
    if name == "BIT_NOT":
        values = [~v & mask for v in a]
    elif name == "BIT_COUNT":
        return np.array([bin(v).count("1") for v in a], out).reshape(args[0].shape)
    else:
        b = [int(v) for v in np.ravel(args[1].view(unsigned))]
        op = {"BIT_AND": lambda x, y: x & y, "BIT_OR": lambda x, y: x | y, "BIT_XOR": lambda x, y: x ^ y,
              "BIT_SHIFT_LEFT": lambda x, y: (x << y) & mask if y < width else 0,
              "BIT_SHIFT_RIGHT": lambda x, y: x >> y if y < width else 0}[name]
        values = [op(x, y) for x, y in zip(a, b)]
    return np.array(values, unsigned).reshape(args[0].shape).view(args[0].dtype)


def _erf(x):
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


# The operators computed by dmlpy's own functions, against float64, within these bounds (in
# ULP of the output's type; docs/numerics.md). FP16 and BF16 results come from an FP32 value
# within the FP32 bound, so at most one rounding step off. Each takes float64 inputs (the
# stored values, exactly) and the desc's scalars.
TRANSCENDENTAL = {
    "EXP": np.exp, "LOG": np.log, "TANH": np.tanh, "SIN": np.sin, "COS": np.cos, "TAN": np.tan,
    "ASIN": np.arcsin, "ACOS": np.arccos, "ATAN": np.arctan, "SINH": np.sinh, "COSH": np.cosh,
    "ASINH": np.arcsinh, "ACOSH": np.arccosh, "ATANH": np.arctanh, "ERF": _erf,
    "POW": np.power, "CONSTANT_POW": lambda x, exponent: np.power(x, np.float64(np.float32(exponent))),
    "ATAN_YX": np.arctan2,
}
ULP_BOUNDS = {T.FLOAT32: 2.0, T.FLOAT16: 1.0, T.BFLOAT16: 1.0}


def assert_within_bound(got, args, name, data_type, scalars=None, bound=None):
    """`got` within `bound` (default ULP_BOUNDS) of the float64 result of `args`; the worst
    element named in the message."""
    got = np.ravel(got)
    with np.errstate(all="ignore"):
        wide = [f32(np.ravel(a)).astype(np.float64) for a in args]
        exact = TRANSCENDENTAL[name](*wide, **(scalars or {}))
        errors = ulp_error(f32(got), exact, NUMPY[data_type], floor=2.0**-100)
    worst = np.argmax(errors)
    inputs = ", ".join(repr(a[worst]) for a in wide)
    assert errors[worst] <= (bound or ULP_BOUNDS[data_type]), (
        f"{name}: {errors[worst]:.2f} ULP at ({inputs}): got {got[worst]!r}, exact {exact[worst]!r}")


def assert_same(got, expected):
    got, expected = np.ravel(got), np.ravel(expected)  # the elements in order, whatever shape each arrived in
    if got.dtype.kind == "f" or got.dtype == ml_dtypes.bfloat16:
        def isnan(x):
            return np.isnan(x if x.dtype == np.float64 else f32(x))

        nan = isnan(expected)
        assert isnan(got)[nan].all(), "a NaN was expected"
        unsigned = UNSIGNED_OF[got.dtype.itemsize]
        differ = np.flatnonzero(got.view(unsigned)[~nan] != expected.view(unsigned)[~nan])
        assert differ.size == 0, f"{differ.size} differ: {got[~nan][differ[:6]]} != {expected[~nan][differ[:6]]}"
    else:
        differ = np.flatnonzero(got != expected)
        assert differ.size == 0, f"{differ.size} differ: {got.ravel()[differ[:6]]} != {expected.ravel()[differ[:6]]}"


def cast_reference(x: np.ndarray, target) -> np.ndarray:
    """DML_CAST as dmlpy documents it: floats to floats through FP32 rounded once (NumPy's
    conversions round to nearest even), floats to integers toward zero and saturated with NaN
    as 0, integers to floats to nearest even, integers to integers wrapped."""
    out = np.dtype(target)
    if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16:
        x32 = f32(x)
        if out.kind == "f" or out == ml_dtypes.bfloat16:
            with np.errstate(over="ignore"):
                return x32.astype(out)
        info = np.iinfo(out)
        values = [0 if np.isnan(v) else info.max if v >= info.max else info.min if v <= info.min else int(np.trunc(v))
                  for v in x32.astype(np.float64)]
        return np.array(values, out)
    if out.kind == "f" or out == ml_dtypes.bfloat16:
        with np.errstate(over="ignore"):
            return np.array([np.float32(int(v)) for v in np.ravel(x)], np.float32).astype(out)
    return wrap(ints(x), out)
