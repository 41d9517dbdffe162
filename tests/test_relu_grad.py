"""ACTIVATION_RELU_GRAD, bit for bit against the NumPy reference."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from layout import assert_bytes_equal, run_and_expect
from reference import relu_grad as reference

import dmlpy as dml
from dmlpy.base.types import data_type_info

T = dml.TensorDataType
DTYPES = [T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.INT32, T.INT16, T.INT8]
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def desc_for(data_type, sizes, x_strides=None, dy_strides=None, dx_strides=None, alignment=0):
    return dml.ActivationReluGradOperatorDesc(*[
        dml.BufferTensorDesc(data_type, sizes, strides, guaranteed_base_offset_alignment=alignment)
        for strides in (x_strides, dy_strides, dx_strides)])


def bits(array):
    return array.view(UNSIGNED[array.dtype.itemsize])


def random_values(rng, dtype, shape):
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


# Sizes with odd element counts and size-1 dims, for every rank from 1 to 8.
SHAPES = [(7,), (1,), (3, 5), (1, 9), (2, 1, 3), (3, 1, 5, 1), (1, 3, 1, 3, 1), (2, 3, 1, 2, 1, 3),
          (1, 2, 1, 3, 1, 1, 5), (3, 1, 2, 1, 1, 3, 1, 3)]


@pytest.mark.parametrize("data_type", DTYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("sizes", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_packed_matches_reference_bit_for_bit(device, data_type, sizes):
    compiled, actual, expected = run_and_expect(device, desc_for(data_type, sizes), np.random.default_rng(len(sizes)))
    assert compiled.plan.path == "packed"
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"],
                       data_type_info(data_type).element_size)


FLOAT_EDGES = {
    np.float32: [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1.17e-38, 1.0, -1.0, 3.4e38],
    np.float16: [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 6e-8, -6e-8, 6.1e-5, 1.0, -1.0, 65504.0],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: d.__name__)
def test_every_pair_of_special_values(device, dtype):
    edges = np.array(FLOAT_EDGES[dtype], dtype=dtype)
    x, dy = (a.ravel() for a in np.meshgrid(edges, edges, indexing="ij"))
    dx = dml.relu_grad(x, dy, device=device)
    assert np.array_equal(bits(dx), bits(reference(x, dy)))
    # The rules, spelled out: NaN and -0 inputs give +0; positive subnormals pass dY through.
    assert np.all(bits(dx[np.isnan(x) | (x == 0)]) == 0)
    subnormal = (x > 0) & (x < np.finfo(dtype).tiny)
    assert subnormal.any() and np.array_equal(bits(dx[subnormal]), bits(dy[subnormal]))
    passthrough = x > 0
    assert np.array_equal(bits(dx[passthrough]), bits(dy[passthrough]))  # NaN payloads and -0 too


def test_every_float16_bit_pattern_as_input(device):
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    dy = np.random.default_rng(1).integers(0, 2**16, size=x.size, dtype=np.uint16).view(np.float16)
    assert np.array_equal(bits(dml.relu_grad(x, dy, device=device)), bits(reference(x, dy)))


@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.int8], ids=lambda d: d.__name__)
def test_integer_extremes(device, dtype):
    info = np.iinfo(dtype)
    edges = np.array([info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max], dtype=dtype)
    x, dy = (a.ravel() for a in np.meshgrid(edges, edges, indexing="ij"))
    assert np.array_equal(dml.relu_grad(x, dy, device=device), reference(x, dy))


@pytest.fixture
def gpu_planned_device():
    """This device compiling as for a GPU with Vulkan's minimum grid (65535 workgroups per dim, as on
    most GPUs; NVIDIA allows 2**31 - 1 in x): one element per invocation off the packed path."""
    with dml.create_device() as device:
        device.adapter = dataclasses.replace(device.adapter, adapter_type=dml.AdapterType.DISCRETE_GPU,
                                             max_compute_work_group_count=(65535, 65535, 65535))
        yield device


def test_more_elements_than_65535_workgroups_can_cover(gpu_planned_device):
    # A strided dY keeps one element per invocation on a GPU, so the grid needs a second dim.
    device = gpu_planned_device
    count = 65535 * 256 + 1001
    rng = np.random.default_rng(3)
    x = rng.standard_normal(count).astype(np.float32)
    dy = rng.standard_normal(2 * count).astype(np.float32)[::2]
    desc = desc_for(T.FLOAT32, (count,), dy_strides=(2,))
    compiled = device.compile_operator(device.create_operator(desc))
    assert compiled.plan.path == "strided"
    ((groups_x, groups_y, _),) = compiled.plan.workgroups(device.adapter)
    assert groups_x <= device.adapter.max_compute_work_group_count[0] and groups_y > 1
    dx = dml.relu_grad(x, dy, device=device)
    assert np.array_equal(bits(dx), bits(reference(x, dy)))


@pytest.mark.parametrize("data_type", DTYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("layout, path", [
    (((1, 5), (1, 5), (1, 5)), "packed"),  # the same transposed dense layout everywhere
    (((1, 5), (3, 1), (3, 1)), "gather"),  # transposed input, packed output
    (((3, 1), (0, 1), (3, 1)), "broadcast"),  # dY broadcast along rows (a row of 3: whole words in FP32 only)
    (((3, 1), (3, 1), (1, 5)), "strided"),  # transposed output
    (((6, 1), (3, 1), (4, 1)), "strided"),  # padded rows of different pitch
])
def test_each_layout_path_matches_reference(device, data_type, layout, path):
    desc = desc_for(data_type, (5, 3), *layout)
    compiled, actual, expected = run_and_expect(device, desc, np.random.default_rng(11),
                                                offsets={"input_tensor": 16, "input_gradient_tensor": 48,
                                                         "output_gradient_tensor": 32})
    bits = data_type_info(data_type).bits
    expected_path = {("gather", 32): "strided", ("broadcast", 16): "gather", ("broadcast", 8): "gather"}.get(
        (path, bits), path)
    assert compiled.plan.path == expected_path
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"],
                       data_type_info(data_type).element_size)


def test_binding_offsets_arrive_as_integers(device):
    # A push constant passed through kp's float overload would arrive as float bits and read
    # the wrong elements: offsets far into a buffer prove the integers arrive intact.
    desc = desc_for(T.FLOAT32, (9,))
    offset = 4194304 + 48
    _, actual, expected = run_and_expect(device, desc, np.random.default_rng(5), offsets={
        "input_tensor": offset, "input_gradient_tensor": offset + 16, "output_gradient_tensor": offset + 32})
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"], 4)


@pytest.mark.parametrize("data_type", DTYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("aliased", ["input_gradient_tensor", "input_tensor"])
def test_in_place_equals_out_of_place(device, data_type, aliased):
    desc = desc_for(data_type, (3, 7))
    _, actual, expected = run_and_expect(device, desc, np.random.default_rng(2), in_place=("output_gradient_tensor",
                                                                                            aliased))
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"],
                       data_type_info(data_type).element_size)


@st.composite
def strided_layouts(draw):
    """Rank 1-8 descs whose tensors each take their own permutation, steps, padding and,
    for inputs, zero strides; and binding offsets, down to single elements for 8/16-bit
    types (the desc then declares guaranteed_base_offset_alignment = element size)."""
    data_type = draw(st.sampled_from(DTYPES))
    element_size = data_type_info(data_type).element_size
    alignment = draw(st.sampled_from([0, element_size]))
    rank = draw(st.integers(1, 8))
    sizes = tuple(draw(st.lists(st.integers(1, 3 if rank > 4 else 6), min_size=rank, max_size=rank)))

    def strides(broadcast_allowed):
        order = draw(st.permutations(range(rank)))
        result, extent = [0] * rank, 1
        for dim in reversed(order):
            step = draw(st.integers(1, 3))
            result[dim] = extent * step
            extent = result[dim] * sizes[dim] + draw(st.integers(0, 2))
            if broadcast_allowed and draw(st.integers(0, 4)) == 0:
                result[dim] = 0
        return tuple(result)

    desc = desc_for(data_type, sizes, strides(True), strides(True), strides(False), alignment)
    unit = alignment or 16
    offsets = draw(st.tuples(*[st.integers(0, 64 // unit).map(lambda k: k * unit)] * 3))
    return desc, offsets


# Enough examples to meet odd element offsets and odd strides in every sub-word type: with a
# plain read-modify-write in place of the compare-and-swap store this test fails.
@settings(max_examples=300)
@given(layout=strided_layouts(), seed=st.integers(0, 2**32 - 1), as_gpu=st.booleans())
def test_any_strided_layout_matches_reference_and_touches_nothing_else(device, layout, seed, as_gpu):
    desc, offsets = layout
    adapter = device.adapter
    if as_gpu:  # also the plan a GPU gets: one element (or word) per invocation
        device.adapter = dataclasses.replace(adapter, adapter_type=dml.AdapterType.DISCRETE_GPU)
    names = ("input_tensor", "input_gradient_tensor", "output_gradient_tensor")
    try:
        _, actual, expected = run_and_expect(device, desc, np.random.default_rng(seed),
                                             offsets=dict(zip(names, offsets)))
    finally:
        device.adapter = adapter
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"],
                       desc.input_tensor.element_size)


def test_front_end_accepts_out_and_odd_ranks(device):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2,) * 9).astype(np.float32)  # rank 9 runs as one flat dim
    dy = rng.standard_normal(x.shape).astype(np.float32)
    out = np.empty_like(x)
    assert dml.relu_grad(x, dy, out=out, device=device) is out
    assert np.array_equal(bits(out), bits(reference(x, dy)))
    scalar = dml.relu_grad(np.float32(2), np.float32(-3), device=device)
    assert scalar.shape == () and scalar == np.float32(-3)
    empty = dml.relu_grad(np.zeros((0, 3), np.float16), np.zeros((0, 3), np.float16), device=device)
    assert empty.shape == (0, 3)


def test_front_end_uses_default_device_when_none_given():
    x = np.array([1, -1], np.float32)
    assert np.array_equal(dml.relu_grad(x, x), [1, 0])
    assert dml.default_device() is dml.default_device()
