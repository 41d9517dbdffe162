"""Every activation of the operator table, forward and backward, against the independent
references in reference.py: exhaustively over every FP16 and BF16 bit pattern, over FP32
special values and a dense sweep, on strided and broadcast layouts; and the gating each
row implies (feature levels, dimension counts per level, data types, strict mode)."""

import inspect

import ml_dtypes
import numpy as np
import pytest
from reference import REFERENCES, REFERENCES_F64

import dmlpy as dml
from dmlpy.ir import expr
from dmlpy.ops.activations import TABLE

T = dml.TensorDataType
FL = dml.FeatureLevel

# Scalars for the operators whose scalars DirectML gives no default.
REQUIRED_SCALARS = {"alpha": 1.5, "beta": -0.25}

# DirectML's documented defaults (the activation catalogue), written out independently of
# the table so that a wrong default in a row fails here.
DIRECTML_DEFAULTS = {
    "leaky_relu": {"alpha": 0.01}, "thresholded_relu": {"alpha": 1.0},
    "hard_sigmoid": {"alpha": 0.2, "beta": 0.5}, "shrink": {"bias": 0.0, "threshold": 0.5},
    "hard_swish": {"alpha": float(np.float32(1 / 6)), "beta": 0.5},
    "linear": {"alpha": inspect.Parameter.empty, "beta": inspect.Parameter.empty},
}

# The integer types DirectML's catalogue gives each operator (all from FEATURE_LEVEL_5_1).
SIGNED = (T.INT32, T.INT16, T.INT8)
DIRECTML_INTEGERS = {"relu": SIGNED, "parameterized_relu": SIGNED,
                     "shrink": (*SIGNED, T.UINT32, T.UINT16, T.UINT8)}
INTEGER_NUMPY = {T.INT32: np.int32, T.INT16: np.int16, T.INT8: np.int8,
                 T.UINT32: np.uint32, T.UINT16: np.uint16, T.UINT8: np.uint8}
# FP32 scalars that probe exact integer math: fractions, -0, a subnormal, the edges of
# every integer range, and values past them.
INTEGER_SCALAR_PROBES = (0.5, -2.5, -0.0, 1e-45, 126.5, 127.0, -128.0, 32767.5, 65535.0, 2147483648.0,
                         -2147483648.0, 4294967040.0, 1e10, -1e10, 3.0)

ALL_ELEMENTWISE = [name for row in TABLE if row.axes_form is None
                   for name in (row.name, f"{row.name}_grad" if row.gradient else None) if name]
# Bit-exact against their references; the rest (transcendental) in test_transcendentals.py.
ELEMENTWISE = [name for name in ALL_ELEMENTWISE if name in REFERENCES]
UNARY = [name for name in ELEMENTWISE if len(dml.OPERATORS[name].inputs) == 1]
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16}
BITS = {T.FLOAT16: np.uint16, T.BFLOAT16: np.uint16, T.FLOAT32: np.uint32}


def scalars_for(name):
    schema = dml.OPERATORS[name]
    values = {}
    for scalar in schema.scalars:
        default = inspect.signature(getattr(dml, name)).parameters[scalar.name].default
        values[scalar.name] = REQUIRED_SCALARS[scalar.name] if default is inspect.Parameter.empty else default
    return values


def operands(name, x, rng):
    """x, then every further input: random values of x's dtype and shape."""
    extra = len(dml.OPERATORS[name].inputs) - 1
    return [x, *[(rng.standard_normal(x.shape) * 3).astype(x.dtype) for _ in range(extra)]]


def assert_bits_equal(got, expected, data_type):
    """Bit for bit; where the reference is NaN, any NaN."""
    bits = BITS[data_type]
    nan = np.isnan(expected.astype(np.float32))
    assert np.isnan(got.astype(np.float32))[nan].all()
    mismatch = np.flatnonzero(got.view(bits)[~nan] != expected.view(bits)[~nan])
    assert mismatch.size == 0, (f"{mismatch.size} elements differ; first inputs and results: "
                                f"{got[~nan][mismatch[:4]]} vs {expected[~nan][mismatch[:4]]}")


def test_every_operator_has_an_independent_reference():
    missing = [name for name in ALL_ELEMENTWISE if name not in REFERENCES and name not in REFERENCES_F64]
    assert not missing, f"operators without a reference in tests/reference.py: {missing}"


@pytest.mark.parametrize("data_type", [T.FLOAT16, T.BFLOAT16])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_every_16_bit_input(device, name, data_type):
    x = np.arange(1 << 16, dtype=np.uint16).view(NUMPY[data_type])
    args = operands(name, x, np.random.default_rng(7))
    scalars = scalars_for(name)
    got = getattr(dml, name)(*args, **scalars, device=device)
    assert_bits_equal(got, np.asarray(REFERENCES[name](*args, **scalars)), data_type)


