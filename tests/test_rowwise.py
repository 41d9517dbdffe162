"""The row-wise activations (SOFTMAX, LOG_SOFTMAX, HARDMAX, their *1 forms with axes, and
their gradients) against the independent float64 references in reference.py; their
stability, NaN and tie rules; the bits' independence of layout and chunking; and their
gating."""

import ml_dtypes
import numpy as np
import pytest
from changed_profile import cpu_profile
from reference import LONG_ROW_BOUNDS, REFERENCES_ROWWISE, ROWWISE_BOUNDS, assert_rowwise_matches, ulp_error
from reference_reduce import assert_same_bits

import dmlpy as dml
from dmlpy.ops.activations import TABLE

T = dml.TensorDataType
FL = dml.FeatureLevel
ROWS = [row for row in TABLE if row.axes_form is not None]
NAMES = [name for row in ROWS for name in (row.name, f"{row.name}_grad")]
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16}



def test_every_rowwise_operator_has_an_independent_reference():
    forms = [name for row in ROWS for name in (row.name, f"{row.name}1") for name in (name, f"{name}_grad")]
    assert all(name in dml.OPERATORS for name in forms)
    assert sorted(REFERENCES_ROWWISE) == sorted(forms)


def inputs_for(name, shape, dtype, rng, scale=4.0):
    x = (rng.standard_normal(shape) * scale).astype(dtype)
    return [x] if not name.endswith("_grad") else [x, rng.standard_normal(shape).astype(dtype)]


def check(name, got, inputs, axes, use_dst=False):
    assert_rowwise_matches(name, got, inputs, axes, use_dst)


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16, T.BFLOAT16])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape, axes", [((5, 7), None), ((3, 700), None), ((2, 3, 4), (0, 2)), ((4, 5, 6), (1,)),
                                         ((2, 600), (0, 1))])
def test_against_the_reference(device, name, data_type, shape, axes):
    rng = np.random.default_rng(11)
    inputs = inputs_for(name, shape, NUMPY[data_type], rng)
    got = getattr(dml, name)(*inputs, axes=axes, device=device)
    check(name, got, inputs, axes if axes is not None else (len(shape) - 1,))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmax_grad", "log_softmax_grad"])
