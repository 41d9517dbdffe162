"""GEMM against the independent NumPy reference in reference_gemm.py, bit for bit: random data
in every data type and dimension count, both transposes, strided and broadcast layouts, C and
its null binding, alpha and beta, adversarial values (subnormal products and partial sums,
cancellation, overflow, inf - inf, NaN, signed zeros, an order-sensitive row), a long K,
every device profile (some flush subnormals), fused activations (plainly, or against the
unfused operators), the NumPy-style front ends gemm and matmul and DeviceArray's @, and every
rule the desc, the binding table and the front ends enforce.

Each distinct desc is a pipeline that lavapipe compiles on its first run (several seconds for
GEMM's shader, then cached on disk by Mesa), so the shapes are few and reused; the file runs
in about 35 s with warm caches and 2.5 min cold on two busy cores."""

from __future__ import annotations

import dataclasses
import functools
import math

import ml_dtypes
import numpy as np
import pytest
from changed_profile import cpu_profile
from hypothesis import given, settings
from hypothesis import strategies as st
from layout import element_offsets
from messages import check_level, raises
from reference_gemm import activation_reference, assert_same_bits, gemm_reference, matmul_reference

import dmlpy as dml

T = dml.TensorDataType
FL = dml.FeatureLevel
MT = dml.MatrixTransform
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16}
PROFILES = dml.list_device_profiles()


# --- Running descs ---------------------------------------------------------------------------------


def tensor(data_type, sizes, strides=None):
    return dml.BufferTensorDesc(data_type, tuple(sizes), None if strides is None else tuple(strides))


def gemm_desc(a_sizes, b_sizes, c=False, data_type=T.FLOAT32, trans_a=False, trans_b=False, a_strides=None,
              b_strides=None, c_strides=None, output_strides=None, **scalars):
    """A GEMM desc whose output sizes follow from A's and B's (batch from A's sizes)."""
    m = a_sizes[-1] if trans_a else a_sizes[-2]
    n = b_sizes[-2] if trans_b else b_sizes[-1]
    output_sizes = (*a_sizes[:-2], m, n)
    return dml.GemmOperatorDesc(
        tensor(data_type, a_sizes, a_strides), tensor(data_type, b_sizes, b_strides),
        tensor(data_type, output_sizes, c_strides) if c else None, tensor(data_type, output_sizes, output_strides),
        trans_a=MT.TRANSPOSE if trans_a else MT.NONE, trans_b=MT.TRANSPOSE if trans_b else MT.NONE, **scalars)