FP32_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, -1.1754944e-38,
                          3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, -0.5, 3.0, -3.0, 2.9999998, 1e-30, -1e30],
                         np.float32)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_fp32_special_values_and_a_dense_sweep(device, name):
    rng = np.random.default_rng(11)
    sweep = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([FP32_SPECIALS, sweep, np.linspace(-8, 8, 4097, dtype=np.float32)])
    args = operands(name, x, rng)
    if len(args) > 1:  # the specials meet every special dY too
        args[1][:FP32_SPECIALS.size] = np.roll(FP32_SPECIALS, 3)
    scalars = scalars_for(name)
    got = getattr(dml, name)(*args, **scalars, device=device)
    assert_bits_equal(got, np.asarray(REFERENCES[name](*args, **scalars)), T.FLOAT32)


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_strided_broadcast_and_in_place_layouts(device, name, data_type):
    rng = np.random.default_rng(5)
    dtype = NUMPY[data_type]
    x = (rng.standard_normal((33, 17)) * 3).astype(dtype).T  # transposed
    args = operands(name, x, rng)
    if len(args) > 1:
        args[1] = np.broadcast_to((rng.standard_normal(33) * 3).astype(dtype), (17, 33))  # a zero stride
    scalars = scalars_for(name)
    expected = np.asarray(REFERENCES[name](*args, **scalars))
    base = np.full((34, 40), 7, dtype)
    out = base[::2, 3:36]  # a strided out with gaps that must survive
    getattr(dml, name)(*args, **scalars, out=out, device=device)
    assert_bits_equal(out, expected, data_type)
    assert np.all(base[1::2] == 7) and np.all(base[:, :3] == 7) and np.all(base[:, 36:] == 7)
    in_place = args[0].copy()
    getattr(dml, name)(in_place, *args[1:], **scalars, out=in_place, device=device)
    assert_bits_equal(in_place, expected, data_type)


@pytest.mark.parametrize("name", sorted(DIRECTML_DEFAULTS))
def test_front_end_defaults_are_directmls(name):
    parameters = inspect.signature(getattr(dml, name)).parameters
    for scalar, default in DIRECTML_DEFAULTS[name].items():
        assert parameters[scalar].default == default, (name, scalar)
        gradient = getattr(dml, f"{name}_grad", None)
        if gradient is not None:
            assert inspect.signature(gradient).parameters[scalar].default == default


def sizes_of(row, dims):
    """dims sizes of 2; a row-wise operator without axes takes effective rank 2 at most."""
    return (1,) * (dims - min(dims, 2)) + (2,) * min(dims, 2) if row.axes_form else (2,) * dims


def desc_of(name, data_type=T.FLOAT32, sizes=None):
    row = next(row for row in TABLE if name in (row.name, f"{row.name}_grad"))
    tensor = dml.BufferTensorDesc(data_type, sizes or sizes_of(row, 4))
    schema = dml.OPERATORS[name]
    return schema.desc_class(*[tensor] * len(schema.tensors), **scalars_for(name))


@pytest.mark.parametrize("row", TABLE, ids=[row.name for row in TABLE])
def test_forward_gating_follows_directmls_ladder(device_at, row):
    """4 dims from the operator's level; at FEATURE_LEVEL_1_0 exactly 4, at 2_0 4-5, from 3_0 1-8."""
    level = row.introduced
    device_at(level).create_operator(desc_of(row.name))
    if level > FL.LEVEL_1_0:
        below = max(lv for lv in FL if lv < level)
        with pytest.raises(dml.UnsupportedError, match=f"needs {level}"):
            device_at(below).create_operator(desc_of(row.name))
    for dims, first_level in ((3, FL.LEVEL_3_0), (5, FL.LEVEL_2_0 if level <= FL.LEVEL_2_0 else level),
                              (8, FL.LEVEL_3_0)):
        first_level = max(first_level, level)
        desc = desc_of(row.name, sizes=sizes_of(row, dims))
        device_at(first_level).create_operator(desc)
        earlier = [lv for lv in FL if level <= lv < first_level]
        for capped in earlier:
            with pytest.raises(dml.UnsupportedError, match="dimensions needs"):
                device_at(capped).create_operator(desc)


@pytest.mark.parametrize("row", TABLE, ids=[row.name for row in TABLE])
def test_data_types_and_strict_mode(device, device_at, row):
    strict = dml.create_device(strict_directml=True)
    try:
        strict.create_operator(desc_of(row.name))
        with pytest.raises(dml.UnsupportedError, match="BFLOAT16 is a dmlpy extension"):
            strict.create_operator(desc_of(row.name, T.BFLOAT16))
        if row.gradient is not None:
            gradient = desc_of(f"{row.name}_grad")
            if row.name == "relu":  # DirectML's own RELU_GRAD
                strict.create_operator(gradient)
            else:
                with pytest.raises(dml.UnsupportedError, match="is a dmlpy extension"):
                    strict.create_operator(gradient)
    finally:
        strict.close()
    integers = DIRECTML_INTEGERS.get(row.name, ())
    for data_type in (T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8):
        if data_type in integers:
            device.create_operator(desc_of(row.name, data_type))
            with pytest.raises(dml.UnsupportedError, match=f"{data_type.name}.*needs {FL.LEVEL_5_1}"):
                device_at(FL.LEVEL_5_0).create_operator(desc_of(row.name, data_type))
        else:
            with pytest.raises(dml.InvalidArgumentError, match="is not supported"):
                desc_of(row.name, data_type)


