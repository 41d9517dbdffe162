"""HardSigmoid and PReLU gradients (dmlpy extensions from oneDNN) and ReLU grad's use_dst."""

import dataclasses

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from layout import assert_bytes_equal, element_offsets, random_bits, run_and_expect
from reference import dslope_error_bound, hard_sigmoid_grad, prelu_grad, relu_grad

import dmlpy as dml
from dmlpy.base.types import data_type_info

T = dml.TensorDataType
FLOATS = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16}
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def bits(array):
    return np.asarray(array).view(UNSIGNED[np.asarray(array).itemsize])


def assert_same(actual, expected):
    """Bit for bit, except that any NaN matches any NaN (payloads after arithmetic are the
    device's choice)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    nan = np.isnan(expected.astype(np.float32))
    assert np.array_equal(np.isnan(actual.astype(np.float32)), nan)
    assert np.array_equal(bits(actual)[~nan], bits(expected)[~nan])


def random_floats(rng, dtype, shape, scale=4.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# ---- HardSigmoid


@pytest.mark.parametrize("dtype", FLOATS.values(), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("alpha, beta", [(1 / 6, 0.5), (0.2, 0.5), (-0.25, 0.5), (3.0, -1.0), (1e-3, 0.999)])
def test_hard_sigmoid_grad_matches_reference(device, dtype, alpha, beta):
    rng = np.random.default_rng(1)
    x, dy = random_floats(rng, dtype, (7, 33)), random_floats(rng, dtype, (7, 33))
    assert_same(dml.hard_sigmoid_grad(x, dy, alpha=alpha, beta=beta, device=device),
                hard_sigmoid_grad(x, dy, alpha, beta))


@pytest.mark.parametrize("dtype", FLOATS.values(), ids=lambda d: np.dtype(d).name)
def test_hard_sigmoid_grad_on_every_special_value(device, dtype):
    edges = np.array([0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -3, 3, -2.999, 2.999, 65504, 1e-5], np.float32)
    x, dy = (a.ravel().astype(dtype) for a in np.meshgrid(edges, edges, indexing="ij"))
    assert_same(dml.hard_sigmoid_grad(x, dy, alpha=1 / 6, beta=0.5, device=device),
                hard_sigmoid_grad(x, dy, 1 / 6, 0.5))


@pytest.mark.parametrize("alpha, beta, x, inside", [
    (0.5, 0.5, -1.0, False),  # alpha*x + beta == 0 exactly: outside (strict)
    (0.5, 0.5, 1.0, False),  # == 1 exactly: outside (strict)
    (0.5, 0.5, -0.99999994, True),  # the sum is 2^-25: inside
    (0.5, 0.5, 0.99999994, False),  # the sum 1 - 2^-25 ties to even: exactly 1, outside
    (0.5, 0.5, 0.9999999, True),
    (1 / 6, 0.5, -3.0, False),  # torch's hardsigmoid_backward edges at -3 and 3
    (1 / 6, 0.5, 3.0, False),
    (1 / 6, 0.5, -2.9999998, True),
    (1 / 6, 0.5, 2.9999998, False),  # the one FP32 input where torch's -3 < x < 3 says inside
    (1 / 6, 0.5, 2.9999995, True),
    (-0.25, 0.5, 2.0, False),  # a negative alpha swaps the edges
    (-0.25, 0.5, -2.0, False),
    # float32(1/3) * 3 is 1.0000000298 exactly but rounds to 1.0, so the sum is exactly 0:
    # a fused multiply-add would keep 2.98e-8 and wrongly land inside.
    (1 / 3, -1.0, 3.0, False),
])
def test_hard_sigmoid_grad_boundaries_are_strict_and_unfused(device, alpha, beta, x, inside):
    xs = np.array([x], np.float32)
    result = dml.hard_sigmoid_grad(xs, np.ones(1, np.float32), alpha=alpha, beta=beta, device=device)
    assert result[0] == (np.float32(alpha) if inside else 0) and bits(result)[0] != 0x80000000
    assert_same(result, hard_sigmoid_grad(xs, np.ones(1, np.float32), alpha, beta))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=lambda d: np.dtype(d).name)
def test_torch_hardsigmoid_rule_holds_for_every_16_bit_input(device, dtype):
    """For alpha = 1/6, beta = 0.5 the result is torch's `-3 < x < 3 ? dy / 6 : 0` (with dy / 6
    computed as dy * float32(1/6)) for every FP16 and BF16 bit pattern."""
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(dtype)
    dy = np.ones_like(x)
    with np.errstate(invalid="ignore"):
        inside = (x.astype(np.float32) > -3) & (x.astype(np.float32) < 3)
    torch_rule = np.where(inside, np.float32(1) * np.float32(1 / 6), np.float32(0)).astype(dtype)
    assert np.array_equal(bits(dml.hard_sigmoid_grad(x, dy, alpha=1 / 6, beta=0.5, device=device)), bits(torch_rule))


def test_fp16_results_round_to_nearest_even_including_subnormals(device):
    dy = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    x = np.zeros_like(dy)
    for alpha in (0.1, 1 / 3, 0.001, 7.5, 2.0**-10):
        assert_same(dml.hard_sigmoid_grad(x, dy, alpha=alpha, beta=0.5, device=device),
                    hard_sigmoid_grad(x, dy, alpha, 0.5))


def test_hard_sigmoid_scalars_get_ieee_arithmetic_not_constant_folding(device):
    # With alpha = 0: dy * 0 is -0 for negative dy, and 0 * inf is NaN, so x = inf is outside.
    # A scalar baked into the shader lets a driver fold both to +0 and move the boundary.
    x = np.array([1, np.inf, -np.inf, np.nan], np.float32)
    dy = np.full(4, -2.0, np.float32)
    result = dml.hard_sigmoid_grad(x, dy, alpha=0.0, beta=0.5, device=device)
    assert bits(result).tolist() == [0x80000000, 0, 0, 0]
    assert_same(result, hard_sigmoid_grad(x, dy, 0.0, 0.5))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1e39, 10**400, "0.5", None, True])
@pytest.mark.parametrize("scalar", ["alpha", "beta"])
def test_hard_sigmoid_scalars_must_be_finite_fp32(scalar, value):
    tensor = dml.BufferTensorDesc(T.FLOAT32, (3,))
    arguments = {"alpha": 0.2, "beta": 0.5, scalar: value}
    with pytest.raises(dml.InvalidArgumentError, match=f"ActivationHardSigmoidGradOperatorDesc.{scalar}"):
        dml.ActivationHardSigmoidGradOperatorDesc(tensor, tensor, tensor, **arguments)


@settings(max_examples=40)
@given(dtype=st.sampled_from(list(FLOATS)), data=st.data())
def test_hard_sigmoid_grad_on_strided_layouts(device, dtype, data):
    sizes = (3, 5)
    layouts = [(5, 1), (1, 3), (0, 1), (10, 2), (1, 0)]
    output_layouts = [(5, 1), (1, 3), (10, 2)]  # no zero strides: an output writes each element once
    strides = [data.draw(st.sampled_from(layouts)) for _ in range(2)] + [data.draw(st.sampled_from(output_layouts))]
    tensors = [dml.BufferTensorDesc(dtype, sizes, s) for s in strides]
    desc = dml.ActivationHardSigmoidGradOperatorDesc(*tensors, alpha=0.25, beta=0.5)
    _, actual, expected = run_and_expect(device, desc, np.random.default_rng(data.draw(st.integers(0, 99))))
    # Random bits include NaN inputs, whose NaN results may differ in payload only.
    got = actual["output_gradient_tensor"].view(UNSIGNED[data_type_info(dtype).element_size])
    want = expected["output_gradient_tensor"].view(got.dtype)
    floats = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16}[dtype]
    assert_same(got.view(floats), want.view(floats))


# ---- ReLU grad with use_dst


def test_use_dst_takes_relu_output(device):
    x = np.array([-2, -0.0, 0, 1e-45, 3, np.nan, -np.inf, np.inf], np.float32)
    dy = np.arange(8, dtype=np.float32) + 1
    y = np.maximum(x, np.float32(0))
    assert np.array_equal(bits(dml.relu_grad(y, dy, use_dst=True, device=device)), bits(relu_grad(x, dy)))
    with pytest.raises(dml.InvalidArgumentError, match="use_dst"):
        dml.relu_grad(y, dy, use_dst="yes", device=device)


# ---- PReLU


def prelu_case(rng, dtype, x_shape, slope_shape):
    return (random_floats(rng, dtype, x_shape, 2.0), random_floats(rng, dtype, slope_shape, 0.5),
            random_floats(rng, dtype, x_shape, 2.0))


ONEDNN_RULES = [  # x shape, slope shape, data_format, slope broadcast to x (as a reshape)
    ((2, 3, 4, 5), (3,), "NCX", (1, 3, 1, 1)),
    ((2, 3, 4, 5), (5,), "NXC", (1, 1, 1, 5)),
    ((2, 3, 4, 5), (1,), "NCX", (1, 1, 1, 1)),
    ((2, 3, 4, 5), (1,), "NXC", (1, 1, 1, 1)),
    ((2, 3, 4, 5), (3, 4, 5), "NCX", (1, 3, 4, 5)),
    ((2, 3, 4, 5), (3, 4, 5), "NXC", (1, 3, 4, 5)),
    ((7, 600), (600,), "NXC", (1, 600)),
    ((600, 7), (7,), "NXC", (1, 7)),
    ((3, 1, 5), (1,), "NCX", (1, 1, 1)),
]


@pytest.mark.parametrize("dtype", FLOATS.values(), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("x_shape, slope_shape, data_format, broadcast", ONEDNN_RULES, ids=str)
def test_prelu_grad_follows_onednn_broadcasting(device, dtype, x_shape, slope_shape, data_format, broadcast):
    x, slope, dy = prelu_case(np.random.default_rng(len(x_shape)), dtype, x_shape, slope_shape)
    dx, dslope = dml.prelu_grad(x, slope, dy, data_format=data_format, device=device)
    reduced = tuple(axis for axis, size in enumerate(broadcast) if size == 1 and x_shape[axis] > 1)
    expected_dx, exact, magnitudes = prelu_grad(x, np.broadcast_to(slope.reshape(broadcast), x_shape), dy, reduced)
    assert_same(dx, expected_dx)
    assert dslope.shape == slope.shape and dslope.dtype == x.dtype
    count = int(np.prod([x_shape[a] for a in reduced]))
    error = np.abs(dslope.astype(np.float64) - exact.reshape(slope.shape))
    assert np.all(error <= dslope_error_bound(magnitudes.reshape(slope.shape), count, dtype))


@pytest.mark.parametrize("x_shape, slope_shape, data_format", [
    ((2, 3, 4), (4,), "NCX"), ((2, 3, 4), (3,), "NXC"), ((2, 3, 4), (2,), "NXC"),
    ((2, 3, 4), (2, 3, 4), "NXC"), ((2, 3, 4), (3, 1), "NCX"), ((2, 3, 4), (1, 1), "NCX"),
])
def test_prelu_grad_rejects_slopes_outside_the_rules(device, x_shape, slope_shape, data_format):
    x, slope, dy = prelu_case(np.random.default_rng(0), np.float32, x_shape, slope_shape)
    with pytest.raises(dml.InvalidArgumentError, match="oneDNN's PReLU broadcasting rules"):
        dml.prelu_grad(x, slope, dy, data_format=data_format, device=device)


def test_prelu_grad_front_end_argument_errors(device):
    x, slope, dy = prelu_case(np.random.default_rng(0), np.float32, (2, 3), (3,))
    with pytest.raises(dml.InvalidArgumentError, match="data_format"):
        dml.prelu_grad(x, slope, dy, data_format="NHWC", device=device)
    with pytest.raises(dml.InvalidArgumentError, match="slope.dtype float16 != x.dtype float32"):
        dml.prelu_grad(x, slope.astype(np.float16), dy, device=device)
    with pytest.raises(dml.InvalidArgumentError, match="dy.shape"):
        dml.prelu_grad(x, slope, dy[:1], device=device)
    with pytest.raises(dml.InvalidArgumentError, match="INT32"):
        dml.prelu_grad(x.astype(np.int32), slope.astype(np.int32), dy.astype(np.int32), device=device)


def run_prelu(device, desc, arrays, temporary_size=None):
    """Execute a prelu desc over packed buffers; returns (dx, dslope) arrays."""
    compiled = device.compile_operator(device.create_operator(desc))
    tensors = [getattr(desc, f.name) for f in desc.schema.tensors]
    buffers = [device.create_buffer(t.total_tensor_size_in_bytes) for t in tensors]
    for buffer, array in zip(buffers, arrays):
        buffer.write(array)
    size = compiled.binding_properties.temporary_resource_size if temporary_size is None else temporary_size
    temporary = device.create_buffer(max(size, 1))
    table = device.create_binding_table(compiled, inputs=buffers[:3], outputs=buffers[3:],
                                        temporary=dml.BufferBinding(temporary, 0, size))
    device.execute(table)
    dtype = arrays[0].dtype
    return (buffers[3].read(dtype, tensors[3].element_count), buffers[4].read(dtype, tensors[4].element_count))


def per_channel_desc(data_type, sizes, channel_axis):
    slope_strides = tuple(1 if axis == channel_axis else 0 for axis in range(len(sizes)))
    dslope_sizes = tuple(size if axis == channel_axis else 1 for axis, size in enumerate(sizes))
    x = dml.BufferTensorDesc(data_type, sizes)
    return dml.ActivationParameterizedReluGradOperatorDesc(
        x, dml.BufferTensorDesc(data_type, sizes, slope_strides), x, x, dml.BufferTensorDesc(data_type, dslope_sizes))


def test_prelu_grad_is_bit_identical_across_runs_and_workgroup_sizes():
    rng = np.random.default_rng(3)
    sizes = (37, 3, 41)  # 1517 terms per channel: six chunks, the last one partial
    x, slope, dy = prelu_case(rng, np.float32, sizes, (3,))
    desc = per_channel_desc(T.FLOAT32, sizes, 1)
    results = []
    for workgroup_limit in (256, 128, 64, 32):
        with dml.create_device() as device:
            device.adapter = dataclasses.replace(device.adapter, max_compute_work_group_invocations=workgroup_limit)
            compiled = device.compile_operator(device.create_operator(desc))
            assert compiled.plan.stages[0].workgroup_size == workgroup_limit
            for _ in range(2):
                results.append(run_prelu(device, desc, [x, slope, dy]))
    for dx, dslope in results[1:]:
        assert np.array_equal(bits(dx), bits(results[0][0])) and np.array_equal(bits(dslope), bits(results[0][1]))


def test_prelu_temporary_resource_rules(device):
    sizes = (4, 5000)
    desc = per_channel_desc(T.FLOAT32, sizes, 0)
    compiled = device.compile_operator(device.create_operator(desc))
    required = compiled.binding_properties.temporary_resource_size
    assert required == 4 * 4 * (1 + 2)  # four channels: a total and two chunk partials (4096 terms at most) each
    assert compiled.binding_properties.required_descriptor_count == 6
    buffers = [device.create_buffer(t.total_tensor_size_in_bytes)
               for t in (desc.input_tensor, desc.slope_tensor, desc.input_gradient_tensor,
                         desc.output_gradient_tensor, desc.output_slope_gradient_tensor)]
    with pytest.raises(dml.InvalidArgumentError, match="temporary is None: ACTIVATION_PARAMETERIZED_RELU_GRAD needs "
                                                       "a temporary resource of .* 48 bytes"):
        device.create_binding_table(compiled, inputs=buffers[:3], outputs=buffers[3:])
    with pytest.raises(dml.InvalidArgumentError, match="temporary.size_in_bytes 16 is smaller than "
                                                       "temporary_resource_size 48"):
        device.create_binding_table(compiled, inputs=buffers[:3], outputs=buffers[3:],
                                    temporary=dml.BufferBinding(device.create_buffer(64), 0, 16))
    with pytest.raises(dml.InvalidArgumentError, match="overlap"):
        device.create_binding_table(compiled, inputs=buffers[:3], outputs=buffers[3:], temporary=buffers[3])
    with pytest.raises(dml.InvalidArgumentError, match="overlap"):
        device.create_binding_table(compiled, inputs=buffers[:3], outputs=[buffers[3], buffers[3]],
                                    temporary=device.create_buffer(required))


@pytest.mark.parametrize("change, message", [
    ({"output_slope_gradient_tensor": (T.FLOAT32, (1, 3, 4))}, "must be 1 on each dim where slope_tensor broadcasts"),
    ({"output_slope_gradient_tensor": (T.FLOAT32, (2, 3, 1))}, "must be 1 on each dim where slope_tensor broadcasts"),
    ({"slope_tensor": (T.FLOAT32, (2, 3, 5), (0, 1, 0))}, "slope_tensor.sizes (2, 3, 5) != input_tensor.sizes"),
    ({"output_slope_gradient_tensor": (T.FLOAT16, (1, 3, 1))}, "output_slope_gradient_tensor.data_type"),
    ({"output_slope_gradient_tensor": (T.FLOAT32, (3, 1))}, "output_slope_gradient_tensor.dimension_count 2"),
])
def test_prelu_desc_rules(change, message):
    desc = per_channel_desc(T.FLOAT32, (2, 3, 4), 1)
    fields = {f.name: getattr(desc, f.name) for f in desc.schema.tensors}
    fields.update({name: dml.BufferTensorDesc(*value) for name, value in change.items()})
    with pytest.raises(dml.InvalidArgumentError) as error:
        dml.ActivationParameterizedReluGradOperatorDesc(**fields)
    assert message in str(error.value)


@settings(max_examples=40)
@given(dtype=st.sampled_from(list(FLOATS)), data=st.data())
def test_prelu_grad_on_strided_layouts_touches_nothing_else(device, dtype, data):
    """x, dy, dx and dSlope each take a permutation and padding; the slope broadcasts along
    a random set of dims."""
    rank = data.draw(st.integers(1, 4))
    sizes = tuple(data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    broadcast = tuple(data.draw(st.lists(st.booleans(), min_size=rank, max_size=rank)))

    def strides(shape):
        order, result, extent = data.draw(st.permutations(range(rank))), [0] * rank, 1
        for dim in reversed(order):
            result[dim] = extent
            extent = extent * shape[dim] + data.draw(st.integers(0, 2))
        return tuple(result)

    data_type = dtype
    slope_sizes = tuple(1 if b else s for b, s in zip(broadcast, sizes))
    slope_strides = tuple(0 if b else s for b, s in zip(broadcast, strides(slope_sizes)))
    descs = [dml.BufferTensorDesc(data_type, sizes, strides(sizes)),
             dml.BufferTensorDesc(data_type, sizes, slope_strides),
             dml.BufferTensorDesc(data_type, sizes, strides(sizes)),
             dml.BufferTensorDesc(data_type, sizes, strides(sizes)),
             dml.BufferTensorDesc(data_type, tuple(1 if b and s > 1 else s for b, s in zip(broadcast, sizes)),
                                  strides(slope_sizes))]
    desc = dml.ActivationParameterizedReluGradOperatorDesc(*descs)
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    numpy_dtype = FLOATS[dtype]
    element = data_type_info(dtype).element_size
    contents = []
    for tensor in descs:
        raw = random_bits(rng, tensor.total_tensor_size_in_bytes, 1)
        if tensor is not descs[3] and tensor is not descs[4]:  # finite inputs keep sums comparable
            span = raw[: len(raw) // element * element].view(numpy_dtype)
            span[...] = random_floats(rng, numpy_dtype, span.shape, 2.0)
        contents.append(raw)

    def gather(index):
        tensor = descs[index]
        span = contents[index][: len(contents[index]) // element * element].view(UNSIGNED[element])
        return span[element_offsets(tensor.sizes, tensor.element_strides)].view(numpy_dtype)

    compiled = device.compile_operator(device.create_operator(desc))
    buffers = [device.create_buffer(len(c)) for c in contents]
    for buffer, raw in zip(buffers, contents):
        buffer.write(raw)
    temporary = device.create_buffer(max(4, compiled.binding_properties.temporary_resource_size))
    device.execute(device.create_binding_table(compiled, inputs=buffers[:3], outputs=buffers[3:], temporary=temporary))
    x, slope, dy = gather(0), gather(1), gather(2)
    reduced = tuple(a for a in range(rank) if broadcast[a] and sizes[a] > 1)
    expected_dx, exact, magnitudes = prelu_grad(x, slope, dy, reduced)
    expected = contents[3].copy()
    view = expected[: len(expected) // element * element].view(UNSIGNED[element])
    view[element_offsets(sizes, descs[3].element_strides)] = bits(expected_dx)
    actual_dx = buffers[3].read(np.uint8, len(expected))
    assert_bytes_equal(actual_dx, expected, element, "dX")
    actual_slope = buffers[4].read(np.uint8, len(contents[4]))
    slope_span = actual_slope[: len(actual_slope) // element * element].view(UNSIGNED[element])
    offsets = element_offsets(descs[4].sizes, descs[4].element_strides)
    untouched = np.ones(slope_span.size, bool)
    untouched[offsets.ravel()] = False
    original = contents[4][: len(contents[4]) // element * element].view(UNSIGNED[element])
    assert np.array_equal(slope_span[untouched], original[untouched]), "bytes beside dSlope changed"
    got = slope_span[offsets].view(numpy_dtype).astype(np.float64)
    count = int(np.prod([sizes[a] for a in reduced])) if reduced else 1
    assert np.all(np.abs(got - exact) <= dslope_error_bound(magnitudes, count, numpy_dtype))


# ---- gating


@pytest.mark.parametrize("make", [
    lambda t: dml.ActivationHardSigmoidGradOperatorDesc(t, t, t, alpha=0.2, beta=0.5),
    lambda t: per_channel_desc(T.FLOAT32, (2, 3), 1),
])
def test_extension_operators_are_gated(device_at, make):
    desc = make(dml.BufferTensorDesc(T.FLOAT32, (2, 3)))
    device_at(dml.FeatureLevel.LEVEL_3_0).create_operator(desc)
    capped = "needs FEATURE_LEVEL_3_0 but the device is capped at FEATURE_LEVEL_2_1"
    with pytest.raises(dml.UnsupportedError, match=capped):
        device_at(dml.FeatureLevel.LEVEL_2_1).create_operator(desc)
    with dml.create_device(strict_directml=True) as strict:
        with pytest.raises(dml.UnsupportedError, match="is a dmlpy extension"):
            strict.create_operator(desc)


def pairwise_sum_f32(terms: np.ndarray) -> np.float32:
    """The documented sum: the balanced binary tree over the terms in index order, padded to a
    power of two with -0, every addition in FP32."""
    level = np.asarray(terms, np.float32)
    width = 1 << max(0, level.size - 1).bit_length()
    level = np.concatenate([level, np.full(width - level.size, -0.0, np.float32)])
    while level.size > 1:
        level = level[0::2] + level[1::2]
    return level[0]


@pytest.mark.parametrize("length", [1, 7, 256, 4096, 10000])
def test_slope_gradient_is_the_documented_pairwise_tree(device, length):
    """Bit for bit the balanced pairwise tree of FP32 terms, whether a row is one chunk or
    spans several (10,000 terms: three chunks combined by a second dispatch)."""
    rng = np.random.default_rng(length)
    x, dy = (rng.standard_normal((length, 3)).astype(np.float32) for _ in range(2))
    slope = np.array([0.5, 0.25, 2.0], np.float32)
    _, dslope = dml.prelu_grad(x, slope, dy, device=device)
    terms = np.where(x > 0, np.float32(0), x * dy)
    expected = np.array([pairwise_sum_f32(terms[:, c]) for c in range(3)], np.float32)
    assert np.array_equal(dslope.view(np.uint32), expected.view(np.uint32))