def storage_for(desc_tensor, values_of):
    """Storage for a (possibly strided or broadcast) tensor from values_of(count), and the
    logical elements it holds, in the tensor's sizes."""
    count = -(-desc_tensor.total_tensor_size_in_bytes // desc_tensor.element_size)
    storage = values_of(count)
    return storage, storage[element_offsets(desc_tensor.sizes, desc_tensor.element_strides)]


def temporary_for(device, compiled):
    size = compiled.binding_properties.temporary_resource_size
    return device.create_buffer(size) if size else None


def run_gemm(device, desc, a, b, c=None):
    """Compile and run `desc` with buffers holding the storage a, b (and c where the desc has
    C; None binds DirectML's null); the output's elements, in its sizes."""
    compiled = device.compile_operator(device.create_operator(desc))
    inputs = []
    for tensor_desc, storage in ((desc.a_tensor, a), (desc.b_tensor, b), (desc.c_tensor, c)):
        if tensor_desc is None:
            assert storage is None
            inputs.append(None)
            continue
        buffer = device.create_buffer(tensor=tensor_desc)
        buffer.write(np.ascontiguousarray(storage))
        inputs.append(buffer)
    result = device.create_buffer(tensor=desc.output_tensor)
    device.execute(device.create_binding_table(compiled, inputs=inputs, outputs=[result],
                                               temporary=temporary_for(device, compiled)))
    return np.asarray(result.read()).reshape(desc.output_tensor.sizes)


def random_values(rng, dtype, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)


def check_desc(device, desc, rng, scale=1.0, what="", activation=None, activation_params=None):
    """Run `desc` on random storage and compare with the reference over the logical values
    (`activation`: the name of the desc's fused activation, for the reference)."""
    dtype = NUMPY[desc.a_tensor.data_type]
    a_storage, a = storage_for(desc.a_tensor, lambda n: random_values(rng, dtype, n, scale))
    b_storage, b = storage_for(desc.b_tensor, lambda n: random_values(rng, dtype, n, scale))
    c_storage = c = None
    if desc.c_tensor is not None:
        c_storage, c = storage_for(desc.c_tensor, lambda n: random_values(rng, dtype, n, scale))
    got = run_gemm(device, desc, a_storage, b_storage, c_storage)
    expected = gemm_reference(a, b, c, trans_a=desc.trans_a is MT.TRANSPOSE, trans_b=desc.trans_b is MT.TRANSPOSE,
                              alpha=desc.alpha, beta=desc.beta, activation=activation,
                              activation_params=activation_params)
    assert_same_bits(got, expected, what or str(desc))
    return got


# --- Random data through descs -------------------------------------------------------------------

# (A's sizes, B's sizes, trans_a, trans_b, C, alpha, beta): odd sizes, 2-D to 4-D, both transposes.
RANDOM_CASES = [
    ((1, 1), (1, 1), False, False, False, 1.0, 0.0),
    ((3, 5), (5, 17), False, False, False, 1.0, 0.0),
    ((5, 17), (65, 17), False, True, True, 0.5, -1.25),  # TransB: B is {N, K}
    ((3, 3, 33), (3, 5, 3), True, True, True, -3.0, 0.75),
    ((2, 3, 5, 17), (2, 3, 17, 3), False, False, True, 2.0, 0.5),
]


@pytest.mark.parametrize("a_sizes, b_sizes, trans_a, trans_b, c, alpha, beta", RANDOM_CASES,
                         ids=[f"{len(c[0])}d-{'x'.join(map(str, c[0]))}-{c[2]:d}{c[3]:d}{'c' if c[4] else ''}"
                              for c in RANDOM_CASES])
def test_float32_random_data_matches_the_reference(device, a_sizes, b_sizes, trans_a, trans_b, c, alpha, beta):
    rng = np.random.default_rng(len(a_sizes) * 1000 + sum(a_sizes) + sum(b_sizes))
    desc = gemm_desc(a_sizes, b_sizes, c, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta)
    assert desc.trans_a is (MT.TRANSPOSE if trans_a else MT.NONE) and desc.alpha == alpha and desc.beta == beta
    check_desc(device, desc, rng, scale=3.0)


@pytest.mark.parametrize("data_type", [T.FLOAT16, T.BFLOAT16])
def test_half_types_convert_exactly_and_round_once(device, data_type):
    """FP16 and BF16 products in FP32 (exact), summed in FP32, rounded once to the type: the
    same bits as the reference, with results that overflow FP16, land on its subnormals, and
    tie in the final rounding."""
    rng = np.random.default_rng(data_type.value)
    dtype = NUMPY[data_type]
    desc = gemm_desc((2, 5, 17), (2, 17, 3), True, data_type, beta=-0.5)
    check_desc(device, desc, rng, scale=2.0)
    a = random_values(rng, dtype, (2, 5, 17), 2.0)
    b = random_values(rng, dtype, (2, 17, 3), 2.0)
    c = random_values(rng, dtype, (2, 5, 3))
    if data_type is T.FLOAT16:
        a[0, 0, :] = 200.0  # row . column = 17 * 200 * 30 = 102000 > 65504: inf in FP16, finite in FP32
        b[0, :, 0] = 30.0
        a[0, 1, :] = np.float16(2**-12)  # sums of 2**-24 * ...: FP16 subnormals, rounded once
        b[0, :, 1] = np.float16(2**-12) * np.arange(17).astype(np.float16)
        c[0, :2, :2] = 0
    a[1, 2, :] = dtype(1.0)  # an exact FP32 sum whose rounding to the type is a tie
    b[1, :, 2] = 0
    b[1, 0, 2], b[1, 1, 2] = dtype(1.0), dtype(2.0**-8 if data_type is T.BFLOAT16 else 2.0**-11)
    c[1, 2, 2] = 0
    got = run_gemm(device, desc, a, b, c)
    assert_same_bits(got, gemm_reference(a, b, c, beta=-0.5), data_type.name)
    assert got[1, 2, 2] == dtype(1.0)  # 1 + half an ulp: ties to even
    if data_type is T.FLOAT16:
        assert got[0, 0, 0] == np.inf
        assert 0 < abs(float(got[0, 1, 1])) < 2**-14  # an FP16 subnormal


# --- Adversarial values --------------------------------------------------------------------------

# Row i of A and column i of B, K = 4: output (i, i) is the case named; every other output is
# the reference's too.
PATTERNS = [
    ("subnormal products", [1e-20, 1e-20, 1e-20, 1e-20], [1e-20, 2e-20, -1e-20, 3e-20]),
    ("partial sums cancel into subnormals", [1.0, -1.0, 1e-20, 1e-20], [1.5e-38, 1.4e-38, 1e-20, 0.0]),
    ("cancel to zero", [1.0, 1.0, 1.0, 1.0], [1e30, -1e30, 2.0, -2.0]),
    ("subnormal inputs", [1e-40, 1e-40, 1.0, 0.0], [1.0, 2.0, 1e-45, 5.0]),
    ("product overflows", [3e38, 3e38, 1.0, 1.0], [2.0, 1.0, 0.0, 0.0]),
    ("inf - inf", [1e30, 1e30, 1.0, 1.0], [1e30, -1e30, 0.0, 0.0]),
    ("NaN input", [np.nan, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]),
    ("all products -0", [-0.0, -0.0, -0.0, -0.0], [1.0, 2.0, 3.0, 4.0]),
    ("-0 then +0", [0.0, -0.0, 0.0, 0.0], [-1.0, -1.0, 1.0, 1.0]),
    ("0 * inf", [0.0, 1.0, 1.0, 1.0], [np.inf, 1.0, 1.0, 1.0]),
    ("in increasing k", [1e8, 1.0, -1e8, 1.0], [1.0, 1.0, 1.0, 1.0]),
    ("products round to the least subnormal", [1e-22, 1e-22, 1e-22, 1e-22], [1e-23, 1e-23, 1e-23, 1e-23]),
    ("products underflow to -0", [-1e-23, -1e-23, -1e-23, -1e-23], [1e-23, 1e-23, 1e-23, 1e-23]),
    ("an inf input", [np.inf, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]),
    ("normal products cancel into a subnormal", [2.0**-55 * (1 + 2.0**-23), -(2.0**-55), 0.0, 0.0],
     [2.0**-55, 2.0**-55, 1.0, 1.0]),
]


def adversarial_operands():
    """A (R, 4) and B (4, R) from PATTERNS: row i of A, column i of B."""
    a = np.array([row for _, row, _ in PATTERNS], np.float32)
    b = np.array([column for _, _, column in PATTERNS], np.float32).T.copy()
    return a, b


def least_subnormals(n):
    return np.float32(n * 2.0**-149)


def test_adversarial_values_spelled_out(device):
    a, b = adversarial_operands()
    r = len(PATTERNS)
    # A fused IDENTITY (the value itself: specials, -0 and subnormals pass through unchanged).
    desc = gemm_desc((r, 4), (4, r), fused_activation=dml.ActivationIdentityOperatorDesc(None, None))
    got = run_gemm(device, desc, a, b)
    assert_same_bits(got, gemm_reference(a, b, activation="IDENTITY"), "adversarial")
    d = np.diagonal(got)
    bits = d.view(np.uint32)
    expected_subnormal = ((np.float32(1e-20) * np.float32(1e-20) + np.float32(1e-20) * np.float32(2e-20))
                          + np.float32(1e-20) * np.float32(-1e-20)) + np.float32(1e-20) * np.float32(3e-20)
    assert d[0] == expected_subnormal and 0 < d[0] < np.finfo(np.float32).tiny  # subnormal, not flushed
    assert 0 < d[1] < np.finfo(np.float32).tiny  # 1e-39 + 1e-40: a subnormal sum
    assert bits[2] == 0  # +0: x + (-x) rounds to +0
    assert 0 < d[3] < np.finfo(np.float32).tiny
    assert d[4] == np.inf and np.isnan(d[5]) and np.isnan(d[6]) and np.isnan(d[9]) and d[13] == np.inf
    assert bits[7] == 0x80000000  # S starts at -0: a row of -0 products stays -0
    assert bits[8] == 0  # -0 + -0 + +0 = +0
    assert d[10] == 1.0  # ((1e8 + 1) - 1e8) + 1 in FP32, in increasing k (a pairwise tree gives 0)
    assert d[11] == least_subnormals(4)  # each product rounds to 2**-149
    assert bits[12] == 0x80000000  # products underflow to -0; -0 + -0 stays -0
    assert d[14] == np.float32(2.0**-133)  # 2^-110 (1 + 2^-23) - 2^-110, exactly


def test_alpha_beta_and_c_in_the_subnormal_range(device):
    """alpha * S and beta * C are each rounded to FP32 on their own, subnormals kept; a C of
    inf or NaN meets beta = 0 as 0 * inf = NaN (C present means beta * C is added)."""
    a, b = adversarial_operands()
    r = len(PATTERNS)
    rng = np.random.default_rng(5)
    c = np.where(rng.integers(0, 2, (r, r)) == 0, np.float32(1e-20), np.float32(-1e-25)).astype(np.float32)
    c[7, 7] = -0.0  # -0 + beta * -0: stays -0
    c[0, 1] = 1e-45
    c[10, 10] = -1.4  # S = 1 there: with alpha 1.5e-38 and beta 1e-38, T + beta * C cancels to 1e-39
    for alpha, beta in ((1e-30, 1e-20), (0.5, 1.0), (2.0**-100, -2.0**-30), (1.5e-38, 1e-38)):
        desc = gemm_desc((r, 4), (4, r), True, alpha=alpha, beta=beta)
        got = run_gemm(device, desc, a, b, c)
        assert_same_bits(got, gemm_reference(a, b, c, alpha=alpha, beta=beta), f"alpha {alpha} beta {beta}")
        if alpha == 0.5:
            assert got[7, 7].view(np.uint32) == 0x80000000
        if alpha == 1.5e-38:
            assert got[10, 10] == np.float32(1.5e-38) + np.float32(1e-38) * np.float32(-1.4) != 0
    # beta 0 with C present (the same shader): C's specials still count, and -0 + 0 * c is +0.
    c[0, 0], c[2, 2], c[7, 7], c[10, 10] = np.inf, np.nan, 5.0, -np.inf
    desc = gemm_desc((r, 4), (4, r), True, beta=0.0)
    got = run_gemm(device, desc, a, b, c)
    assert_same_bits(got, gemm_reference(a, b, c), "beta 0")
    assert np.isnan(got[0, 0]) and np.isnan(got[2, 2]) and np.isnan(got[10, 10])  # 0 * inf, 0 * NaN
    assert got[7, 7].view(np.uint32) == 0  # S = -0, then -0 + (0 * 5 = +0) = +0
    assert got[3, 3] == gemm_reference(a, b)[3, 3]  # 0 * a finite c changes nothing else


@pytest.fixture(scope="module", params=PROFILES)
def profiled(request):
    with dml.create_device(profile=request.param) as device:
        yield device


def test_the_same_bits_under_every_device_profile(profiled):
    """The adversarial operands with C, alpha and beta under each profile: some emulate GPUs
    that flush subnormals, whose exact arithmetic must give the reference's bits."""
    a, b = adversarial_operands()
    r = len(PATTERNS)
    c = np.full((r, r), -0.0, np.float32)
    c[::2, 1::3] = 1e-20
    c[1, 1] = 3e-45
    desc = gemm_desc((r, 4), (4, r), True, alpha=0.5, beta=1e-20)
    got = run_gemm(profiled, desc, a, b, c)
    assert_same_bits(got, gemm_reference(a, b, c, alpha=0.5, beta=1e-20), profiled.adapter.profile)
    assert got[7, 7].view(np.uint32) == 0x80000000  # 0.5 * -0 + 1e-20 * -0
    assert 0 < got[3, 3] < np.finfo(np.float32).tiny


def test_long_k_and_a_square_128(device):
    """K = 65,520, the documented limit (values of many magnitudes, so the order shows; a column
    of subnormal products takes the exact path, one k a loop iteration, up to lavapipe's 65,535
    iterations), and a 128 x 128 x 128 product with a few subnormal rows. A longer K is refused."""
    rng = np.random.default_rng(3000)
    k = 65520
    a = (rng.standard_normal((2, k)) * np.exp2(rng.integers(-20, 20, (2, k)))).astype(np.float32)
    b = (rng.standard_normal((k, 3)) * np.exp2(rng.integers(-20, 20, (k, 3)))).astype(np.float32)
    b[:, 2] = rng.choice([1e-30, -1e-30, 1e-38], k).astype(np.float32)  # subnormal products
    got = run_gemm(device, gemm_desc((2, k), (k, 3)), a, b)
    assert_same_bits(got, gemm_reference(a, b), f"K {k}")
    # The test tells orders apart: the exact sum rounded once differs from the sequential one.
    assert not np.array_equal(got, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))
    a = random_values(rng, np.float32, (128, 128))
    b = random_values(rng, np.float32, (128, 128))
    a[5] *= np.float32(1e-38)
    b[:, 7] *= np.float32(1e-5)
    got = run_gemm(device, gemm_desc((128, 128), (128, 128)), a, b)
    assert_same_bits(got, gemm_reference(a, b), "128^3")
    with raises(dml.UnsupportedError, "K = 65521: dmlpy's matrix product sums at most 65,520 products"):
        dml.gemm(np.ones((1, 65521), np.float32), np.ones((65521, 1), np.float32), device=device)