APPROXIMATED = [name for row in TABLE if row.approximations for name in (row.name, f"{row.name}_grad")]


@pytest.mark.parametrize("name", APPROXIMATED)
def test_approximate_is_checked_keyed_and_an_extension(device, name):
    x = np.linspace(-4, 4, 9, dtype=np.float32)
    args = [x] * len(dml.OPERATORS[name].inputs)
    front_end = getattr(dml, name)
    exact, approximate = front_end(*args, device=device), front_end(*args, approximate="tanh", device=device)
    assert not np.array_equal(exact, approximate)  # one compiled operator per form, never the other's
    assert np.array_equal(front_end(*args, device=device), exact)
    for bad in ("Tanh", "erf", None, 1):
        with pytest.raises(dml.InvalidArgumentError, match="must be one of 'none', 'tanh'") as raised:
            front_end(*args, approximate=bad, device=device)
        assert raised.value.field == "approximate"
    desc = dml.OPERATORS[name].desc_class(*[dml.BufferTensorDesc(T.FLOAT32, (9,))] * len(dml.OPERATORS[name].tensors),
                                          approximate="tanh")
    assert device.create_operator(desc).desc.approximate == "tanh"  # the device's copy keeps the form
    strict = dml.create_device(strict_directml=True)
    try:
        with pytest.raises(dml.UnsupportedError, match="dmlpy extension"):
            strict.create_operator(desc)
    finally:
        strict.close()


INTEGER_CASES = [(name, data_type) for row_name, types in DIRECTML_INTEGERS.items()
                 for name in (row_name, f"{row_name}_grad") if name in dml.OPERATORS and name in REFERENCES
                 for data_type in types
                 if any(data_type in support.data_types for support in dml.OPERATORS[name].support)]


@pytest.mark.parametrize(("name", "data_type"), INTEGER_CASES, ids=[f"{n}-{t.name}" for n, t in INTEGER_CASES])
def test_integers_are_exact_and_saturate(device, name, data_type):
    """Against exact integer math (Python integers and fractions), rounded toward zero and
    saturated, for the range's edges, random values and scalars that probe every edge."""
    dtype = INTEGER_NUMPY[data_type]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    edges = np.array([info.min, info.min + 1, -3, -2, -1, 0, 1, 2, 3, 126, 127, 128, info.max - 1, info.max])
    values = np.concatenate([edges.clip(info.min, info.max), rng.integers(info.min, info.max, 50, endpoint=True)])
    inputs = [rng.permutation(values).astype(dtype) if k else values.astype(dtype)
              for k in range(len(dml.OPERATORS[name].inputs))]
    names = [s.name for s in dml.OPERATORS[name].scalars]
    for shift in range(len(INTEGER_SCALAR_PROBES) if names else 1):
        scalars = {n: INTEGER_SCALAR_PROBES[(shift + 5 * k) % len(INTEGER_SCALAR_PROBES)] for k, n in enumerate(names)}
        got = getattr(dml, name)(*inputs, **scalars, device=device)
        expected = REFERENCES[name](*inputs, **scalars)
        mismatch = np.flatnonzero(got != expected)
        assert mismatch.size == 0, (scalars, [(tuple(int(a[i]) for a in inputs), got[i], expected[i])
                                              for i in mismatch[:5]])


def test_integer_math_without_an_exact_form_is_refused():
    """A row offering integers whose math is not exact integer math fails when declared."""
    x = expr.integer(expr.tensor(0))
    for build in (lambda: x * 0.5, lambda: expr.exp(x), lambda: -x, lambda: x / x, lambda: x + x,
                  lambda: expr.where(x > 0, x, 1.5), lambda: expr.integer(x)):
        with pytest.raises(TypeError):
            build()


def test_required_scalars_are_required():
    with pytest.raises(TypeError, match="alpha"):
        dml.linear(np.ones(3, np.float32))
    with pytest.raises(dml.InvalidArgumentError, match="Alpha must be finite"):
        dml.linear(np.ones(3, np.float32), float("nan"), 0.0)


def test_front_end_broadcasts_as_numpy_does(device):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    slope = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    got = dml.parameterized_relu(x, slope, device=device)
    assert np.array_equal(got, REFERENCES["parameterized_relu"](x, np.broadcast_to(slope, x.shape)))
    with pytest.raises(dml.InvalidArgumentError, match=r"dy has shape \(2, 4\), which does not broadcast with x's"):
        dml.relu_grad(x, np.ones((2, 4), np.float32), device=device)


def test_a_python_scalar_takes_the_arrays_dtype(device):
    x = np.array([-1, 2], np.float16)
    assert dml.relu_grad(x, 3.0, device=device).dtype == np.float16
