"""dmlpy's own math functions (SQRT, the trigonometric and hyperbolic functions, ERF, POW,
ATAN_YX, the float moduli) against float64 over dense FP32 sweeps, every exponent's bit
patterns, and C's special cases, on the public front ends. Every FP16 and BF16 input of the
unary ones is checked by tests/test_elementwise.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from reference_elementwise import TRANSCENDENTAL, assert_within_bound

import dmlpy as dml

T = dml.TensorDataType

# The most ULP each may be off in FP32 (docs/numerics.md): the 2 ULP; LOG's fit
# measures 0.94 over every input of [0.5, 2], where its relative error shows.
FP32_ULP_BOUND = {name: 2.0 for name in TRANSCENDENTAL} | {"LOG": 1.0}

# Where each unary function's interesting values lie: a dense sweep of it, besides random bit
# patterns over every exponent.
DENSE_RANGES = {
    "SIN": (-20.0, 20.0), "COS": (-20.0, 20.0), "TAN": (-20.0, 20.0), "ASIN": (-1.0, 1.0), "ACOS": (-1.0, 1.0),
    "ATAN": (-30.0, 30.0), "SINH": (-90.0, 90.0), "COSH": (-90.0, 90.0), "ASINH": (-30.0, 30.0),
    "ACOSH": (1.0, 30.0), "ATANH": (-1.0, 1.0), "ERF": (-5.0, 5.0), "LOG": (0.5, 2.0),
}
FRONT_END = {row: dml.OPERATORS[name].name for name, row in
             ((s.name, s.dml_name.removeprefix("ELEMENT_WISE_")) for s in dml.OPERATORS.values())}

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -1e-40, 1.1754944e-38, 1e-30,
                     -1e-30, 1e-7, -1e-7, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.1415927, -3.1415927, 1.5707964,
                     -1.5707964, 1e30, -1e30, 3.4028235e38, -3.4028235e38], np.float32)


def random_bits(count: int, rng) -> np.ndarray:
    return rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)


def sweep(name: str, rng) -> np.ndarray:
    low, high = DENSE_RANGES[name]
    tiny = np.geomspace(1e-38, 1e-3, 1 << 14, dtype=np.float32) * np.resize(np.float32([1, -1]), 1 << 14)
    return np.concatenate([np.linspace(low, high, 1 << 18, dtype=np.float32), random_bits(1 << 17, rng), tiny,
                           SPECIALS])


@pytest.mark.parametrize("name", sorted(DENSE_RANGES))
def test_unary_functions_within_the_bound_over_dense_sweeps(device, name):
    x = sweep(name, np.random.default_rng(sum(map(ord, name))))
    got = getattr(dml, FRONT_END[name])(x, device=device)
    assert_within_bound(got, [x], name, T.FLOAT32, bound=FP32_ULP_BOUND[name])


def test_sqrt_is_correctly_rounded_over_every_exponent(device):
    rng = np.random.default_rng(7)
    x = np.concatenate([random_bits(1 << 18, rng), SPECIALS, np.arange(0, 1 << 12, dtype=np.uint32).view(np.float32)])
    got = dml.sqrt(x, device=device)
    with np.errstate(invalid="ignore"):
        expected = np.sqrt(x)
    same = (got.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got) & np.isnan(expected))
    assert same.all(), f"sqrt({x[~same][0]!r}) = {got[~same][0]!r}, not {expected[~same][0]!r}"


def pairs_over_ranges(rng, count: int, x_range, y_range) -> tuple[np.ndarray, np.ndarray]:
    return (rng.uniform(*x_range, count).astype(np.float32), rng.uniform(*y_range, count).astype(np.float32))


def test_pow_within_the_bound(device):
    rng = np.random.default_rng(11)
    xs, ys = zip(*[pairs_over_ranges(rng, 1 << 16, (0, 4), (-40, 40)),
                   pairs_over_ranges(rng, 1 << 16, (0.9, 1.1), (-2000, 2000)),
                   (np.abs(random_bits(1 << 16, rng)), rng.uniform(-3, 3, 1 << 16).astype(np.float32)),
                   (rng.uniform(-8, 8, 1 << 16).astype(np.float32), rng.integers(-30, 30, 1 << 16).astype(np.float32)),
                   (random_bits(1 << 16, rng), random_bits(1 << 16, rng))])
    x, y = np.concatenate(xs), np.concatenate(ys)
    assert_within_bound(dml.power(x, y, device=device), [x, y], "POW", T.FLOAT32, bound=FP32_ULP_BOUND["POW"])


def test_atan2_within_the_bound(device):
    rng = np.random.default_rng(12)
    y, x = pairs_over_ranges(rng, 1 << 18, (-10, 10), (-10, 10))
    y, x = np.concatenate([y, random_bits(1 << 16, rng)]), np.concatenate([x, random_bits(1 << 16, rng)])
    got = dml.arctan2(y, x, device=device)
    assert_within_bound(got, [y, x], "ATAN_YX", T.FLOAT32, bound=FP32_ULP_BOUND["ATAN_YX"])


@pytest.mark.parametrize("function, reference", [("power", np.power), ("arctan2", np.arctan2)])
def test_special_values_follow_c(device, function, reference):
    """C99's special cases (NumPy's float32 ufuncs follow them): every special value meets
    every other, both orders; exact where the result is a zero, a one, an infinity or NaN,
    within the bound elsewhere."""
    extra = np.array([0.25, -0.25, 3.0, -3.0, 4.0, -4.0, 2.5, -2.5, 0.75, -0.75], np.float32)
    values = np.concatenate([SPECIALS, extra])
    a, b = (np.array(v, np.float32) for v in zip(*itertools.product(values, values)))
    got = getattr(dml, function)(a, b, device=device)
    with np.errstate(all="ignore"):
        expected = reference(a, b)
    exact = np.isnan(expected) | np.isinf(expected) | (expected == 0) | (np.abs(expected) == 1)
    same = (got.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got) & np.isnan(expected))
    wrong = exact & ~same
    assert not wrong.any(), (f"{function}({a[wrong][0]!r}, {b[wrong][0]!r}) = {got[wrong][0]!r}, not "
                             f"{expected[wrong][0]!r}")
    name = "POW" if function == "power" else "ATAN_YX"
    assert_within_bound(got[~exact], [a[~exact], b[~exact]], name, T.FLOAT32, bound=FP32_ULP_BOUND[name])


# Signalling and quiet NaNs of both signs, with payloads (docs/numerics.md, "Which NaN").
NAN_BITS = np.array([0x7F800001, 0xFF812345, 0x7FC00001, 0xFFC54321], np.uint32)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sigmoid", "tanh", "element_wise_tanh", "sin", "cos", "tan",
                                  "arcsin", "arccos", "sinh", "cosh", "erf"])
def test_a_one_argument_function_returns_a_nan_argument_as_it_came(device, name):
    got = np.asarray(getattr(dml, name)(NAN_BITS.view(np.float32), device=device))
    assert np.array_equal(got.view(np.uint32), NAN_BITS)


def test_atan_returns_a_nan_argument_made_quiet(device):
    got = np.asarray(dml.arctan(NAN_BITS.view(np.float32), device=device))
    assert np.array_equal(got.view(np.uint32), NAN_BITS | 0x00400000)


def test_constant_pow_is_pow_with_a_scalar_exponent(device):
    rng = np.random.default_rng(13)
    x = np.concatenate([rng.uniform(-4, 4, 1 << 14).astype(np.float32), SPECIALS])
    for exponent in (2.0, -1.0, 0.5, 3.0, -2.5, 0.0, 1.0 / 3.0):
        got = dml.constant_pow(x, exponent=exponent, device=device)
        same_as_power = dml.power(x, np.full_like(x, np.float32(exponent)), device=device)
        assert np.array_equal(got.view(np.uint32), same_as_power.view(np.uint32)), exponent


@pytest.mark.parametrize("function, reference", [("fmod", np.fmod), ("remainder", np.remainder)])
def test_float_moduli_are_numpys_bit_for_bit(device, function, reference):
    rng = np.random.default_rng(14)
    values = np.concatenate([SPECIALS, np.array([0.25, -0.25, 3.0, -3.0, 7.5, -7.5], np.float32)])
    pairs = np.array(list(itertools.product(values, values)), np.float32)
    a = np.concatenate([pairs[:, 0], random_bits(1 << 16, rng), rng.uniform(-100, 100, 1 << 16).astype(np.float32)])
    b = np.concatenate([pairs[:, 1], random_bits(1 << 16, rng), rng.uniform(-10, 10, 1 << 16).astype(np.float32)])
    got = getattr(dml, function)(a, b, device=device)
    with np.errstate(all="ignore"):
        expected = reference(a, b)
    same = (got.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got) & np.isnan(expected))
    assert same.all(), f"{function}({a[~same][0]!r}, {b[~same][0]!r}) = {got[~same][0]!r}, not {expected[~same][0]!r}"