# --- Strided and broadcast layouts ---------------------------------------------------------------


def test_strided_and_broadcast_layouts(device):
    rng = np.random.default_rng(11)
    # A shared by every batch (zero stride), a C bias row broadcast over batch and M.
    desc = gemm_desc((3, 5, 7), (3, 7, 4), True, a_strides=(0, 7, 1), c_strides=(0, 0, 1), beta=1.0)
    check_desc(device, desc, rng, what="zero-stride batch of A, C bias row")
    # A with gaps between elements, B column-major, transposed by strides rather than trans_b;
    # the output column-major; a fused RELU through the desc.
    desc = gemm_desc((5, 7), (7, 4), a_strides=(16, 2), b_strides=(1, 7), output_strides=(1, 5),
                     fused_activation=dml.ActivationReluOperatorDesc(None, None))
    check_desc(device, desc, rng, what="gapped A, column-major B and output, fused RELU", activation="RELU")
    # 4-D: B broadcast over the first batch dimension, TransA over a strided A, C a column.
    desc = gemm_desc((2, 3, 7, 5), (2, 3, 7, 4), True, trans_a=True, a_strides=(105, 35, 5, 1),
                     b_strides=(0, 28, 4, 1), c_strides=(0, 0, 1, 0), alpha=-1.0, beta=2.0)
    check_desc(device, desc, rng, what="4-D, broadcast B, C a column")


# --- Large products on a CPU device: lanes that share their rows ----------------------------------

# (what, A's sizes, B's sizes, trans_a, trans_b, data type, A's strides): products of 2^18 pairs
# or more, which lavapipe computes with a subgroup's lanes sharing their rows (8, 16 or 32 of
# them; A in vectors along K or M or by element, B along N or K or by element, 16-bit types in
# vectors of 8), edges in M and N, a K that is no whole number of chunks, batches.
SHARED_CASES = [
    ("A along K, B along N, edges", (70, 69), (69, 60), False, False, T.FLOAT32, None),
    ("A along M, B along K", (68, 72), (60, 68), True, True, T.FLOAT32, None),
    ("A by element, B along N, 16 rows", (100, 105), (105, 104), False, False, T.FLOAT32, (210, 2)),
    ("FLOAT16 by element", (72, 66), (56, 66), False, True, T.FLOAT16, None),
    ("FLOAT16 along K and N", (72, 72), (72, 56), False, False, T.FLOAT16, None),
    ("BFLOAT16 along M and K", (72, 72), (56, 72), True, True, T.BFLOAT16, None),
    ("a batch, 8 rows", (2, 64, 81), (2, 81, 56), False, False, T.FLOAT32, None),
    ("32 rows", (256, 256), (256, 256), False, False, T.FLOAT32, None),
]


