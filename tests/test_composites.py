"""NumPy's functions that are several DirectML operators: not_equal (`!=`) and floor_divide
(`//`, and divmod with `%`), on NumPy and device arrays, against NumPy's own bits."""

import itertools

import ml_dtypes
import numpy as np
import pytest

import dmlpy as dml

FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 3.0, 7.0, -7.0, 0.1, 0.3, 1 / 3, 1e-45, -1e-45, 1e-38, 3e38,
          -3e38, np.inf, -np.inf, np.nan, 2.0**24, 2.0**24 + 2, 1e10, -1e10, 1e-3]


def pairs(values, dtype):
    a, b = zip(*itertools.product(values, values))
    with np.errstate(all="ignore"):
        return np.array(a).astype(dtype), np.array(b).astype(dtype)


def same_bits(got, want) -> bool:
    """Equal bits, or NaN on both sides (NaN's sign and payload are not NumPy's promise)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind in "iu":
        return got.dtype == want.dtype and np.array_equal(got, want)
    wide_got, wide_want = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(wide_got) & np.isnan(wide_want)
    bits = np.dtype(f"u{got.itemsize}")
    return got.dtype == want.dtype and bool(np.all(nan | (got.view(bits) == want.view(bits))))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_floor_divide_of_floats_has_numpys_bits_on_special_values(device, dtype):
    a, b = pairs(FLOATS, dtype)
    with np.errstate(all="ignore"):
        want = np.floor_divide(a, b)
    assert same_bits(dml.floor_divide(a, b, device=device), want)
    da, db = dml.asarray(a, device=device), dml.asarray(b, device=device)
    assert same_bits((da // db).numpy(), want)
    assert same_bits(np.floor_divide(da, db).numpy(), want)


def test_floor_divide_of_random_floats_has_numpys_bits(device):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(20_000) * 10.0 ** rng.integers(-3, 6, 20_000)).astype(np.float32)
    b = (rng.standard_normal(20_000) * 10.0 ** rng.integers(-3, 3, 20_000)).astype(np.float32)
    assert same_bits(dml.floor_divide(a, b, device=device), np.floor_divide(a, b))
    assert same_bits(dml.floor_divide(a, 0.1, device=device), np.floor_divide(a, np.float32(0.1)))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])
def test_floor_divide_of_integers_is_numpys_with_zero_divisors_and_extremes(device, dtype):
    info = np.iinfo(dtype)
    values = sorted({0, 1, 2, 3, 7, info.max, info.max - 1, info.min, info.min + 1, max(info.min, -1),
                     max(info.min, -3), max(info.min, -7)})
    a, b = pairs(values, dtype)
    with np.errstate(all="ignore"):
        want, remainder = np.floor_divide(a, b), np.remainder(a, b)
    assert same_bits(dml.floor_divide(a, b, device=device), want)
    da, db = dml.asarray(a, device=device), dml.asarray(b, device=device)
    quotient, modulus = divmod(da, db)
    assert same_bits(quotient.numpy(), want) and same_bits(modulus.numpy(), remainder)


def test_python_numbers_take_the_arrays_dtype_on_either_side(device):
    x = np.array([-7, -1, 0, 5, 9], np.int32)
    dx = dml.asarray(x, device=device)
    assert same_bits((dx // 2).numpy(), x // 2) and same_bits((20 // dx[3:]).numpy(), 20 // x[3:])
    assert same_bits(divmod(-9, dx[3:])[0].numpy(), -9 // x[3:])
    f = np.array([-7.5, -0.0, 0.25, 9.0], np.float32)
    assert same_bits((dml.asarray(f, device=device) // -2).numpy(), f // np.float32(-2))
    with pytest.raises(dml.InvalidArgumentError, match=r"^b 0\.5 does not fit the arrays' dtype int32"):
        _ = dx // 0.5


def test_floor_divide_of_bfloat16_is_refused_by_name(device):
    a = np.ones(3, ml_dtypes.bfloat16)
    for given in (a, dml.asarray(a, device=device)):
        with pytest.raises(dml.UnsupportedError, match=r"^floor_divide of bfloat16: .* CAST takes no BFLOAT16; "
                                                       r"convert the arrays first, e\.g\. a\.astype\(np\.float32\)"):
            dml.floor_divide(given, 2.0, device=device)


def test_a_type_no_step_takes_is_refused_in_the_callers_name(device):
    for function in (dml.floor_divide, dml.not_equal):
        with pytest.raises(dml.InvalidArgumentError, match=rf"^{function.__name__}: a has dtype float64, which "
                                                           r"ELEMENT_WISE_(DIVIDE|LOGICAL_EQUALS) does not take"):
            function(np.ones(2), np.ones(2), device=device)


def test_floor_divide_writes_out_and_keeps_the_operators_rules(device):
    a, b = np.array([7.0, -7.0], np.float32), np.array([2.0, 2.0], np.float32)
    out = np.empty(2, np.float32)
    assert dml.floor_divide(a, b, out=out, device=device) is out and out.tolist() == [3.0, -4.0]
    with pytest.raises(dml.InvalidArgumentError, match=r"b\.dtype float16 != a\.dtype float32"):
        dml.floor_divide(a, b.astype(np.float16), device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"does not broadcast"):
        dml.floor_divide(a, np.ones(3, np.float32), device=device)


def test_not_equal_is_numpys_and_nan_differs_from_itself(device):
    a, b = pairs(FLOATS, np.float32)
    want = np.not_equal(a, b).astype(np.uint8)
    assert np.array_equal(dml.not_equal(a, b, device=device), want)
    da = dml.asarray(a, device=device)
    for got in (da != dml.asarray(b, device=device), np.not_equal(da, b)):
        assert isinstance(got, dml.DeviceArray) and got.dtype == np.uint8 and np.array_equal(got.numpy(), want)
    assert (dml.asarray(np.arange(3, dtype=np.int32), device=device) != 1).tolist() == [1, 0, 1]


def test_a_device_array_chain_of_floor_divisions_runs_as_one_kernel(device, monkeypatch):
    compiled = []
    original = dml.Device.compile_graph
    monkeypatch.setattr(dml.Device, "compile_graph",
                        lambda self, graph, flags=0: compiled.append(original(self, graph, flags)) or compiled[-1])
    a = np.arange(-50, 50, dtype=np.int32)
    got = ((dml.asarray(a, device=device) // 7) != 2).numpy()
    assert np.array_equal(got, ((a // 7) != 2).astype(np.uint8))
    assert len(compiled[-1].kernels) == 1


def test_unary_plus_and_shifts_are_pythons_operators_on_device_arrays(device):
    u = np.array([1, 2, 200], np.uint8)
    du = dml.asarray(u, device=device)
    copy = +du
    assert copy is not du and copy.tolist() == [1, 2, 200]
    assert (du << 1).tolist() == (u << 1).tolist() and (du >> 1).tolist() == (u >> 1).tolist()
    assert (np.uint8(1) << du[:2]).tolist() == [2, 4]
    with pytest.raises(dml.InvalidArgumentError, match=r"a has dtype int32, which ELEMENT_WISE_BIT_SHIFT_LEFT does "
                                                       r"not take"):
        _ = dml.asarray(np.arange(3, dtype=np.int32), device=device) << 1
