"""The 64-bit types (FLOAT64, INT64, UINT64) in the operators that take them on any device.
CAST to and from them against a reference written with Python's exact numbers: every FLOAT16
input, and swept FLOAT64, INT64 and UINT64 inputs (halfway cases built exactly, subnormals of
every width, the edges of every integer range, infinities, NaN, signed zeros), through descs,
strided layouts, the front end and graphs; IDENTITY's copies; the comparisons of INT64 and
UINT64, exact against NumPy's; IF's selects, bit for bit."""

from __future__ import annotations

import dataclasses
import math
import re

import ml_dtypes
import numpy as np
import pytest
from reference_elementwise import FORMATS, assert_same, exact_cast_reference, is_float

import dmlpy as dml

T = dml.TensorDataType
NUMPY = {T.FLOAT64: np.float64, T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16,
         T.INT64: np.int64, T.INT32: np.int32, T.INT16: np.int16, T.INT8: np.int8, T.UINT64: np.uint64,
         T.UINT32: np.uint32, T.UINT16: np.uint16, T.UINT8: np.uint8}
WIDE = (T.FLOAT64, T.INT64, T.UINT64)
def run(device, source: dml.BufferTensorDesc, target: dml.BufferTensorDesc, storage: np.ndarray) -> np.ndarray:
    compiled = device.compile_operator(device.create_operator(dml.CastOperatorDesc(source, target)))
    given = device.create_buffer(tensor=source)
    given.write(np.ascontiguousarray(storage))
    result = device.create_buffer(tensor=target)
    device.execute(device.create_binding_table(compiled, inputs=[given], outputs=[result]))
    return result.read()


def float64_sweep(rng) -> np.ndarray:
    """Random doubles over the whole exponent range, subnormals of every width, values halfway
    between neighbours of each narrower type (exactly, and a double's ULP either side), the
    edges of every integer range, and the specials."""
    random_bits = rng.integers(0, 2**64, 3000, dtype=np.uint64, endpoint=False).view(np.float64)
    scales = 2.0 ** rng.integers(-160, 160, 3000)
    moderate = rng.standard_normal(3000) * scales
    halfway = []
    for narrow in (np.float32, np.float16, ml_dtypes.bfloat16):
        grid = rng.standard_normal(300).astype(np.float32).astype(narrow)
        tiny = np.array([ml_dtypes.finfo(narrow).smallest_subnormal * k for k in (1, 2, 3, 5)], np.float64)
        for base in (*grid.astype(np.float64), *tiny, float(ml_dtypes.finfo(narrow).max)):
            with np.errstate(over="ignore"):
                up = float(np.nextafter(np.array(base, narrow), np.array(np.inf, narrow)))
            if math.isinf(up):  # past the largest: where the next would be
                up = base + (base - float(np.nextafter(np.array(base, narrow), np.array(0, narrow))))
            middle = base + (up - base) / 2  # exact in a double: the narrow types are far narrower
            halfway += [middle, np.nextafter(middle, np.inf), np.nextafter(middle, -np.inf), -middle]
    edges = [float(e) + d for e in (2**7, 2**8, 2**15, 2**16, 2**31, 2**32, 2**63, 2**64) for d in (-1, -0.5, 0, 0.5)]
    edges += [-e for e in edges]
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                1.7976931348623157e308, 1e-45, 1.4e-45, 7e-46, 6e-8, 3e-8, 65520.0, 65519.99, 3.4028235677973366e38]
    payload_nan = np.array([0x7FF0000000000001, 0xFFF8000000000123, 0x7FF4000000000000], np.uint64).view(np.float64)
    return np.concatenate([random_bits, moderate, halfway, edges, specials, payload_nan]).astype(np.float64)


def integer_sweep(dtype, rng) -> np.ndarray:
    """Random integers of every bit length, both ends of the range, and values halfway between
    neighbours of FLOAT32, FLOAT16 and BFLOAT16 (ties to even both ways), a unit either side."""
    info = np.iinfo(dtype)
    values = [info.min, info.max, info.min + 1, info.max - 1, 0, 1]
    for length in range(1, info.bits + 1):
        for _ in range(20):
            magnitude = int(rng.integers(0, 2**62)) % (1 << length) | (1 << (length - 1))
            values += [magnitude, -magnitude]
    for kept in (24, 11, 8):  # significand bits of FLOAT32, FLOAT16, BFLOAT16
        for length in range(kept + 2, info.bits + 1):
            top = 1 << (length - 1)
            half = 1 << (length - kept - 1)
            for odd in (0, 1):
                middle = top + odd * 2 * half + half
                values += [middle, middle + 1, middle - 1, -middle]
    return np.array([v for v in values if info.min <= v <= info.max], dtype)