def shared_operands(rng, desc):
    """Random storage for A and B with a few specials: subnormal, -0, inf and NaN elements and
    rows of tiny values whose products are subnormal (which the hardware keeps on lavapipe)."""
    dtype = NUMPY[desc.a_tensor.data_type]
    a_storage, a = storage_for(desc.a_tensor, lambda n: random_values(rng, dtype, n))
    b_storage, b = storage_for(desc.b_tensor, lambda n: random_values(rng, dtype, n))
    if dtype is np.float32:
        for storage in (a_storage, b_storage):
            picks = rng.choice(storage.size, 6, replace=False)
            storage[picks] = np.array([1e-45, -0.0, np.inf, np.nan, 1e-39, -3e-40], np.float32)
        a_storage[: desc.a_tensor.sizes[-1]] *= np.float32(1e-30)  # products of 1e-30 and less
    _, a = storage_for(desc.a_tensor, lambda n: a_storage)
    _, b = storage_for(desc.b_tensor, lambda n: b_storage)
    return a_storage, a, b_storage, b


@pytest.mark.parametrize("what, a_sizes, b_sizes, trans_a, trans_b, data_type, a_strides", SHARED_CASES,
                         ids=[case[0] for case in SHARED_CASES])
def test_large_products_on_lanes_sharing_rows(device, what, a_sizes, b_sizes, trans_a, trans_b, data_type,
                                              a_strides):
    desc = gemm_desc(a_sizes, b_sizes, data_type=data_type, trans_a=trans_a, trans_b=trans_b, a_strides=a_strides)
    compiled = device.compile_operator(device.create_operator(desc))
    sharing = "SHARED_LANES" in compiled.plan.stages[-1].defines
    assert sharing == (device.adapter.adapter_type == dml.AdapterType.CPU), compiled.plan.reason
    rng = np.random.default_rng(sum(a_sizes) * 7 + sum(b_sizes))
    a_storage, a, b_storage, b = shared_operands(rng, desc)
    got = run_gemm(device, desc, a_storage, b_storage)
    assert_same_bits(got, gemm_reference(a, b, trans_a=trans_a, trans_b=trans_b), what)


@pytest.mark.parametrize("a_sizes, b_sizes, trans_a, trans_b, rows", [
    ((256, 64), (64, 128), False, False, 32),  # a training step's forward, 2^21 pairs
    ((256, 128), (64, 128), False, True, 32),  # its dX = dY W^T
    ((128, 64), (128, 256), True, False, 32),  # its dW = X^T dY
    ((100, 105), (105, 104), False, False, 16),  # just over 2^20 pairs
    ((64, 64), (64, 64), False, False, 8),  # 2^18 pairs, the smallest that shares
])
def test_a_cpu_device_shares_more_rows_for_larger_products(device, a_sizes, b_sizes, trans_a, trans_b, rows):
    """On a CPU device the lanes share 32 rows from 2^21 pairs (a training step's GEMMs), 16
    from 2^20, 8 below (the plan says how many); each plan gives the reference's bits."""
    if device.adapter.adapter_type != dml.AdapterType.CPU or device.adapter.subgroup_size != 8:
        pytest.skip("rows shared by the 8 lanes of a CPU device's subgroups")
    desc = gemm_desc(a_sizes, b_sizes, trans_a=trans_a, trans_b=trans_b)
    compiled = device.compile_operator(device.create_operator(desc))
    assert f"sharing {rows} rows" in compiled.plan.reason, compiled.plan.reason
    rng = np.random.default_rng(sum(a_sizes) + rows)
    a_storage, a, b_storage, b = shared_operands(rng, desc)
    got = run_gemm(device, desc, a_storage, b_storage)
    assert_same_bits(got, gemm_reference(a, b, trans_a=trans_a, trans_b=trans_b), f"{rows} rows")


@pytest.mark.parametrize("changes", [{"denormals": "flush"}, {"subgroupSize": 4}], ids=["flushing", "subgroups-of-4"])
def test_lanes_sharing_rows_keep_the_bits_on_any_subgroup_and_with_exactness(tmp_path, changes):
    """A CPU device planned for as one that flushes subnormals (the exactness stage: subgroups
    with a lane whose products could be subnormal take the exact arithmetic, one lane at a
    time), or whose subgroups are not the size planned for (lavapipe's are 8 lanes, or 4 with
    128-bit vectors: where they differ, each lane reads its own rows): the same bits."""
    rng = np.random.default_rng(77)
    descs = [gemm_desc((70, 69), (69, 60))]
    if "denormals" in changes:  # BFLOAT16 has subnormals of its own: the exactness stage reads its vectors
        descs.append(gemm_desc((64, 72), (72, 64), data_type=T.BFLOAT16))
    with dml.create_device(profile=cpu_profile(tmp_path, "lavapipe-changed", **changes)) as device:
        if device.adapter.adapter_type != dml.AdapterType.CPU:
            pytest.skip("the profile keeps the real device's subgroup operations; a GPU's are not a CPU's")
        for desc in descs:
            a_storage, a, b_storage, b = shared_operands(rng, desc)
            if desc.a_tensor.data_type == T.BFLOAT16:  # subnormal products in a few rows
                a_storage[:72] = (a_storage[:72].astype(np.float32) * np.float32(1e-38)).astype(ml_dtypes.bfloat16)
                a = a_storage[element_offsets(desc.a_tensor.sizes, desc.a_tensor.element_strides)]
            compiled = device.compile_operator(device.create_operator(desc))
            assert "sharing" in compiled.plan.reason
            got = run_gemm(device, desc, a_storage, b_storage)
            assert_same_bits(got, gemm_reference(a, b), f"{changes} {desc.a_tensor.data_type.name}")


# --- The null C and the binding table ------------------------------------------------------------


def test_a_null_c_binds_none_and_refuses_a_buffer(device):
    desc = gemm_desc((3, 5), (5, 17))
    assert desc.c_tensor is None
    compiled = device.compile_operator(device.create_operator(desc))
    rng = np.random.default_rng(1)
    a, b = random_values(rng, np.float32, (3, 5)), random_values(rng, np.float32, (5, 17))
    buffers = []
    for value, tensor_desc in ((a, desc.a_tensor), (b, desc.b_tensor)):
        buffer = device.create_buffer(tensor=tensor_desc)
        buffer.write(value)
        buffers.append(buffer)
    out = device.create_buffer(tensor=desc.output_tensor)
    stray = device.create_buffer(tensor=desc.output_tensor)
    with raises(dml.InvalidArgumentError, "inputs[2]", "None"):
        device.create_binding_table(compiled, inputs=[*buffers, stray], outputs=[out])
    with raises(dml.InvalidArgumentError, "inputs has 2 bindings"):
        device.create_binding_table(compiled, inputs=buffers, outputs=[out])
    device.execute(device.create_binding_table(compiled, inputs=[*buffers, None], outputs=[out],
                                               temporary=temporary_for(device, compiled)))
    assert_same_bits(out.read(), gemm_reference(a, b), "null C")
    # A present C must be bound.
    with_c = device.compile_operator(device.create_operator(gemm_desc((3, 5), (5, 17), True)))
    with raises(dml.InvalidArgumentError, "inputs[2]", "required"):
        device.create_binding_table(with_c, inputs=[*buffers, None], outputs=[out])
    # GEMM never runs in place: the output may not be bound over C.
    with raises(dml.InvalidArgumentError, "in place"):
        device.create_binding_table(with_c, inputs=[*buffers, stray], outputs=[stray],
                                    temporary=temporary_for(device, with_c))