def test_fp32_error_stays_within_the_documented_bound_across_row_lengths_and_scales(device, name):
    """Rows of 2 to 5,000 elements of N(0, s^2) inputs, s = 0.1, 1 and 4: where an FP32 sum's
    rounding, carried into every element by the division, is largest (docs/numerics.md)."""
    rng = np.random.default_rng(5)
    for length in np.unique(np.geomspace(2, 5000, 16).astype(int)):
        for scale in (0.1, 1.0, 4.0):
            inputs = inputs_for(name, (max(1, 6000 // length), length), np.float32, rng, scale)
            got = getattr(dml, name)(*inputs, axes=(1,), device=device)
            assert_rowwise_matches(name, got, inputs, (1,),
                                   bound=(ROWWISE_BOUNDS if length <= 1200 else LONG_ROW_BOUNDS)[name])


@pytest.mark.parametrize("name", ["softmax_grad", "log_softmax_grad"])
def test_fp32_gradient_from_x_equals_gradient_from_the_forwards_output(device, name):
    rng = np.random.default_rng(3)
    x, dy = inputs_for(name, (6, 300), np.float32, rng)
    y = getattr(dml, name.removesuffix("_grad"))(x, axes=(1,), device=device)
    from_x = getattr(dml, name)(x, dy, axes=(1,), device=device)
    from_y = getattr(dml, name)(y, dy, axes=(1,), use_dst=True, device=device)
    assert np.array_equal(from_x.view(np.uint8), from_y.view(np.uint8))
    check(name, from_y, [y, dy], (1,), use_dst=True)


@pytest.mark.parametrize("name", ["softmax_grad", "log_softmax_grad"])
@pytest.mark.parametrize("data_type", [T.FLOAT16, T.BFLOAT16])
def test_narrow_gradients_from_x_carry_fp32_y_and_round_once(device, name, data_type):
    """Each element within 2 ULP of the float64 gradient at its own magnitude (floored at
    FP16's smallest normal): where dY - sum(dY·Y) cancels too. Continuing from Y rounded to
    FP16 (the gradient from Y) is hundreds of ULP off there."""
    rng = np.random.default_rng(8)
    x, dy = inputs_for(name, (40, 100), NUMPY[data_type], rng)
    exact = REFERENCES_ROWWISE[name](x, dy, axes=(1,))
    got = getattr(dml, name)(x, dy, axes=(1,), device=device)
    assert ulp_error(got, exact, got.dtype, 2.0**-14).max() <= 2
    y = getattr(dml, name.removesuffix("_grad"))(x, axes=(1,), device=device)
    from_rounded_y = getattr(dml, name)(y, dy, axes=(1,), use_dst=True, device=device)
    assert ulp_error(from_rounded_y, exact, got.dtype, 2.0**-14).max() > 4  # what carrying Y in FP32 saves


def test_bits_do_not_depend_on_layout_or_chunking(device):
    """The same rows laid out transposed, and rows long enough to span several chunks,
    give the same bits: the sum's tree is over each row's elements in index order."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 6000)) * 5).astype(np.float32)  # two chunks of at most 4096
    packed = dml.softmax(x, device=device)
    transposed = dml.softmax(np.ascontiguousarray(x.T), axes=(0,), device=device).T
    assert np.array_equal(packed.view(np.uint32), transposed.view(np.uint32))
    as_1 = dml.softmax(x, axes=(1,), device=device)
    assert np.array_equal(packed.view(np.uint32), as_1.view(np.uint32))
    # Splitting the row over two axes changes nothing either (the same index order).
    split = dml.softmax(x.reshape(3, 60, 100), axes=(1, 2), device=device).reshape(3, 6000)
    assert np.array_equal(packed.view(np.uint32), split.view(np.uint32))


def test_stable_for_huge_inputs(device):
    x = np.array([[1e30, -1e30, 0.0, 1e30], [-1e30, -1e30, -1e30, -1e30]], np.float32)
    y = dml.softmax(x, device=device)
    assert np.array_equal(y, np.array([[0.5, 0, 0, 0.5], [0.25, 0.25, 0.25, 0.25]], np.float32))
    log_y = dml.log_softmax(x, device=device)
    assert log_y[0, 0] == np.float32(-np.log(2)) and log_y[0, 1] == np.float32(-2e30)
    assert np.all(log_y[1] == np.float32(-np.log(4)))


def test_specials(device):
    x = np.array([[np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0], [-np.inf, 0.0, -np.inf], [-np.inf] * 3], np.float32)
    y = dml.softmax(x, device=device)
    assert np.isnan(y[0]).all() and np.isnan(y[1]).all()  # as PyTorch: +inf or NaN in a row gives NaN
    assert np.array_equal(y[2], [0.0, 1.0, 0.0])
    assert np.isnan(y[3]).all()


def test_hardmax_ties_signed_zeros_and_nan(device):
    x = np.array([[1.0, 3.0, 3.0, 2.0], [-0.0, 0.0, -1.0, -0.0], [1.0, np.nan, 5.0, np.nan],
                  [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32)
    y = dml.hardmax(x, device=device)
    assert np.array_equal(y, np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]], np.float32))
    assert np.array_equal(dml.hardmax_grad(x, x, device=device).view(np.uint32), np.zeros(x.shape, np.uint32))


def test_directmls_axes_example(device):
    """DirectML's documented HARDMAX1 example (Axes {1} of a 2x2x2 tensor)."""
    x = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)
    expected = np.array([[[1, 0], [0, 1]], [[1, 1], [0, 0]]], np.float32)
    assert np.array_equal(dml.hardmax(x, axes=(1,), device=device), expected)


def test_front_end_axes_conventions(device):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    last = dml.softmax(x, device=device)
    assert np.array_equal(last, dml.softmax(x, axes=-1, device=device))
    assert np.array_equal(last, dml.softmax(x, axes=[2], device=device))
    out = np.empty_like(x)
    assert dml.log_softmax(x, axes=(0, 1), out=out, device=device) is out
    with pytest.raises(dml.InvalidArgumentError, match=r"axes \(0, 0\) repeats an axis"):
        dml.softmax(x, axes=(0, 0), device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"has axis 3: x has 3 dims, so each axis must lie in \[-3, 2\]"):
        dml.softmax(x, axes=(3,), device=device)
    with pytest.raises(dml.InvalidArgumentError, match="must be a tuple of ints"):
        dml.softmax(x, axes="last", device=device)


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_desc_rules_and_gating(device_at, row):
    forward = dml.OPERATORS[row.name].desc_class
    with_axes = dml.OPERATORS[f"{row.name}1"].desc_class
    tensor = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 3, 4))
    device_at(FL.LEVEL_1_0).create_operator(forward(tensor, tensor))
    with pytest.raises(dml.InvalidArgumentError, match="effective rank 3"):
        forward(*[dml.BufferTensorDesc(T.FLOAT32, (1, 2, 3, 4))] * 2)
    desc = with_axes(tensor, tensor, axes=(2, 3))
    device_at(FL.LEVEL_5_1).create_operator(desc)
    with pytest.raises(dml.UnsupportedError, match="needs FEATURE_LEVEL_5_1"):
        device_at(FL.LEVEL_5_0).create_operator(desc)
    assert with_axes(tensor, tensor, axes=[3]).axes == (3,)
    for axes, message in (((), "AxisCount must be at least 1"), ((4,), "must lie in"), ((1, 1), "repeats"),
                          ((True,), "tuple of ints"), (3, "tuple of ints")):
        with pytest.raises(dml.InvalidArgumentError, match=message):
            with_axes(tensor, tensor, axes=axes)
    gradient = dml.OPERATORS[f"{row.name}1_grad"].desc_class(tensor, tensor, tensor, axes=(3,))
    strict = dml.create_device(strict_directml=True)
    try:
        strict.create_operator(with_axes(tensor, tensor, axes=(3,)))
        with pytest.raises(dml.UnsupportedError, match="is a dmlpy extension"):
            strict.create_operator(gradient)
    finally:
        strict.close()
    other = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 3, 4))
    with pytest.raises(dml.InvalidArgumentError, match="overlap|in place"):
        compiled = device_at(FL.LEVEL_6_4).compile_operator(device_at(FL.LEVEL_6_4).create_operator(
            forward(tensor, other)))
        buffer = device_at(FL.LEVEL_6_4).create_buffer(tensor.total_tensor_size_in_bytes)
        temporary = device_at(FL.LEVEL_6_4).create_buffer(compiled.binding_properties.temporary_resource_size)
        device_at(FL.LEVEL_6_4).create_binding_table(compiled, inputs=[buffer], outputs=[buffer], temporary=temporary)