def sweep_for(data_type: T, rng) -> np.ndarray:
    dtype = NUMPY[data_type]
    if data_type is T.FLOAT16:  # every input
        return np.arange(1 << 16, dtype=np.uint16).view(dtype)
    if data_type is T.FLOAT32:
        with np.errstate(over="ignore", invalid="ignore"):
            return float64_sweep(rng).astype(np.float32)
    if data_type is T.FLOAT64:
        return float64_sweep(rng)
    return integer_sweep(dtype, rng)


PAIRS = [(s, t) for s in NUMPY for t in NUMPY if (s in WIDE or t in WIDE) and T.BFLOAT16 not in (s, t)]


@pytest.mark.parametrize("source, target", PAIRS, ids=lambda t: t.name)
def test_every_conversion_to_and_from_a_64_bit_type(device, source, target):
    x = sweep_for(source, np.random.default_rng(int(source) * 16 + int(target)))
    got = run(device, dml.BufferTensorDesc(source, x.shape), dml.BufferTensorDesc(target, x.shape), x)
    expected = exact_cast_reference(x, NUMPY[target])
    assert got.dtype == NUMPY[target]
    if is_float(NUMPY[target]):  # every bit, NaNs' included
        unsigned = FORMATS[np.dtype(NUMPY[target])][2]
        differ = np.flatnonzero(got.view(unsigned) != expected.view(unsigned))
        assert differ.size == 0, f"{differ.size} differ, e.g. {x[differ[:4]]} -> {got[differ[:4]]}, not " \
                                 f"{expected[differ[:4]]}"
    else:
        assert_same(got, expected)


def test_strided_and_broadcast_layouts(device):
    """A transposed FLOAT64 input into a gapped INT64 output, and a broadcast INT64 input into
    a transposed FLOAT32 output: the other words of each output keep what they held."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6)) * 1e10
    source = dml.BufferTensorDesc(T.FLOAT64, (6, 4), (1, 6))  # x's transpose, read in place
    target = dml.BufferTensorDesc(T.INT64, (6, 4), (8, 2))
    compiled = device.compile_operator(device.create_operator(dml.CastOperatorDesc(source, target)))
    given, result = device.create_buffer(tensor=source), device.create_buffer(tensor=target)
    given.write(x)
    result.write(np.full(target.total_tensor_size_in_bytes // 8, -7, np.int64))
    device.execute(device.create_binding_table(compiled, inputs=[given], outputs=[result]))
    stored = result.read(T.INT64, count=target.total_tensor_size_in_bytes // 8)
    written = np.arange(6)[:, None] * 8 + np.arange(4)[None, :] * 2
    assert np.array_equal(stored[written], np.trunc(x.T).astype(np.int64))
    assert np.all(np.delete(stored, written.ravel()) == -7)
    column = np.array([2**40 + 1, -3, 2**62 + 2**38, 7], np.int64)
    source = dml.BufferTensorDesc(T.INT64, (4, 5), (1, 0))  # each value along a row
    target = dml.BufferTensorDesc(T.FLOAT32, (4, 5), (1, 4))
    got = run(device, source, target, column)
    assert np.array_equal(got, np.repeat(column.astype(np.float32)[:, None], 5, axis=1))


def test_the_front_end_takes_numpys_64_bit_defaults(device):
    """dml.cast(x, ...) of a float64 or int64 array converts on the device, in the front end's
    terms; the other operators that take int64 compute it as it is."""
    x = np.array([0.1, -2.5, 1e300, np.nan, 5e-324])
    with np.errstate(over="ignore"):
        assert_same(dml.cast(x, np.float32, device=device), x.astype(np.float32))
    assert_same(dml.cast(np.arange(-3, 3), np.int8, device=device), np.arange(-3, 3).astype(np.int8))
    widened = dml.cast(np.array([1.5, -0.0], np.float32), np.float64, device=device)
    assert widened.dtype == np.float64 and np.array_equal(widened.view(np.uint64),
                                                          np.array([1.5, -0.0]).view(np.uint64))
    assert_same(dml.add(np.arange(3), np.arange(3), device=device), np.arange(0, 6, 2))


def test_a_graph_runs_a_64_bit_cast_beside_fused_nodes(device):
    """FLOAT64 in, cast to FLOAT32, then RELU; the cast is its own kernel, RELU's input the
    cast's bits."""
    g = dml.GraphBuilder(device)
    x = g.input(dml.BufferTensorDesc(T.FLOAT64, (3, 7)))
    narrowed = dml.graph.cast(x, np.float32)
    compiled = g.build([dml.graph.relu(narrowed), dml.graph.cast(narrowed, np.int64)])
    values = np.random.default_rng(5).standard_normal((3, 7)) * 1e3
    given = device.create_buffer(tensor=dml.BufferTensorDesc(T.FLOAT64, (3, 7)))
    given.write(values)
    outputs = [device.create_buffer(tensor=t) for _, t in compiled.output_tensors]
    size = compiled.binding_properties.temporary_resource_size
    device.execute(device.create_binding_table(compiled, inputs=[given], outputs=outputs,
                                               temporary=device.create_buffer(size) if size else None))
    narrow = values.astype(np.float32)
    assert_same(outputs[0].read().reshape(-1), np.maximum(narrow, 0))
    assert np.array_equal(outputs[1].read().reshape(-1), np.trunc(narrow).astype(np.int64).reshape(-1))