# --- Fused activations ---------------------------------------------------------------------------


def unbound(cls, **scalars):
    return cls(None, None, **scalars)


PLAIN_ACTIVATIONS = [
    ("RELU", dml.ActivationReluOperatorDesc, {}),
    ("LEAKY_RELU", dml.ActivationLeakyReluOperatorDesc, {"alpha": 0.1}),
    ("LINEAR", dml.ActivationLinearOperatorDesc, {"alpha": 2.5, "beta": -1.0}),
]


def activation_operands(rng, dtype=np.float32):
    """(5, 6) x (6, 7) values with both signs, -0 results and a NaN."""
    a = random_values(rng, dtype, (5, 6), 2.0)
    b = random_values(rng, dtype, (6, 7), 2.0)
    a[0, :] = -0.0  # with B's first column positive: output (0, 0) is -0
    b[:, 0] = abs(b[:, 0])
    a[1, 0] = np.nan
    return a, b


@pytest.mark.parametrize("name, cls, scalars", PLAIN_ACTIVATIONS, ids=[p[0] for p in PLAIN_ACTIVATIONS])
def test_fused_activations_with_a_plain_reference(device, name, cls, scalars):
    rng = np.random.default_rng(len(name))
    a, b = activation_operands(rng)
    c = random_values(rng, np.float32, (7,))  # a bias row through the front end's broadcast
    c[0] = -0.0  # output (0, 0): -0 + -0 = -0 before the activation
    got = dml.gemm(a, b, c, beta=1.0, fused_activation=unbound(cls, **scalars), device=device)
    expected = gemm_reference(a, b, c, beta=1.0, activation=name, activation_params=scalars)
    assert_same_bits(got, expected, name)
    assert np.isnan(got[1]).all()  # the NaN in A's row 1
    if name == "RELU":
        assert got[0, 0].view(np.uint32) == 0  # relu(-0) is +0
    if name == "LEAKY_RELU":
        assert got[0, 0].view(np.uint32) == 0x80000000  # -0 >= 0: -0 kept


def test_fused_activation_on_a_half_output_applies_to_the_stored_value(device):
    """LEAKY_RELU on FP16: alpha times the value already rounded to FP16, rounded again (not
    alpha times the FP32 sum)."""
    rng = np.random.default_rng(16)
    a, b = activation_operands(rng, np.float16)
    leaky = dml.ActivationLeakyReluOperatorDesc(None, None, alpha=0.1)
    got = dml.gemm(a, b, fused_activation=leaky, device=device)
    assert got.dtype == np.float16
    assert_same_bits(got, gemm_reference(a, b, activation="LEAKY_RELU", activation_params={"alpha": 0.1}), "FP16")


# The others: fused, the same bits as GEMM and then the activation's own front end.
UNFUSED = [
    (dml.ActivationEluOperatorDesc, {"alpha": 0.7}, lambda y, d: dml.elu(y, 0.7, device=d)),
    (dml.ActivationSigmoidOperatorDesc, {}, lambda y, d: dml.sigmoid(y, device=d)),
    (dml.ActivationTanhOperatorDesc, {}, lambda y, d: dml.tanh(y, device=d)),
    (dml.ActivationShrinkOperatorDesc, {"bias": 0.25, "threshold": 1.0},
     lambda y, d: dml.shrink(y, 0.25, 1.0, device=d)),
]


@pytest.mark.parametrize("cls, scalars, unfused", UNFUSED, ids=[u[0].__name__.removesuffix("OperatorDesc")
                                                                 for u in UNFUSED])
def test_fused_activations_equal_the_unfused_operators(device, cls, scalars, unfused):
    rng = np.random.default_rng(21)
    a, b = activation_operands(rng)
    plain = dml.gemm(a, b, device=device)
    assert_same_bits(plain, gemm_reference(a, b), "GEMM alone")
    fused = dml.gemm(a, b, fused_activation=unbound(cls, **scalars), device=device)
    assert_same_bits(fused, unfused(plain, device), cls.__name__)


# --- The gemm front end ---------------------------------------------------------------------------


def test_gemm_front_end(device):
    rng = np.random.default_rng(31)
    a = random_values(rng, np.float32, (3, 5))
    b = random_values(rng, np.float32, (5, 17))
    got = dml.gemm(a, b, device=device)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (3, 17)
    assert_same_bits(got, gemm_reference(a, b), "plain")
    assert np.allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)  # sanity
    # Transposes (operands given as stored), alpha, beta and a C broadcast NumPy-style.
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    c = random_values(rng, np.float32, (3, 1))
    got = dml.gemm(at, bt, c, trans_a=True, trans_b=True, alpha=0.5, beta=-2.0, device=device)
    assert_same_bits(got, gemm_reference(at, bt, c, trans_a=True, trans_b=True, alpha=0.5, beta=-2.0), "trans")
    # 3-D and 4-D, FP16, out= (the shape matmul's FP16 case takes too).
    a4 = random_values(rng, np.float16, (2, 3, 5, 17))
    b4 = random_values(rng, np.float16, (2, 3, 17, 3))
    out = np.empty((2, 3, 5, 3), np.float16)
    assert dml.gemm(a4, b4, out=out, device=device) is out
    assert_same_bits(out, gemm_reference(a4, b4), "4-D FP16 out=")
    a3, b3 = random_values(rng, np.float32, (3, 3, 33)), random_values(rng, np.float32, (3, 5, 3))
    c3 = random_values(rng, np.float32, (3, 33, 5))
    got = dml.gemm(a3, b3, c3, trans_a=True, trans_b=True, alpha=-3.0, beta=0.75, device=device)
    assert got.shape == (3, 33, 5)
    assert_same_bits(got, gemm_reference(a3, b3, c3, trans_a=True, trans_b=True, alpha=-3.0, beta=0.75), "3-D")
    # Non-contiguous NumPy operands: the values count, not the layout.
    wide = random_values(rng, np.float32, (5, 34))
    got = dml.gemm(a, wide[:, ::2], device=device)
    assert_same_bits(got, gemm_reference(a, wide[:, ::2]), "a strided view")
    # A 0-d C (NumPy's and ONNX's scalar bias) broadcasts like any other, host or device array.
    scalar = np.array(-1.25, np.float32)
    got = dml.gemm(a, b, scalar, beta=0.5, device=device)
    assert_same_bits(got, gemm_reference(a, b, scalar, beta=0.5), "a 0-d c")
    on_device = dml.gemm(dml.asarray(a, device), dml.asarray(b, device), dml.asarray(scalar, device), beta=0.5)
    assert_same_bits(on_device.numpy(), got, "a 0-d device-array c")