def test_cache_keys_distinguish_axes(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert not np.array_equal(dml.softmax(x, axes=(0,), device=device), dml.softmax(x, axes=(1,), device=device))


def rows_with_specials(rng, rows, length):
    """Rows of N(0, 16) values, then rows holding each special value: NaN, ±inf, ±0, subnormals
    (terms a flushing device's checked sums must redo exactly), huge and tiny magnitudes."""
    x = (rng.standard_normal((rows, length)) * 4).astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-42, 1e30, -1e30, 1e-30], np.float32)
    for row, value in zip(range(1, rows, 2), specials):
        x[row, rng.integers(0, length, max(1, length // 8))] = value
    return x


# Operators that walk a row more than once: softmax (a maximum, a sum; its exponentials kept
# for the outputs), softmax_grad from X (three reductions; the exponentials and Y kept), from
# Y (two inputs, one reduction), LOG_SUM_EXP (a row output alone). The reference tests above
# hold the rest of the family to its bits on whichever plan the device takes.
WALKED_AGAIN = {
    "softmax": lambda x, dy, device: dml.softmax(x, device=device),
    "softmax_grad": lambda x, dy, device: dml.softmax_grad(x, dy, device=device),
    "softmax_grad use_dst": lambda y, dy, device: dml.softmax_grad(y, dy, use_dst=True, device=device),
    "log_sum_exp": lambda x, dy, device: dml.reduce(x, "LOG_SUM_EXP", axes=(1,), device=device),
}


@pytest.mark.parametrize("length", [9, 1000, 2048])  # eight and one; all kept; the most that fits
def test_a_row_read_once_into_private_memory_gives_the_staged_plans_bits(device, tmp_path, length):
    """On a CPU device a row whose inputs and kept values fit in private memory is read once,
    and every reduction and the outputs walk that copy (the plan says so); elsewhere each
    reduction is a stage that reads the row again. The bits are the same: on lavapipe as it
    is, planned as a CPU device that flushes subnormals (sums of plain terms by the hardware,
    redone exactly otherwise), and planned as a GPU (NVIDIA's profile: the staged plan)."""
    flushing = cpu_profile(tmp_path, "lavapipe-flushing", denormals="flush")
    rng = np.random.default_rng(length)
    x = rows_with_specials(rng, 24, length)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    with dml.create_device(profile=flushing) as cpu_flushing, dml.create_device(profile="nvidia-h100") as gpu:
        for name, run in WALKED_AGAIN.items():
            results = [run(x, dy, d) for d in (device, cpu_flushing, gpu)]
            for got, planned_as in zip(results[1:], ("a flushing CPU device", "a GPU")):
                assert_same_bits(got, results[0], f"{name}, rows of {length}, planned as {planned_as}")
        desc = dml.ActivationSoftmaxOperatorDesc(*[dml.BufferTensorDesc(T.FLOAT32, x.shape)] * 2)
        for d in (device, cpu_flushing, gpu):
            reason = d.compile_operator(d.create_operator(desc)).plan.reason
            once = d.adapter.adapter_type == dml.AdapterType.CPU
            assert ("read once into private memory" in reason) == once, (d.adapter.name, reason)