def test_a_graph_runs_int64_arithmetic_between_fused_nodes(device):
    """An int64 chain in a graph (cast, multiply, add, clip): the casts are kernels of their
    own, the multiply and add one kernel, the clip another (the sum has two readers); each
    reads the one before's words."""
    g = dml.GraphBuilder(device)
    x = g.input(dml.BufferTensorDesc(T.FLOAT32, (4, 5)))
    labels = g.input(dml.BufferTensorDesc(T.INT64, (4, 5)))
    whole = dml.graph.cast(dml.graph.relu(x), np.int64)
    scaled = dml.graph.add(dml.graph.multiply(whole, labels), labels)
    compiled = g.build([dml.graph.clip(scaled, min=-1e12, max=4e18), dml.graph.cast(scaled, np.float32)])
    rng = np.random.default_rng(8)
    values = (rng.standard_normal((4, 5)) * 1e4).astype(np.float32)
    label_values = rng.integers(-(1 << 50), 1 << 50, (4, 5))
    buffers = [device.create_buffer(tensor=dml.BufferTensorDesc(t, (4, 5))) for t in (T.FLOAT32, T.INT64)]
    buffers[0].write(values)
    buffers[1].write(label_values)
    outputs = [device.create_buffer(tensor=t) for _, t in compiled.output_tensors]
    size = compiled.binding_properties.temporary_resource_size
    device.execute(device.create_binding_table(compiled, inputs=buffers, outputs=outputs,
                                               temporary=device.create_buffer(size) if size else None))
    exact = [int(v) * int(b) + int(b) for v, b in zip(np.trunc(np.maximum(values, 0)).ravel(), label_values.ravel())]
    wrapped = [(v + (1 << 63)) % (1 << 64) - (1 << 63) for v in exact]
    low, high = int(np.float32(-1e12)), int(np.float32(4e18))  # the FP32 scalars, exact integers
    expected = np.array([min(max(v, low), high) for v in wrapped], np.int64)
    assert np.array_equal(outputs[0].read().reshape(-1), expected)
    assert_same(outputs[1].read().reshape(-1), exact_cast_reference(np.array(wrapped, np.int64), np.float32))