def test_gemm_front_end_errors(device):
    a, b = np.ones((3, 5), np.float32), np.ones((5, 4), np.float32)
    with raises(dml.InvalidArgumentError, "astype"):
        dml.gemm(a.astype(np.float64), b.astype(np.float64), device=device)
    with raises(dml.InvalidArgumentError):
        dml.gemm(a, b.astype(np.float16), device=device)
    with raises(dml.InvalidArgumentError):
        dml.gemm(a, np.ones((4, 4), np.float32), device=device)  # K 5 against 4
    with raises(dml.InvalidArgumentError):
        dml.gemm(np.ones(5, np.float32), b, device=device)  # 1-D: gemm takes 2-D to 4-D
    with raises(dml.InvalidArgumentError):
        dml.gemm(np.ones((1, 1, 1, 3, 5), np.float32), np.ones((1, 1, 1, 5, 4), np.float32), device=device)
    with raises(dml.InvalidArgumentError, "c"):
        dml.gemm(a, b, np.ones((3, 5), np.float32), device=device)  # not broadcastable to (3, 4)
    with raises(dml.InvalidArgumentError, "c"):
        dml.gemm(a, b, np.ones((2, 3, 4), np.float32), device=device)  # broadcasting is unidirectional
    with raises(dml.InvalidArgumentError, "fused_activation"):
        dml.gemm(a, b, fused_activation=dml.ActivationSoftmaxOperatorDesc(f32(3, 4), f32(3, 4)), device=device)
    with raises(dml.InvalidArgumentError, "alpha"):
        dml.gemm(a, b, alpha=float("inf"), device=device)
    with raises(dml.InvalidArgumentError, "out"):
        dml.gemm(a, b, out=np.empty((3, 5), np.float32), device=device)


# --- matmul and @ ------------------------------------------------------------------------------------


MATMUL_SHAPES = [
    ((3, 5), (5, 17)),
    ((5,), (2, 5, 3)),  # 1-D a: a row (broadcast over the batch), removed again
    ((2, 3, 5), (5,)),  # 1-D b: a column
    ((1,), (1,)),  # both: a 0-d result
    ((2, 1, 3, 5), (4, 5, 2)),  # batch dimensions broadcast: (2, 4, 3, 2)
]


def test_matmul_follows_numpys_shape_rules_with_the_gemm_order(device):
    rng = np.random.default_rng(41)
    for a_shape, b_shape in MATMUL_SHAPES:
        a, b = random_values(rng, np.float32, a_shape), random_values(rng, np.float32, b_shape)
        got = dml.matmul(a, b, device=device)
        expected_shape = np.matmul(a, b).shape
        assert isinstance(got, np.ndarray) and got.shape == expected_shape, (a_shape, b_shape, got.shape)
        assert got.dtype == np.float32
        assert_same_bits(got, matmul_reference(a, b), f"{a_shape} @ {b_shape}")
        assert np.allclose(got, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5, atol=1e-5)
    a, b = random_values(rng, np.float16, (2, 3, 5, 17)), random_values(rng, np.float16, (2, 3, 17, 3))
    out = np.empty((2, 3, 5, 3), np.float16)
    assert dml.matmul(a, b, out=out, device=device) is out
    assert_same_bits(out, matmul_reference(a, b), "FP16 out=")


def test_device_arrays_multiply_with_at(device):
    rng = np.random.default_rng(43)
    a, b = random_values(rng, np.float32, (3, 5)), random_values(rng, np.float32, (5, 17))
    x, y = dml.asarray(a, device=device), dml.asarray(b, device=device)
    product = x @ y
    assert isinstance(product, dml.DeviceArray) and product.shape == (3, 17) and product.dtype == np.float32
    assert_same_bits(product.numpy(), gemm_reference(a, b), "@")
    result = dml.matmul(x, y, device=device)
    values = result.numpy() if isinstance(result, dml.DeviceArray) else result
    assert_same_bits(values, gemm_reference(a, b), "matmul of DeviceArrays")
    # A chain stays on the device: (x @ y) then relu, the bits of the two operators.
    assert_same_bits(dml.relu(product, device=device).numpy(), activation_reference(gemm_reference(a, b), "RELU"),
                     "@ then relu")


def test_matmul_errors(device):
    a = np.ones((2, 3), np.float32)
    with raises(dml.InvalidArgumentError, "(2, 3)", "(4, 5)"):
        dml.matmul(a, np.ones((4, 5), np.float32), device=device)
    with raises(dml.InvalidArgumentError, "(2, 3)", "(4,)"):
        dml.matmul(a, np.ones(4, np.float32), device=device)
    with raises(dml.InvalidArgumentError, "(3, 2, 3)", "(4, 3, 5)"):
        dml.matmul(np.ones((3, 2, 3), np.float32), np.ones((4, 3, 5), np.float32), device=device)  # batch 3 vs 4
    for left, right in ((np.float32(2.0), a), (a, np.array(2.0, np.float32))):
        with raises(dml.InvalidArgumentError):
            dml.matmul(np.asarray(left), np.asarray(right), device=device)
    with raises(dml.InvalidArgumentError, "astype"):
        dml.matmul(a.astype(np.float64), np.ones((3, 2)), device=device)
    with raises(dml.InvalidArgumentError):  # a 5-D result
        dml.matmul(np.ones((2, 1, 2, 2, 3), np.float32), np.ones((3, 2), np.float32), device=device)
    with raises(dml.InvalidArgumentError):
        dml.matmul(np.ones((2, 3), np.int32), np.ones((3, 2), np.int32), device=device)
    with raises(dml.InvalidArgumentError):
        dml.asarray(a, device=device) @ dml.asarray(np.ones((4, 5), np.float32), device=device)


# --- What descs refuse ------------------------------------------------------------------------------


def f32(*sizes, strides=None, data_type=T.FLOAT32):
    return tensor(data_type, sizes, strides)


def test_desc_fields_and_defaults():
    desc = dml.GemmOperatorDesc(f32(2, 3), f32(3, 4), None, f32(2, 4))
    assert desc.trans_a is MT.NONE and desc.trans_b is MT.NONE and desc.alpha == 1.0 and desc.beta == 0.0
    assert desc.c_tensor is None and desc.fused_activation is None
    named = dml.GemmOperatorDesc(f32(3, 2), f32(4, 3), f32(2, 4), f32(2, 4), trans_a="TRANSPOSE", trans_b="TRANSPOSE")
    assert named.trans_a is MT.TRANSPOSE and named.trans_b is MT.TRANSPOSE
    with pytest.raises(TypeError):
        dml.GemmOperatorDesc(f32(2, 3), f32(3, 4), f32(2, 4))  # c_tensor is positional and required
    # Zero-stride batch and C broadcasts are accepted.
    dml.GemmOperatorDesc(f32(5, 2, 3, strides=(0, 3, 1)), f32(5, 3, 4), f32(5, 2, 4, strides=(0, 0, 1)), f32(5, 2, 4))
    leaky = dml.GemmOperatorDesc(f32(2, 3), f32(3, 4), None, f32(2, 4),
                                 fused_activation=dml.ActivationLeakyReluOperatorDesc(None, None, alpha=0.1))
    assert isinstance(leaky.fused_activation, dml.ActivationLeakyReluOperatorDesc)


