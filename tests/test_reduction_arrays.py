"""Reductions of device arrays (docs/ownership.md, "Device arrays") and in graphs: they stay
on the device, take the element-wise chain they read as their first pass (one kernel, the
bits of the operators run one by one), are ordered against concurrent writes by the array
lock, and behave on close() and fork() as every other device-array operation does (the fork
and close cases run in child processes)."""

import threading

import numpy as np
import pytest
from child import assert_clean, run_child
from test_device_array_hardening import MESA_FORK_SAFE_ENV
from test_graph import run_graph

import dmlpy as dml

T = dml.TensorDataType


def bits(array):
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


@pytest.mark.parametrize("method", ["sum", "prod", "mean", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_methods_match_the_host_front_ends_and_stay_on_the_device(device, method, axis, keepdims):
    x = (np.random.default_rng(4).standard_normal((3, 5, 7)) + 1).astype(np.float32)
    if method.startswith("arg") and isinstance(axis, tuple):
        axis = 0
    a = dml.asarray(x, device=device)
    got = getattr(a, method)(axis=axis, keepdims=keepdims)
    want = getattr(dml, method)(x, axis=axis, keepdims=keepdims, device=device)
    assert isinstance(got, dml.DeviceArray)
    assert got.shape == want.shape == getattr(np, method)(x, axis=axis, keepdims=keepdims).shape
    if method.startswith("arg"):
        assert got.dtype == want.dtype == np.int64 and np.array_equal(got.numpy(), want)
    else:
        assert got.dtype == x.dtype and np.array_equal(bits(got.numpy()), bits(want))


def test_numpys_functions_call_the_methods(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = dml.asarray(x, device=device)
    assert isinstance(np.sum(a, axis=0), dml.DeviceArray)
    assert np.array_equal(np.max(a, axis=1).numpy(), x.max(axis=1))
    assert int(np.argmax(a).numpy()) == 11
    with pytest.raises(dml.InvalidArgumentError, match="out"):
        a.sum(out=np.empty(4, np.float32))
    # NumPy passes dtype and out to mean, and keepdims where given
    assert np.array_equal(bits(np.mean(a).numpy()), bits(dml.mean(x, device=device)))
    assert np.array_equal(bits(np.mean(a, axis=0).numpy()), bits(dml.mean(x, axis=0, device=device)))
    assert np.argmin(a, axis=1, keepdims=True).shape == (3, 1)
    assert np.array_equal(bits(np.prod(a[:, 1:], axis=1).numpy()), bits(dml.prod(x[:, 1:], axis=1, device=device)))


@pytest.mark.parametrize("method", ["sum", "prod", "mean", "cumsum", "cumprod"])
def test_an_accumulator_dtype_casts_the_elements_first(device, method):
    x = (np.random.default_rng(6).standard_normal((4, 6)) + 1).astype(np.float32)
    a = dml.asarray(x, device=device)
    got = getattr(np, method)(a, axis=1, dtype=np.float16)
    want = getattr(dml, method)(x.astype(np.float16), axis=1, device=device)
    assert isinstance(got, dml.DeviceArray) and got.dtype == np.float16
    assert np.array_equal(bits(got.numpy()), bits(want))
    same = getattr(a, method)(axis=1, dtype=np.float32)
    assert np.array_equal(bits(same.numpy()), bits(getattr(dml, method)(x, axis=1, device=device)))


@pytest.mark.parametrize("method", ["cumsum", "cumprod"])
def test_running_sums_and_products_are_methods_too(device, method):
    x = np.random.default_rng(7).standard_normal((3, 5)).astype(np.float32)
    a = dml.asarray(x, device=device)
    for axis in (None, 0, -1):
        got = getattr(a, method)(axis)
        assert isinstance(got, dml.DeviceArray)
        assert np.array_equal(bits(got.numpy()), bits(getattr(dml, method)(x, axis, device=device)))
    assert isinstance(getattr(np, method)(a), dml.DeviceArray)  # NumPy's function calls the method
    with pytest.raises(dml.InvalidArgumentError, match="out"):
        getattr(a, method)(out=np.empty(15, np.float32))


def test_dtype_is_refused_where_numpy_has_none(device):
    a = dml.asarray(np.ones((2, 3), np.float32), device=device)
    for method in ("max", "min", "argmax", "argmin"):
        with pytest.raises(dml.InvalidArgumentError, match=f"{method}: dtype") as caught:
            getattr(a, method)(dtype=np.float16)
        assert caught.value.field == "dtype"


def test_a_reduction_reads_a_deferred_chain_computed(device):
    x = np.linspace(-3, 3, 5000, dtype=np.float32).reshape(50, 100)
    a = dml.asarray(x, device=device)
    chain = dml.tanh(dml.relu(a))  # deferred until the reduction reads it
    assert np.array_equal(bits(chain.sum(axis=1).numpy()), bits(dml.sum(dml.tanh(dml.relu(x)), axis=1)))


@pytest.mark.parametrize("keepdims", [False, True])
def test_element_wise_operators_read_a_reduction_in_numpys_shape(device, keepdims):
    host = np.random.default_rng(8).standard_normal((5, 9)).astype(np.float32)
    a = dml.asarray(host, device=device)
    sums = a.sum(axis=1, keepdims=keepdims)  # REDUCE writes (5, 1); NumPy's shape drops the 1 unless kept
    expected = dml.sum(host, axis=1, keepdims=keepdims)
    assert np.array_equal((sums * 2 + 1).numpy(), expected * np.float32(2) + np.float32(1))



@pytest.mark.parametrize("data_type, dtype", [(T.FLOAT32, np.float32), (T.FLOAT16, np.float16), (T.INT32, np.int32)])
def test_an_element_wise_prologue_fuses_into_a_reduction_with_the_bits_of_the_nodes_apart(device, data_type, dtype):
    """SUM_SQUARE (SUM for integers) of a - b, and ARGMAX of a * b from the end: one kernel
    each, over rows long enough for two chunks, as the operators run one by one give."""
    rng = np.random.default_rng(6)
    shape = (3, 5000)
    xa, xb = (rng.standard_normal((2, *shape)) * 20).astype(dtype)
    g = dml.GraphBuilder(device)
    a, b = g.input(dml.BufferTensorDesc(data_type, shape)), g.input(dml.BufferTensorDesc(data_type, shape))
    function = "SUM" if data_type is T.INT32 else "SUM_SQUARE"
    total = dml.graph.reduce(dml.graph.subtract(a, b), function=function, axes=(1,))
    index = dml.graph.argmax(dml.graph.multiply(a, b), axes=(1,), axis_direction="DECREASING")
    compiled = g.build([total, index])
    assert len(compiled.kernels) == 2  # each reduction with its prologue
    got_total, got_index = run_graph(device, compiled, [xa, xb])
    apart_total = dml.reduce(dml.subtract(xa, xb, device=device), function, 1, device=device)
    assert np.array_equal(bits(got_total), bits(apart_total.reshape(-1)))
    product = dml.multiply(xa, xb, device=device)
    last = product.shape[1] - 1 - np.argmax(product[:, ::-1], axis=1)  # the last maximum
    assert np.array_equal(got_index, last)


def test_a_prologue_read_elsewhere_is_not_fused(device):
    g = dml.GraphBuilder(device)
    a = g.input(dml.BufferTensorDesc(T.FLOAT32, (4, 8)))
    shared = dml.graph.exp(a)
    compiled = g.build([dml.graph.reduce(shared, function="SUM", axes=(1,)), shared])  # also a graph output
    assert len(compiled.kernels) == 2
    x = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    total, values = run_graph(device, compiled, [x])
    assert np.array_equal(bits(values), bits(dml.exp(x, device=device).reshape(-1)))
    assert np.array_equal(bits(total), bits(dml.sum(dml.exp(x, device=device), axis=1, device=device)))


@pytest.mark.parametrize("function", ["SUM", "ARGMAX"])
def test_a_value_the_prologue_reads_twice_is_in_the_reductions_kernel(device, function):
    """REDUCE of d * d + d, d = a - b: d has three readers, all in the reduction's prologue,
    so the graph is one kernel, with the bits of the nodes run apart."""
    g = dml.GraphBuilder(device)
    a, b = (g.input(dml.BufferTensorDesc(T.FLOAT32, (5, 40))) for _ in range(2))
    d = dml.graph.subtract(a, b)
    reduced = dml.graph.reduce(dml.graph.add(dml.graph.multiply(d, d), d), function=function, axes=(1,))
    compiled = g.build([reduced])
    assert [k.nodes for k in compiled.kernels] == [(0, 1, 2, 3)]
    rng = np.random.default_rng(12)
    xa, xb = (rng.standard_normal((5, 40)).astype(np.float32) * 4 for _ in range(2))
    xa[0, :3] = [np.inf, -0.0, 1e-42]
    (got,) = run_graph(device, compiled, [xa, xb])
    difference = dml.subtract(xa, xb, device=device)
    terms = dml.add(dml.multiply(difference, difference, device=device), difference, device=device)
    assert np.array_equal(bits(got), bits(dml.reduce(terms, function, (1,), device=device).reshape(-1)))


@pytest.mark.parametrize("shape", [(4, 300), (3, 5000)])  # a row read once (lavapipe), two chunks a row
@pytest.mark.parametrize("count", [5, 6])
def test_a_prologue_reads_five_tensors_in_the_reductions_kernel_and_a_sixth_splits_it(device, shape, count):
    """SUM of w * m * (a - b) * (a - b) + c (+ c * e): a weighted, masked squared error takes
    five outside tensors, the most a reduction's kernel binds beside its own; with a sixth the
    reduction takes what fits and the rest runs before it. The bits are the nodes' apart."""
    rng = np.random.default_rng(count)
    hosts = [(rng.standard_normal(shape) * 3).astype(np.float32) for _ in range(count)]
    hosts[0][0, :3] = [np.inf, -0.0, 1e-41]
    g = dml.GraphBuilder(device)
    w, m, a, b, c, *more = (g.input(dml.BufferTensorDesc(T.FLOAT32, shape)) for _ in range(count))
    G = dml.graph
    d = G.subtract(a, b)
    terms = G.add(G.multiply(G.multiply(G.multiply(w, m), d), d), c)
    if more:
        terms = G.add(terms, G.multiply(c, more[0]))
    compiled = g.build([G.reduce(terms, function="SUM", axes=(1,))])
    assert len(compiled.kernels) == (1 if count == 5 else 2)
    (got,) = run_graph(device, compiled, hosts)
    hw, hm, ha, hb, hc, *hmore = hosts
    hd = dml.subtract(ha, hb)
    expected = dml.add(dml.multiply(dml.multiply(dml.multiply(hw, hm), hd), hd), hc)
    if hmore:
        expected = dml.add(expected, dml.multiply(hc, hmore[0]))
    assert np.array_equal(bits(got), bits(dml.reduce(expected, "SUM", (1,), device=device).reshape(-1)))
    # A softmax walks its row several times (on lavapipe, a copy of the row in private memory):
    # the same prologue's five tensors in one kernel.
    g = dml.GraphBuilder(device)
    w, m, a, b, c = (g.input(dml.BufferTensorDesc(T.FLOAT32, shape)) for _ in range(5))
    d = G.subtract(a, b)
    compiled = g.build([G.softmax(G.add(G.multiply(G.multiply(G.multiply(w, m), d), d), c))])
    assert len(compiled.kernels) == 1
    (got,) = run_graph(device, compiled, hosts[:5])
    softmax = dml.softmax(dml.add(dml.multiply(dml.multiply(dml.multiply(hw, hm), hd), hd), hc), device=device)
    assert np.array_equal(bits(got), bits(softmax.reshape(-1)))


def test_a_device_array_chain_ending_in_a_reduction_is_one_kernel(device):
    rng = np.random.default_rng(9)
    xa, xb = rng.standard_normal((2, 64, 700)).astype(np.float32)
    with dml.create_device() as fresh:  # its cache holds only what this chain compiles
        a, b = dml.asarray(xa, device=fresh), dml.asarray(xb, device=fresh)
        difference = a - b
        got = (difference * difference).mean(axis=1).numpy()
        assert len(fresh.compiled_operators) == 1  # the chain's one graph: subtract, multiply and AVERAGE
    want = dml.mean(dml.multiply(xa - xb, xa - xb, device=device), axis=1, device=device)
    assert np.array_equal(bits(got), bits(want))


def test_a_reduction_and_a_concurrent_write_see_one_order(device):
    versions = [np.full(1 << 14, v, np.float32) for v in range(1, 9)]
    expected = [dml.sum(v, device=device) for v in versions]
    a = dml.asarray(versions[0], device=device)
    published = [0]
    stop = threading.Event()

    def writer():
        k = 0
        while not stop.is_set():
            k += 1
            a.write(versions[k % len(versions)])
            published[0] = k

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(40):
            before = published[0]
            total = a.sum()
            after = published[0]
            got = bits(total.numpy())
            allowed = {k % len(versions) for k in range(before, after + 2)}
            assert any(np.array_equal(got, bits(expected[k])) for k in allowed), (before, after, total)
    finally:
        stop.set()
        thread.join()


def test_reductions_after_close_raise_device_removed():
    result = run_child("""
        device = dml.create_device()
        a = dml.asarray(np.ones(1000, np.float32), device=device)
        total = a.sum()
        device.close()
        for call in (lambda: a.sum(), lambda: total.numpy(), lambda: dml.argmax(a)):
            try:
                call()
                raise SystemExit("a reduction ran on a closed device")
            except dml.DeviceRemovedError:
                pass
        print("ok")
    """, timeout=60)
    assert_clean(result)


def test_a_forked_child_cannot_reduce_the_parents_arrays():
    result = run_child("""
        device = dml.create_device()
        a = dml.asarray(np.arange(4096, dtype=np.float32), device=device)
        pid = os.fork()
        if pid == 0:
            try:
                a.sum().numpy()
                os._exit(3)
            except dml.DeviceRemovedError as error:
                os._exit(0 if "another process" in str(error) else 4)
            except BaseException:
                os._exit(5)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert float(a.sum().numpy()) == float(np.arange(4096, dtype=np.float32).sum())  # the parent still reduces
        print("ok")
    """, env=MESA_FORK_SAFE_ENV)
    assert_clean(result)


@pytest.mark.parametrize("data_type, dtype", [(T.FLOAT32, np.float32), (T.FLOAT16, np.float16)])
def test_the_softmax_family_takes_an_element_wise_prologue_in_graphs(device, data_type, dtype):
    """softmax(2a + 0.5 + b) and log_softmax_grad(tanh(a), b): one kernel each, with the bits of
    the operators run one by one (the prologue's scalars beside the reduction's)."""
    rng = np.random.default_rng(10)
    xa, xb = rng.standard_normal((2, 5, 300)).astype(dtype)
    g = dml.GraphBuilder(device)
    a, b = g.input(dml.BufferTensorDesc(data_type, (5, 300))), g.input(dml.BufferTensorDesc(data_type, (5, 300)))
    forward = dml.graph.softmax(dml.graph.add(dml.graph.linear(a, alpha=2.0, beta=0.5), b))
    gradient = dml.graph.log_softmax_grad(dml.graph.tanh(a), b)
    compiled = g.build([forward, gradient])
    assert len(compiled.kernels) == 2
    got_forward, got_gradient = run_graph(device, compiled, [xa, xb])
    want_forward = dml.softmax(dml.add(dml.linear(xa, 2.0, 0.5, device=device), xb, device=device), device=device)
    want_gradient = dml.log_softmax_grad(dml.tanh(xa, device=device), xb, device=device)
    assert np.array_equal(bits(got_forward), bits(want_forward.reshape(-1)))
    assert np.array_equal(bits(got_gradient), bits(want_gradient.reshape(-1)))


def test_a_prologue_with_long_loops_keeps_the_row_whole_on_lavapipe(device):
    """fmod's loop runs up to 277 times an element: the reduction then takes small chunks, so
    no invocation passes lavapipe's 65,535 loop iterations and every element is counted."""
    rng = np.random.default_rng(12)
    xa = (rng.standard_normal((2, 6000)) * 1e30).astype(np.float32)  # exponents far apart: long fmod loops
    xb = np.full((2, 6000), 3.0, np.float32)
    g = dml.GraphBuilder(device)
    a, b = g.input(dml.BufferTensorDesc(T.FLOAT32, (2, 6000))), g.input(dml.BufferTensorDesc(T.FLOAT32, (2, 6000)))
    compiled = g.build([dml.graph.reduce(dml.graph.fmod(a, b), function="SUM", axes=(1,))])
    assert len(compiled.kernels) == 1
    (got,) = run_graph(device, compiled, [xa, xb])
    want = dml.sum(dml.fmod(xa, xb, device=device), axis=1, device=device)
    assert np.array_equal(bits(got), bits(want))