def test_device_arrays_convert_to_and_from_64_bit_types(device):
    """astype on device arrays: a float64 array from NumPy narrowed on the device, and a
    chain's result widened; the chain's bits are those of the operators run one by one."""
    host = np.array([0.1, -2**40 - 0.5, 1e-310, np.nan, 3e38 * 2])
    on_device = dml.asarray(host, device=device)
    assert on_device.dtype == np.float64
    with np.errstate(over="ignore"):
        narrowed = host.astype(np.float32)
    assert_same(on_device.astype(np.float32).numpy(), narrowed)
    widened = (on_device.astype(np.float32) * 2).astype(np.int64).numpy()
    assert widened.dtype == np.int64
    assert np.array_equal(widened, exact_cast_reference(narrowed * np.float32(2), np.int64))
    # An operator that does not take FLOAT64 says how to convert, as for host arrays; one that takes INT64 runs.
    with pytest.raises(dml.InvalidArgumentError, match=r"add: a has dtype float64, which ELEMENT_WISE_ADD does not "
                                                       r"take .*; convert it first, e\.g\. a\.astype\(np\.float32\)"):
        on_device + 1
    assert_same((dml.asarray(np.arange(3), device=device) + 1).numpy(), np.arange(1, 4))  # INT64: computed


@pytest.mark.parametrize("data_type", WIDE, ids=lambda t: t.name)
def test_identity_copies_64_bit_elements_and_device_array_views(device, data_type):
    """ELEMENT_WISE_IDENTITY of a 64-bit type passes every element's bits (NaN payloads, -0,
    subnormals, both ends of the range); a copy of a strided device-array view is one."""
    dtype = NUMPY[data_type]
    x = sweep_for(data_type, np.random.default_rng(int(data_type)))
    desc = dml.ElementWiseIdentityOperatorDesc(dml.BufferTensorDesc(data_type, x.shape),
                                               dml.BufferTensorDesc(data_type, x.shape))
    run_identity = device.compile_operator(device.create_operator(desc))
    given, result = device.create_buffer(tensor=desc.input_tensor), device.create_buffer(tensor=desc.output_tensor)
    given.write(x)
    device.execute(device.create_binding_table(run_identity, inputs=[given], outputs=[result]))
    got = result.read()
    assert np.array_equal(got.view(np.uint64), x.view(np.uint64))
    view = dml.asarray(x, device=device)[1::3]
    copied = view.copy()
    assert copied.dtype == dtype and np.array_equal(copied.numpy().view(np.uint64), x[1::3].view(np.uint64))
    with pytest.raises(dml.UnsupportedError, match=r"scale_bias on .*64: dmlpy applies a ScaleBias to FLOAT32"):
        device.compile_operator(device.create_operator(dataclasses.replace(desc, scale_bias=dml.ScaleBias(2, 1))))


COMPARISON_NAMES = {"equal": np.equal, "less": np.less, "greater": np.greater, "less_equal": np.less_equal,
                    "greater_equal": np.greater_equal}


@pytest.mark.parametrize("data_type", [T.INT64, T.UINT64], ids=lambda t: t.name)
@pytest.mark.parametrize("name", COMPARISON_NAMES)
def test_64_bit_integers_compare_exactly(device, name, data_type):
    """Values of every bit length and both ends of the range, against shuffled partners, equal
    ones, and neighbours a unit apart (which an FP64 compare would tie past 2^53); a broadcast
    row and a Python scalar."""
    rng = np.random.default_rng(len(name) + int(data_type))
    a = integer_sweep(NUMPY[data_type], rng)
    partners = [rng.permutation(a), a.copy(), a + np.array(1, a.dtype), a - np.array(1, a.dtype)]
    for b in partners:
        got = getattr(dml, name)(a, b, device=device)
        assert got.dtype == np.uint8
        assert np.array_equal(got, COMPARISON_NAMES[name](a, b).astype(np.uint8))
    square = a[:32 * 32].reshape(32, 32)
    row = a[-32:]
    assert np.array_equal(getattr(dml, name)(square, row, device=device),
                          COMPARISON_NAMES[name](square, row).astype(np.uint8))
    assert np.array_equal(getattr(dml, name)(a, 7, device=device),
                          COMPARISON_NAMES[name](a, NUMPY[data_type](7)).astype(np.uint8))