@pytest.mark.parametrize("args, kwargs, words", [
    ((f32(2, 3), f32(4, 5), None, f32(2, 5)), {}, ("GemmOperatorDesc", "b_tensor", "sizes")),  # K 3 vs 4
    ((f32(2, 3), f32(3, 5), None, f32(3, 5)), {"trans_a": "TRANSPOSE"}, ("GemmOperatorDesc", "b_tensor", "sizes")),
    ((f32(2, 3), f32(5, 3), None, f32(2, 5)), {}, ("GemmOperatorDesc", "b_tensor", "sizes")),  # needs trans_b
    ((f32(2, 3), f32(3, 5), f32(2, 4), f32(2, 5)), {}, ("GemmOperatorDesc.c_tensor.sizes", "(2, 4)")),
    ((f32(2, 3), f32(3, 5), f32(1, 5), f32(2, 5)), {}, ("c_tensor.sizes", "(1, 5)")),  # broadcast with strides
    ((f32(2, 3), f32(3, 5), None, f32(2, 4)), {}, ("GemmOperatorDesc.output_tensor.sizes", "(2, 4)")),
    ((f32(2, 3), f32(3, 5), None, f32(5, 2)), {}, ("output_tensor.sizes", "(5, 2)")),
    ((f32(2, 2, 3), f32(3, 3, 5), None, f32(2, 2, 5)), {}, ("b_tensor.sizes", "(3, 3, 5)")),  # batch 3 vs 2
    ((f32(1, 2, 3), f32(2, 3, 5), None, f32(2, 2, 5)), {}, ("a_tensor.sizes", "(1, 2, 3)")),  # broadcast: strides
    ((f32(2, 3), f32(3, 5, data_type=T.FLOAT16), None, f32(2, 5)), {}, ("b_tensor.data_type", "FLOAT16")),
    ((f32(2, 3), f32(3, 5), f32(2, 5, data_type=T.FLOAT16), f32(2, 5)), {}, ("c_tensor.data_type", "FLOAT16")),
    ((f32(2, 3), f32(3, 5), None, f32(2, 5, data_type=T.FLOAT16)), {}, ("output_tensor.data_type", "FLOAT16")),
    ((f32(2, 3, data_type=T.INT32), f32(3, 5, data_type=T.INT32), None, f32(2, 5, data_type=T.INT32)), {},
     ("a_tensor.data_type", "INT32")),
    ((f32(2, 3, data_type=T.FLOAT64), f32(3, 5, data_type=T.FLOAT64), None, f32(2, 5, data_type=T.FLOAT64)), {},
     ("a_tensor.data_type", "FLOAT64")),
    ((f32(1, 1, 1, 2, 3), f32(1, 1, 1, 3, 5), None, f32(1, 1, 1, 2, 5)), {}, ("a_tensor",)),  # 5-D
    ((f32(3,), f32(3, 5), None, f32(1, 5)), {}, ("a_tensor",)),  # 1-D
    ((f32(1, 2, 3), f32(3, 5), None, f32(1, 2, 5)), {}, ("b_tensor",)),  # dimension counts differ
    ((f32(2, 3), f32(3, 5), None, f32(2, 5)), {"alpha": float("inf")}, ("alpha",)),
    ((f32(2, 3), f32(3, 5), None, f32(2, 5)), {"alpha": float("nan")}, ("alpha",)),
    ((f32(2, 3), f32(3, 5), None, f32(2, 5)), {"beta": float("-inf")}, ("beta",)),
    ((f32(2, 3), f32(3, 5), None, f32(2, 5)), {"alpha": 1e39}, ("alpha",)),  # overflows FP32
    ((f32(2, 3), f32(3, 5), None, f32(2, 5)), {"alpha": "1"}, ("alpha",)),
])
def test_desc_rules(args, kwargs, words):
    with raises(dml.InvalidArgumentError, *words):
        dml.GemmOperatorDesc(*args, **kwargs)


def test_transform_rules():
    a, b, out = f32(2, 3), f32(3, 4), f32(2, 4)
    for value in ("SIDEWAYS", 42, 2.5, dml.AxisDirection.INCREASING, dml.ReduceFunction.SUM):
        with raises(dml.InvalidArgumentError, "trans_a", "MatrixTransform"):
            dml.GemmOperatorDesc(a, b, None, out, trans_a=value)
        with raises(dml.InvalidArgumentError, "trans_b", "MatrixTransform"):
            dml.GemmOperatorDesc(a, b, None, out, trans_b=value)


def test_fused_activation_rules():
    a, b, out = f32(2, 3), f32(3, 4), f32(2, 4)
    for value, words in (
            (dml.ActivationSoftmaxOperatorDesc(out, out), ("fused_activation", "ACTIVATION_SOFTMAX")),  # unfusable
            (dml.ElementWiseIdentityOperatorDesc(out, out), ("fused_activation", "ELEMENT_WISE_IDENTITY")),
            (dml.ActivationReluGradOperatorDesc(out, out, out), ("fused_activation", "ACTIVATION_RELU_GRAD")),
            (out, ("fused_activation", "BufferTensorDesc")),
            (dml.ActivationReluOperatorDesc(out, out), ("fused_activation.input_tensor", "None")),
            (dml.ActivationLeakyReluOperatorDesc(out, out, alpha=0.1), ("fused_activation.input_tensor", "None")),
            ("RELU", ("fused_activation",))):
        with raises(dml.InvalidArgumentError, *words):
            dml.GemmOperatorDesc(a, b, None, out, fused_activation=value)
    for name in ("Elu", "HardSigmoid", "Identity", "LeakyRelu", "ParametricSoftplus", "Relu", "ScaledElu",
                 "ScaledTanh", "Sigmoid", "Softplus", "Softsign", "Tanh", "ThresholdedRelu", "Shrink", "Celu"):
        cls = getattr(dml, f"Activation{name}OperatorDesc")
        needed = {"ParametricSoftplus": {"alpha": 1.0, "beta": 1.0}}.get(name, {})
        dml.GemmOperatorDesc(a, b, None, out, fused_activation=cls(None, None, **needed))
    linear = dml.ActivationLinearOperatorDesc(None, None, alpha=1.0, beta=0.0)
    assert dml.GemmOperatorDesc(a, b, None, out, fused_activation=linear).fused_activation == linear


