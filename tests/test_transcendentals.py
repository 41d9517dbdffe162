"""The operators built on dmlpy's own transcendental functions, against float64 references:
the error in ULP of the correctly rounded result over a dense FP32 sweep, every FP16 and
BF16 input, and the values the math fixes (no overflow where the result is finite)."""

import inspect

import ml_dtypes
import numpy as np
import pytest
from reference import FLOOR, REFERENCES_F64, ulp_error

import dmlpy as dml

# The most ULP each operator may be off in FP32, measured where the ULP is taken at
# max(|exact|, FLOOR, |dY|/8 for gradients): results below 2^-100 (subnormal
# intermediates) and gradients near their zeros (swish' crosses 0: the terms cancel) are held
# to an absolute bound instead. docs/numerics.md has the measured figures and the reasons.
FP32_ULP_BOUND = {name: 6.0 if name.endswith("_grad") else 3.5 for name in REFERENCES_F64}
# A scalar times X inside exp: the FP32 product's rounding moves the argument by up to
# |argument|·2^-24, which e^x turns into that much relative error (no extended-precision
# argument yet).
FP32_ULP_BOUND.update({"parametric_softplus": 96.0, "parametric_softplus_grad": 96.0})
REQUIRED_SCALARS = {"alpha": 1.5, "beta": -0.75}


def scalars_for(name):
    values = {}
    for scalar in dml.OPERATORS[name].scalars:
        default = inspect.signature(getattr(dml, name)).parameters[scalar.name].default
        values[scalar.name] = REQUIRED_SCALARS[scalar.name] if default is inspect.Parameter.empty else default
    return values


def inputs_for(name, x, rng):
    extra = len(dml.OPERATORS[name].inputs) - 1
    return [x, *[(rng.standard_normal(x.shape)).astype(x.dtype) for _ in range(extra)]]


@pytest.mark.parametrize("name", sorted(REFERENCES_F64))
def test_fp32_within_the_ulp_bound_over_a_dense_sweep(device, name):
    rng = np.random.default_rng(3)
    x = np.concatenate([np.linspace(-110, 110, 1 << 18, dtype=np.float32),
                        np.linspace(-1, 1, 1 << 16, dtype=np.float32),
                        rng.standard_normal(1 << 16).astype(np.float32) * 10,
                        np.array([0.0, -0.0, 1e-30, -1e-30, 1e-40, np.inf, -np.inf, np.nan], np.float32)])
    args = inputs_for(name, x, rng)
    scalars = scalars_for(name)
    got = getattr(dml, name)(*args, **scalars, device=device)
    exact = REFERENCES_F64[name](*args, **scalars)
    floor = np.fmax(FLOOR, np.abs(args[1].astype(np.float64)) / 8) if name.endswith("_grad") else FLOOR
    error = ulp_error(got, exact, np.float32, floor)
    worst = int(np.argmax(error))
    assert error.max() <= FP32_ULP_BOUND[name], (
        f"{name}: {error.max():.2f} ULP at x = {x[worst]!r}: got {got[worst]!r}, exact {exact[worst]!r}")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("name", sorted(REFERENCES_F64))
def test_every_16_bit_input_within_one_ulp(device, name, dtype):
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    args = inputs_for(name, x, np.random.default_rng(9))
    scalars = scalars_for(name)
    got = getattr(dml, name)(*args, **scalars, device=device)
    exact = REFERENCES_F64[name](*args, **scalars)
    error = ulp_error(got, exact, dtype)
    # Rounded once from FP32: off by at most one unit of the 16-bit type, and exact in most cases.
    assert error.max() <= 1.0, f"{name}: {error.max()} ULP at x = {x[int(np.argmax(error))]!r}"
    assert np.mean(error == 0) > 0.98


def test_the_math_does_not_overflow_where_the_result_is_finite(device):
    x = np.array([100, -100, 20, -20, 89, -104, 1e30, -1e30], np.float32)
    assert dml.softplus(x, device=device)[0] == 100 and dml.softplus(x, device=device)[6] == 1e30
    sigmoid = dml.sigmoid(x, device=device)
    assert np.isclose(sigmoid[1], 3.7200760e-44, rtol=0.05) and sigmoid[0] == 1 and sigmoid[7] == 0
    tanh = dml.tanh(x, device=device)
    assert tanh[2] == 1 and tanh[3] == -1
    assert dml.elu(x, device=device)[5] == -1 and dml.sigmoid_grad(x, np.ones_like(x), device=device)[6] == 0
    nan = np.array([np.nan], np.float32)
    for name in REFERENCES_F64:
        args = [nan] * len(dml.OPERATORS[name].inputs)
        assert np.isnan(getattr(dml, name)(*args, **scalars_for(name), device=device)).all(), name


def test_elu_use_dst_needs_nonnegative_alpha(device):
    y, dy = np.array([0.5, -0.5], np.float32), np.ones(2, np.float32)
    np.testing.assert_array_equal(dml.elu_grad(y, dy, use_dst=True, device=device), [1.0, 0.5])
    with pytest.raises(dml.InvalidArgumentError, match="Alpha >= 0"):
        dml.elu_grad(y, dy, -1.0, use_dst=True, device=device)


def test_use_dst_forms_follow_onednn(device):
    x = np.linspace(-4, 4, 101, dtype=np.float32)
    dy = np.ones_like(x)
    y = dml.tanh(x, device=device)
    expected = (dy * (1 - y)) * (1 + y)
    assert np.array_equal(dml.tanh_grad(y, dy, use_dst=True, device=device), expected)
    s = dml.sigmoid(x, device=device)
    assert np.array_equal(dml.sigmoid_grad(s, dy, use_dst=True, device=device), (dy * s) * (1 - s))


@pytest.mark.parametrize("name, field", [("celu", "alpha"), ("softplus", "steepness")])
def test_a_zero_divisor_scalar_is_refused(device, name, field):
    with pytest.raises(dml.InvalidArgumentError, match="must not be 0"):
        getattr(dml, name)(np.ones(2, np.float32), **{field: 0.0}, device=device)