@pytest.mark.parametrize("data_type", WIDE, ids=lambda t: t.name)
def test_if_selects_64_bit_elements_bit_for_bit(device, data_type):
    """A UINT8 condition (0, 1 and 255) choosing between swept operands, and a broadcast
    condition row: the chosen words as they are (NaN payloads, -0)."""
    rng = np.random.default_rng(int(data_type) + 40)
    a = sweep_for(data_type, rng)
    b = rng.permutation(a)
    condition = rng.choice(np.array([0, 1, 255], np.uint8), a.size)
    got = dml.where(condition, a, b, device=device)
    assert got.dtype == a.dtype
    assert np.array_equal(got.view(np.uint64), np.where(condition != 0, a, b).view(np.uint64))
    square_a, square_b = a[:32 * 32].reshape(32, 32), b[:32 * 32].reshape(32, 32)
    row = condition[:32]
    assert np.array_equal(dml.where(row, square_a, square_b, device=device).view(np.uint64),
                          np.where(row != 0, square_a, square_b).view(np.uint64))


def test_an_accuracy_count_from_int64_indices_and_labels(device):
    """ONNX's accuracy pattern on NumPy's types: ARGMAX into INT64 indices, LOGICAL_EQUALS
    against int64 labels, CAST to FLOAT32, REDUCE SUM."""
    rng = np.random.default_rng(12)
    scores = rng.standard_normal((300, 10)).astype(np.float32)
    labels = rng.integers(0, 10, 300)
    desc = dml.ArgMaxOperatorDesc(dml.BufferTensorDesc(T.FLOAT32, (300, 10)), dml.BufferTensorDesc(T.INT64, (300, 1)),
                                  (1,))
    compiled = device.compile_operator(device.create_operator(desc))
    given, indices = device.create_buffer(tensor=desc.input_tensor), device.create_buffer(tensor=desc.output_tensor)
    given.write(scores)
    size = compiled.binding_properties.temporary_resource_size
    device.execute(device.create_binding_table(compiled, inputs=[given], outputs=[indices],
                                               temporary=device.create_buffer(size)))
    predicted = indices.read().reshape(-1)
    assert predicted.dtype == np.int64 and np.array_equal(predicted, scores.argmax(axis=1))
    hits = dml.cast(dml.equal(predicted, labels, device=device), np.float32, device=device)
    assert dml.sum(hits, device=device) == np.float32((scores.argmax(axis=1) == labels).sum())


def test_an_accuracy_on_device_arrays_against_int64_labels(device):
    """The same pattern on device arrays, as NumPy code writes it: argmax gives NumPy's int64
    indices, compared on the device with int64 labels, then cast and averaged."""
    rng = np.random.default_rng(13)
    scores = rng.standard_normal((257, 10)).astype(np.float32)
    labels = rng.integers(0, 10, 257)
    predicted = dml.asarray(scores, device=device).argmax(axis=1)
    assert predicted.dtype == np.int64
    accuracy = (predicted == dml.asarray(labels, device=device)).astype(np.float32).mean()
    assert accuracy.numpy() == np.float32(np.sum(scores.argmax(axis=1) == labels)) / np.float32(257)


def wrapped(values, data_type: T) -> np.ndarray:
    """Python integers wrapped to `data_type`'s 64 bits (two's complement for INT64)."""
    low = -(1 << 63) if data_type == T.INT64 else 0
    return np.array([(v - low) % (1 << 64) + low for v in values], NUMPY[data_type])


@pytest.mark.parametrize("data_type", (T.INT64, T.UINT64), ids=lambda t: t.name)
def test_a_64_bit_chain_in_a_graph_is_one_kernel_with_the_unfused_bits(device, data_type):
    """where(x > y, x * y, x - y) on 64-bit integers: four nodes, the comparison's UINT8
    mask among them, in one kernel; each element as Python's integers wrap, and as the four
    operators run one by one."""
    g = dml.GraphBuilder(device)
    sizes = (37, 29)
    x, y = (g.input(dml.BufferTensorDesc(data_type, sizes)) for _ in range(2))
    compiled = g.build([dml.graph.where(dml.graph.greater(x, y), dml.graph.multiply(x, y), dml.graph.subtract(x, y))])
    assert len(compiled.kernels) == 1 and compiled.kernels[0].plan.path == "wide"
    rng = np.random.default_rng(21)
    span = (-(1 << 63), 1 << 63) if data_type == T.INT64 else (0, 1 << 64)
    values = [rng.integers(*span, sizes, dtype=NUMPY[data_type]) for _ in range(2)]
    values[0].flat[:4] = values[1].flat[:4]  # ties: x - y is 0
    values[0].flat[4:8] = np.iinfo(NUMPY[data_type]).max
    values[1].flat[4:8] = [np.iinfo(NUMPY[data_type]).min, 1, 2, 3]
    buffers = [device.create_buffer(tensor=dml.BufferTensorDesc(data_type, sizes)) for _ in range(2)]
    for buffer, given in zip(buffers, values):
        buffer.write(given)
    result = device.create_buffer(tensor=compiled.output_tensors[0][1])
    device.execute(device.create_binding_table(compiled, inputs=buffers, outputs=[result]))
    a, b = (v.ravel().tolist() for v in values)
    expected = wrapped([p * q if p > q else p - q for p, q in zip(a, b)], data_type)
    assert np.array_equal(result.read().reshape(-1), expected)
    one_by_one = dml.where(dml.greater(*values, device=device), dml.multiply(*values, device=device),
                           dml.subtract(*values, device=device), device=device)
    assert np.array_equal(one_by_one.reshape(-1), expected)