def test_descs_are_frozen():
    desc = dml.GemmOperatorDesc(f32(2, 3), f32(3, 4), None, f32(2, 4), alpha=2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        desc.alpha = 3.0


def test_feature_level_gating(device_at):
    check = functools.partial(check_level, device_at)

    four = dml.GemmOperatorDesc(f32(1, 1, 2, 3), f32(1, 1, 3, 4), f32(1, 1, 2, 4), f32(1, 1, 2, 4))
    three = dml.GemmOperatorDesc(f32(5, 2, 3), f32(5, 3, 4), None, f32(5, 2, 4))
    two = dml.GemmOperatorDesc(f32(2, 3), f32(3, 4), None, f32(2, 4))
    half_four = dml.GemmOperatorDesc(f32(1, 1, 2, 3, data_type=T.FLOAT16), f32(1, 1, 3, 4, data_type=T.FLOAT16),
                                     None, f32(1, 1, 2, 4, data_type=T.FLOAT16))
    check(FL.LEVEL_1_0, four, True)
    check(FL.LEVEL_1_0, half_four, True)
    for level in (FL.LEVEL_1_0, FL.LEVEL_3_1):
        check(level, three, False, "LEVEL_4_0")
        check(level, two, False, "LEVEL_4_0")
    for level in (FL.LEVEL_4_0, FL.LEVEL_6_4):
        check(level, two, True)
        check(level, three, True)


def test_strict_directml_refuses_bfloat16():
    bf16 = T.BFLOAT16
    desc = dml.GemmOperatorDesc(f32(2, 3, data_type=bf16), f32(3, 4, data_type=bf16), None, f32(2, 4, data_type=bf16))
    strict = dml.create_device(strict_directml=True)
    try:
        strict.create_operator(dml.GemmOperatorDesc(f32(2, 3, data_type=T.FLOAT16), f32(3, 4, data_type=T.FLOAT16),
                                                    None, f32(2, 4, data_type=T.FLOAT16)))
        with raises(dml.UnsupportedError, "BFLOAT16", "strict_directml"):
            strict.create_operator(desc)
    finally:
        strict.close()


# --- Random cases ----------------------------------------------------------------------------------

SMALL = (1, 2, 3, 5, 7)


@st.composite
def gemm_shapes(draw):
    """Valid GEMM operands' sizes: 2-D to 4-D, any transposes, with or without C."""
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    m, k, n = (draw(st.sampled_from(SMALL)) for _ in range(3))
    trans_a, trans_b, with_c = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    a = (*batch, *((k, m) if trans_a else (m, k)))
    b = (*batch, *((n, k) if trans_b else (k, n)))
    return a, b, (*batch, m, n), trans_a, trans_b, with_c


@settings(max_examples=60)
@given(shapes=gemm_shapes(), wrong=st.sampled_from(["none", "k", "m", "n", "batch", "c"]))
def test_random_descs_validate(shapes, wrong):
    """Valid sizes construct (and keep their fields); each single wrong size is refused naming
    the sizes at fault."""
    a, b, out, trans_a, trans_b, with_c = shapes
    c = out
    words = ("sizes",)
    if wrong == "k":
        b = (*b[:-1], b[-1] + 1) if trans_b else (*b[:-2], b[-2] + 1, b[-1])
        words = ("GemmOperatorDesc", "sizes")
    elif wrong == "m":
        out = (*out[:-2], out[-2] + 1, out[-1])
        words = ("output_tensor.sizes",)
    elif wrong == "n":
        out = (*out[:-1], out[-1] + 1)
        words = ("output_tensor.sizes",)
    elif wrong == "batch" and len(out) > 2:
        a = (a[0] + 1, *a[1:])
        words = ("a_tensor.sizes",)
    elif wrong == "c" and with_c:
        c = (*c[:-1], c[-1] + 2)
        words = ("c_tensor.sizes",)
    else:
        wrong = "none"
    args = (f32(*a), f32(*b), f32(*c) if with_c else None, f32(*out))
    kwargs = {"trans_a": MT.TRANSPOSE if trans_a else MT.NONE, "trans_b": "TRANSPOSE" if trans_b else "NONE"}
    if wrong == "none":
        desc = dml.GemmOperatorDesc(*args, **kwargs)
        assert desc.a_tensor.sizes == a and desc.output_tensor.sizes == out
        assert desc.trans_b is (MT.TRANSPOSE if trans_b else MT.NONE)
    else:
        with raises(dml.InvalidArgumentError, *words):
            dml.GemmOperatorDesc(*args, **kwargs)


@settings(max_examples=2)
@given(shapes=gemm_shapes(), data_type=st.sampled_from([T.FLOAT32, T.FLOAT16]), seed=st.integers(0, 2**32 - 1))
def test_random_gemms_match_the_reference(device, shapes, data_type, seed):
    a_sizes, b_sizes, _, trans_a, trans_b, with_c = shapes
    rng = np.random.default_rng(seed)
    dtype = NUMPY[data_type]
    a, b = random_values(rng, dtype, a_sizes, 2.0), random_values(rng, dtype, b_sizes, 2.0)
    if rng.integers(0, 2):  # specials scattered over A
        flat = a.reshape(-1)
        picks = rng.integers(0, flat.size, max(1, flat.size // 8))
        flat[picks] = np.array([np.nan, np.inf, -0.0, 1e-40, 1e-20], np.float32)[
            rng.integers(0, 5, picks.size)].astype(dtype)
    m = a_sizes[-1] if trans_a else a_sizes[-2]
    n = b_sizes[-2] if trans_b else b_sizes[-1]
    c = random_values(rng, dtype, (n,)) if with_c else None
    got = dml.gemm(a, b, c, trans_a=trans_a, trans_b=trans_b, alpha=1.5, beta=0.5, device=device)
    assert got.shape == (*a_sizes[:-2], m, n)
    assert_same_bits(got, gemm_reference(a, b, c, trans_a=trans_a, trans_b=trans_b, alpha=1.5, beta=0.5),
                     f"{a_sizes} {b_sizes} {trans_a} {trans_b} {with_c}")


def test_reference_sanity():
    """The reference itself: close to float64 on ordinary data, and its order shows."""
    rng = np.random.default_rng(0)
    a, b = random_values(rng, np.float32, (2, 3, 4, 9)), random_values(rng, np.float32, (2, 3, 9, 5))
    assert np.allclose(gemm_reference(a, b), np.matmul(a.astype(np.float64), b.astype(np.float64)), atol=1e-5)
    row = np.array([[1e8, 1.0, -1e8, 1.0]], np.float32)
    assert gemm_reference(row, np.ones((4, 1), np.float32))[0, 0] == 1.0
    assert gemm_reference(np.full((1, 7), -0.0, np.float32), np.ones((7, 1), np.float32)).view(np.uint32)[0, 0] \
        == 0x80000000
    assert math.isnan(gemm_reference(np.ones((1, 1), np.float32), np.ones((1, 1), np.float32),
                                     np.full((1, 1), np.inf, np.float32), beta=0.0)[0, 0])


def test_matmul_of_empty_operands_is_numpys_and_gemm_refuses_them(device):
    empty_k = dml.matmul(np.ones((2, 0), np.float32), np.ones((0, 3), np.float32), device=device)
    assert empty_k.shape == (2, 3) and np.array_equal(empty_k.view(np.uint32), np.zeros((2, 3), np.uint32))  # +0
    assert dml.matmul(np.ones((0, 3), np.float16), np.ones((3, 2), np.float16), device=device).shape == (0, 2)
    on_device = dml.matmul(dml.asarray(np.ones((4, 0), np.float32), device), np.ones((0, 1), np.float32))
    assert isinstance(on_device, dml.DeviceArray) and on_device.numpy().shape == (4, 1)
    with raises(dml.InvalidArgumentError, "gemm: a has shape (2, 0) and b (0, 3): GEMM's sizes are at least 1"):
        dml.gemm(np.ones((2, 0), np.float32), np.ones((0, 3), np.float32), device=device)
