"""Intermediates whose lifetimes do not overlap share the graph's temporary resource: smaller
temporaries, the same bits as the operators run one by one (the NumPy front ends, which never
fuse), and no range ever overwritten while a later kernel still has to read it."""

import numpy as np
from test_graph import bits, run_graph

import dmlpy as dml

T = dml.TensorDataType
SEGMENT = 4096
RNG = np.random.default_rng(43)


def values(shape):
    return (RNG.standard_normal(shape) * 2).astype(np.float32)


def check_temporaries(compiled, segment_size=None):
    """Replay the kernels in order over a map of which write last touched each temporary byte:
    every range a kernel reads must still hold, whole, the write of that range (each kernel of
    these graphs writes one output, its last tensor but its scratch); the ranges one kernel
    binds never overlap; each starts on 16 bytes, and one that fits in a segment lies inside
    one. Returns the bytes of every intermediate written, summed."""
    size = compiled.binding_properties.temporary_resource_size
    last_write = np.full(size, -1)
    writes, written = [], 0
    for number, kernel in enumerate(compiled.kernels):
        scratch = [t for t in kernel.tensors if t.role == "temporary" and t.desc is None]
        plain = [t for t in kernel.tensors if not (t.role == "temporary" and t.desc is None)]
        temporaries = [t for t in kernel.tensors if t.role == "temporary"]
        for k, a in enumerate(temporaries):
            assert a.offset % 16 == 0 and a.offset + a.size <= size, (number, a)
            if segment_size and a.size <= segment_size:
                assert a.offset // segment_size == (a.offset + a.size - 1) // segment_size, (number, a)
            for b in temporaries[k + 1:]:
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, (number, a, b)
        for tensor in plain[:-1]:
            if tensor.role == "temporary":
                (write,) = set(last_write[tensor.offset:tensor.offset + tensor.size])
                assert write >= 0 and writes[write] == (tensor.offset, tensor.size), (number, tensor)
        for tensor in [*plain[-1:], *scratch]:
            if tensor.role == "temporary":
                last_write[tensor.offset:tensor.offset + tensor.size] = len(writes)
                writes.append((tensor.offset, tensor.size))
                written += tensor.size if tensor.desc is not None else 0
    return written


def softmax_chain(device, steps, shape=(4, 8)):
    """a <- softmax(a), `steps` times: each softmax is a kernel of its own (a reduction takes an
    element-wise prologue, never another reduction), whose output the next kernel alone
    reads, so two ranges can take turns."""
    g = dml.GraphBuilder(device)
    a = g.input(dml.BufferTensorDesc(T.FLOAT32, shape))
    for _ in range(steps):
        a = dml.graph.softmax(a)
    return g.build([a])


def softmax_reference(device, x, links):
    """softmax(x), `links` times, by the front ends one call at a time."""
    for _ in range(links):
        x = dml.softmax(x, device=device)
    return x


def scratch_of(compiled) -> int:
    return max((t.size for k in compiled.kernels for t in k.tensors if t.role == "temporary" and t.desc is None),
               default=0)


def test_a_chain_reuses_two_ranges_with_the_bits_of_the_nodes_one_by_one(device):
    compiled = softmax_chain(device, 6)
    assert len(compiled.kernels) == 6
    written = check_temporaries(compiled)
    assert written == 5 * 128 and compiled.binding_properties.temporary_resource_size <= 2 * 128 + scratch_of(compiled)
    x = values((4, 8))
    (got,) = run_graph(device, compiled, [x])
    assert np.array_equal(bits(got), bits(softmax_reference(device, x, 6).reshape(-1)))


def test_products_and_reductions_share_with_their_scratch(device):
    """GEMM -> SUM over rows -> GEMM -> SUM -> GEMM: each intermediate is read by the next
    kernel only, so the two products share a range, as do the two sums."""
    a, w1, w2, w3 = values((6, 40)), values((40, 24)), values((1, 24)), values((1, 5))
    g = dml.GraphBuilder(device)
    x, m1, m2, m3 = (g.input(dml.BufferTensorDesc(T.FLOAT32, v.shape)) for v in (a, w1, w2, w3))
    h = dml.graph.gemm(x, m1)
    h = dml.graph.gemm(dml.graph.reduce(h, function="SUM", axes=(1,)), m2)
    y = dml.graph.gemm(dml.graph.reduce(h, function="SUM", axes=(1,)), m3)
    compiled = g.build([y])
    assert len(compiled.kernels) == 5
    written = check_temporaries(compiled)
    assert compiled.binding_properties.temporary_resource_size < written
    (got,) = run_graph(device, compiled, [a, w1, w2, w3])
    expected = dml.gemm(a, w1, device=device)
    expected = dml.gemm(dml.reduce(expected, "SUM", 1, device=device), w2, device=device)
    expected = dml.gemm(dml.reduce(expected, "SUM", 1, device=device), w3, device=device)
    assert np.array_equal(bits(got), bits(expected.reshape(-1)))


def test_a_value_read_late_keeps_its_range_while_others_take_turns(device):
    """The first softmax is read by the next kernel and the last: its range stays live over
    the whole chain, and the chain's values take turns in the others."""
    g = dml.GraphBuilder(device)
    x = g.input(dml.BufferTensorDesc(T.FLOAT32, (4, 8)))
    early = dml.graph.softmax(x)
    a = dml.graph.softmax(early)
    for _ in range(4):
        a = dml.graph.softmax(a)
    compiled = g.build([dml.graph.add(a, early)])
    written = check_temporaries(compiled)
    assert compiled.binding_properties.temporary_resource_size <= 3 * 128 + scratch_of(compiled) < written
    array = values((4, 8))
    expected = early_expected = dml.softmax(array, device=device)
    for _ in range(5):
        expected = dml.softmax(expected, device=device)
    (got,) = run_graph(device, compiled, [array])
    assert np.array_equal(bits(got), bits((expected + early_expected).reshape(-1)))


def test_shared_ranges_stay_inside_one_segment_each():
    """Intermediates of 3,000 bytes on a device of 4,096-byte segments: two never share one
    segment, and taking turns keeps the chain to two segments."""
    with dml.create_device() as small:
        small.segment_size = SEGMENT
        compiled = softmax_chain(small, 5, (3, 250))
        check_temporaries(compiled, SEGMENT)
        assert compiled.binding_properties.temporary_resource_size == SEGMENT + 3000
        x = values((3, 250))
        (got,) = run_graph(small, compiled, [x])
        assert np.array_equal(bits(got), bits(softmax_reference(small, x, 5).reshape(-1)))