def test_64_bit_nodes_fuse_only_with_nodes_of_their_type(device):
    """An INT64 chain's UINT8 mask read by a UINT8 LOGICAL_AND: the INT64 nodes up to the mask
    share one kernel, and the AND joins the FLOAT32 chain's kernel, not theirs."""
    g = dml.GraphBuilder(device)
    x, y = (g.input(dml.BufferTensorDesc(T.INT64, (8,))) for _ in range(2))
    f = g.input(dml.BufferTensorDesc(T.FLOAT32, (8,)))
    mask = dml.graph.less(dml.graph.add(x, y), y)
    both = dml.graph.logical_and(mask, dml.graph.less(dml.graph.relu(f), f))
    compiled = g.build([both])
    assert sorted((k.plan.path == "wide", len(k.nodes)) for k in compiled.kernels) == [(False, 3), (True, 2)]
    buffers = [device.create_buffer(tensor=dml.BufferTensorDesc(t, (8,))) for t in (T.INT64, T.INT64, T.FLOAT32)]
    xs, ys = np.array([1, -1, 5, -5, 2**62, -2**62, 0, 7]), np.array([3, 3, -2, -2, 2**62, -2**62, 0, -7])
    fs = np.array([-1, 1, -1, 1, -1, 1, -1, 1], np.float32)
    for buffer, given in zip(buffers, (xs, ys, fs)):
        buffer.write(given)
    result = device.create_buffer(tensor=compiled.output_tensors[0][1])
    size = compiled.binding_properties.temporary_resource_size
    device.execute(device.create_binding_table(compiled, inputs=buffers, outputs=[result],
                                               temporary=device.create_buffer(size) if size else None))
    sums = wrapped([p + q for p, q in zip(xs.tolist(), ys.tolist())], T.INT64)
    assert np.array_equal(result.read(), ((sums < ys) & (np.maximum(fs, 0) < fs)).astype(np.uint8))


def test_device_array_chains_of_64_bit_math_fuse_into_their_reductions(device, monkeypatch):
    """NumPy's int64 code on device arrays: an element-wise chain is one kernel, and a row
    reduction reading it takes the chain as its prologue (a CLIP's FP32 scalars included);
    the results are NumPy's."""
    compiled = []
    original = dml.Device.compile_graph
    monkeypatch.setattr(dml.Device, "compile_graph",
                        lambda self, graph, flags=0: compiled.append(original(self, graph, flags)) or compiled[-1])
    rng = np.random.default_rng(22)
    a, b = rng.integers(-2**40, 2**40, (33, 70)), rng.integers(-2**20, 2**20, (33, 70))
    da, db = dml.asarray(a, device=device), dml.asarray(b, device=device)
    chosen = dml.where(da > db, da * db, da - db)
    assert np.array_equal(chosen.numpy(), np.where(a > b, a * b, a - b))
    assert [len(k.nodes) for k in compiled[-1].kernels] == [4]
    totals = dml.clip((da + db) * db, -2**50, 2**50).sum(axis=1)
    assert np.array_equal(totals.numpy(), np.clip((a + b) * b, -2**50, 2**50).sum(axis=1))
    assert [len(k.nodes) for k in compiled[-1].kernels] == [4]
    best = (da - db).argmax(axis=0)
    assert np.array_equal(best.numpy(), (a - b).argmax(axis=0))
    assert [len(k.nodes) for k in compiled[-1].kernels] == [2]


@pytest.mark.parametrize("profile", [None, "nvidia-h100"], ids=["lavapipe", "gpu-profile"])
def test_packed_64_bit_tensors_move_whole_vectors_and_a_tail(profile):
    """Where every tensor is 64- or 32-bit, packed and on 16 bytes, an invocation moves whole
    16-byte vectors (several on a CPU device, one or two a lane on a GPU) and the elements past
    the last whole item run one an invocation: every count around an item's edges, windows of
    a small segment, and views off 16 bytes (read element by element) give NumPy's results."""
    with dml.create_device(profile=profile) as device:
        d = dml.BufferTensorDesc(T.INT64, (1001,))
        reason = device.compile_cached(dml.ElementWiseAddOperatorDesc(d, d, d)).plan.reason
        assert re.search(r"^1001 elements, (8|2) an invocation in whole 16-byte vectors", reason), reason
        reason = device.compile_cached(dml.CastOperatorDesc(d, dml.BufferTensorDesc(T.FLOAT32, (1001,)))).plan.reason
        assert re.search(r"^1001 elements, (8|4) an invocation in whole 16-byte vectors", reason), reason
        rng = np.random.default_rng(29)
        for count in (1, 2, 3, 7, 8, 9, 15, 16, 17, 1001):
            a, b = rng.integers(-2**63, 2**63 - 1, count), rng.integers(-2**63, 2**63 - 1, count)
            with np.errstate(over="ignore"):
                assert np.array_equal(dml.add(a, b, device=device), a + b), count
                assert np.array_equal(dml.multiply(a, b, device=device), a * b), count
            assert np.array_equal(dml.cast(a.astype(np.float64), np.int64, device=device),
                                  a.astype(np.float64).astype(np.int64)), count
            floats = (a >> 2).astype(np.float32)  # within INT64's range
            assert np.array_equal(dml.cast(a >> 2, np.float32, device=device), floats), count
            assert np.array_equal(dml.cast(floats, np.int64, device=device), floats.astype(np.int64)), count
        # 4 KiB segments: an INT64 view from element 2 meets its boundaries at elements 512k - 2,
        # off the four elements of a 16-byte FP32 vector, so those windows start with a short one.
        device.segment_size = 4096
        a, b = rng.integers(-2**40, 2**40, 3001), rng.integers(-2**40, 2**40, 3001)
        da, db = dml.asarray(a, device=device), dml.asarray(b, device=device)
        for skip in (1, 2, 3, 4):
            assert np.array_equal((da[skip:] - db[:-skip]).numpy(), a[skip:] - b[:-skip]), skip
            assert np.array_equal(da[skip:].astype(np.float32).numpy(), a[skip:].astype(np.float32)), skip
            narrow = dml.asarray(a.astype(np.int32), device=device)[skip:]
            assert np.array_equal(narrow.astype(np.int64).numpy(), a[skip:].astype(np.int32).astype(np.int64)), skip


def test_packed_64_bit_tensors_past_a_segment_run_in_windows():
    """A device whose buffers bind in 4 KiB segments (512 INT64 elements): packed 64-bit work
    (a fused chain with a UINT8 mask, a cast, the NumPy front end, views at odd offsets) is
    split into windows at the boundaries, with NumPy's results; a transposed one reads
    packed copies (NumPy arrays) as the 32-bit kernels do."""
    with dml.create_device() as device:
        device.segment_size = 4096
        rng = np.random.default_rng(23)
        a, b = rng.integers(-2**62, 2**62, 3001), rng.integers(-2**31, 2**31, 3001)
        da, db = dml.asarray(a, device=device), dml.asarray(b, device=device)
        assert np.array_equal(dml.where(da > db, da - db, db).numpy(), np.where(a > b, a - b, b))
        assert np.array_equal((da[3:] < db[:-3]).numpy(), (a[3:] < b[:-3]).astype(np.uint8))
        assert np.array_equal(da.astype(np.float32).numpy(), a.astype(np.float32))
        assert np.array_equal(dml.multiply(a, b, device=device), a * b)
        square = a[:2916].reshape(54, 54)
        assert np.array_equal(dml.subtract(square.T, square, device=device), square.T - square)
