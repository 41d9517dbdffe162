"""Device-resident arrays: the front ends compute on them without a host round trip and give
the bits they give on NumPy arrays."""

import threading

import numpy as np
import pytest

import dmlpy as dml
from dmlpy.runtime.binding import Buffer


def bits(array):
    return np.ascontiguousarray(array).view(f"u{np.dtype(array.dtype).itemsize}")


def test_asarray_round_trips_and_exports(device):
    values = np.arange(12, dtype=np.float16).reshape(3, 4) - 5
    array = dml.asarray(values, device=device)
    assert isinstance(array, dml.DeviceArray) and array.shape == (3, 4) and array.dtype == np.float16
    assert array.ndim == 2 and array.size == 12 and array.nbytes == 24 and len(array) == 3
    assert np.array_equal(array.numpy(), values) and np.array_equal(np.asarray(array), values)
    assert np.array_equal(np.from_dlpack(array), values) and array.__dlpack_device__() == (1, 0)
    assert np.asarray(array, dtype=np.float32).dtype == np.float32
    assert dml.asarray(array, device=device) is array
    assert repr(array).startswith("dmlpy.DeviceArray([[-5., -4., -3., -2.],\n") and "dtype=float16" in repr(array)
    assert dml.asarray([1.5, 2.5], device=device).dtype == np.float32
    assert dml.asarray([1, 2], device=device, dtype=np.int8).dtype == np.int8
    with pytest.raises(BufferError, match="copy=False"):
        array.__dlpack__(copy=False)
    with pytest.raises(dml.InvalidArgumentError, match="has no TensorDataType"):
        dml.asarray([1.0], device=device, dtype=np.complex64)
    with pytest.raises(TypeError, match="0-d"):
        len(dml.asarray(np.float32(1), device=device))


def test_a_chain_stays_on_the_device_with_the_same_bits(device, monkeypatch):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((16, 33)) * 3).astype(np.float32)
    x[0, :4] = [np.nan, np.inf, -0.0, 1e-40]
    t = dml.asarray(x, device=device)

    def never(*args, **kwargs):
        raise AssertionError("a device-resident chain read a buffer back")

    with monkeypatch.context() as patch:
        patch.setattr(Buffer, "read", never)
        result = dml.relu_grad(t, dml.scaled_tanh(dml.elu(dml.linear(t, 2.0, 1.0))))
        softmax = dml.softmax(result)
        along_rows = dml.log_softmax(result, axes=(0,))
    assert isinstance(result, dml.DeviceArray)
    expected = dml.relu_grad(x, dml.scaled_tanh(dml.elu(dml.linear(x, 2.0, 1.0))))
    assert np.array_equal(bits(result.numpy()), bits(expected))
    assert np.array_equal(bits(softmax.numpy()), bits(dml.softmax(expected)))
    assert np.array_equal(bits(along_rows.numpy()), bits(dml.log_softmax(expected, axes=(0,))))


def test_broadcasting_and_host_arguments_beside_device_arrays(device):
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    dy = np.linspace(1, 3, 4, dtype=np.float32)
    got = dml.relu_grad(dml.asarray(x, device=device), dy)  # a host dY, uploaded and broadcast
    assert np.array_equal(bits(got.numpy()), bits(dml.relu_grad(x, dy)))
    got = dml.relu_grad(x, dml.asarray(dy, device=device))
    assert np.array_equal(bits(got.numpy()), bits(dml.relu_grad(x, dy)))
    got = dml.relu_grad(dml.asarray(x, device=device), 2.0)  # a Python number takes the array's dtype
    assert got.dtype == np.float32 and np.array_equal(got.numpy(), dml.relu_grad(x, np.float32(2)))
    with pytest.raises(dml.InvalidArgumentError, match="do not broadcast"):
        dml.relu_grad(dml.asarray(x, device=device), np.ones(3, np.float32))
    with pytest.raises(dml.InvalidArgumentError, match=r"^b\.dtype object has no TensorDataType"):
        _ = dml.asarray(x, device=device) == None  # noqa: E711 (NumPy's elementwise ==, which dmlpy refuses by name)
    with pytest.raises(dml.InvalidArgumentError, match="dy.dtype float16 != x.dtype float32"):
        dml.relu_grad(dml.asarray(x, device=device), dml.asarray(dy.astype(np.float16), device=device))
    # A row-wise gradient broadcasts as the host front end does: dY expanded on the device.
    got = dml.softmax_grad(dml.asarray(x, device=device), dy)
    assert np.array_equal(bits(got.numpy()), bits(dml.softmax_grad(x, dy)))
    got = dml.log_softmax_grad(dml.asarray(dy, device=device), dml.asarray(x, device=device)[:, 1:2], axes=0)
    assert np.array_equal(bits(got.numpy()), bits(dml.log_softmax_grad(dy, x[:, 1:2], axes=0)))


def test_out_in_place_copied_and_on_the_host(device):
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    t = dml.asarray(x, device=device)
    assert dml.relu(t, out=t) is t  # in place
    assert np.array_equal(t.numpy(), dml.relu(x))
    g = dml.asarray(x, device=device)
    assert dml.gelu(g, out=g) is g  # GELU never runs in place: computed aside, then copied
    assert np.array_equal(bits(g.numpy()), bits(dml.gelu(x)))
    host = np.empty(16, np.float32)
    assert dml.tanh(dml.asarray(x, device=device), out=host) is host
    assert np.array_equal(bits(host), bits(dml.tanh(x)))
    with pytest.raises(dml.InvalidArgumentError, match="out is a DeviceArray of shape"):
        dml.tanh(t, out=dml.asarray(np.zeros(3, np.float32), device=device))


def test_devices_must_agree_and_a_closed_device_says_so(device):
    other = dml.create_device()
    try:
        mine, theirs = dml.asarray(np.ones(4, np.float32), device=device), dml.asarray(np.ones(4, np.float32),
                                                                                       device=other)
        with pytest.raises(dml.InvalidArgumentError, match="dy is a DeviceArray of another device"):
            dml.relu_grad(mine, theirs)
        with pytest.raises(dml.InvalidArgumentError, match="device names another device"):
            dml.tanh(mine, device=other)
        moved = dml.asarray(theirs, device=device)
        assert moved.device is device and np.array_equal(moved.numpy(), np.ones(4, np.float32))
    finally:
        other.close()
    with pytest.raises(dml.DeviceRemovedError):
        theirs.numpy()


def test_collected_arrays_lend_their_buffers_to_the_next(device, monkeypatch):
    x = dml.asarray(np.linspace(-1, 1, 4096, dtype=np.float32), device=device)
    for _ in range(2):  # the first rounds fill the pool (a result stays alive while the next is computed)
        result = dml.tanh(dml.sigmoid(dml.elu(x))).compute()
    created = []
    original = dml.Device.create_buffer
    monkeypatch.setattr(dml.Device, "create_buffer", lambda self, size: created.append(size) or original(self, size))
    for _ in range(5):
        result = dml.tanh(dml.sigmoid(dml.elu(x))).compute()
    assert created == [] and result.shape == (4096,)
    assert device.free_arrays.nbytes <= device.cache_limits.free_array_bytes
    held = device.free_arrays.nbytes
    del result  # back at once, not at the next garbage collection (no reference cycle holds it)
    assert device.free_arrays.nbytes == held + 16384


def test_empty_device_arrays_and_prelu_through_the_host(device):
    empty = dml.asarray(np.zeros((0, 3), np.float32), device=device)
    assert dml.tanh(empty).shape == (0, 3)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    slope = np.array([0.5, 0.25, 2, 4], np.float32)
    dx, dslope = dml.prelu_grad(dml.asarray(x, device=device), slope, x)
    want_dx, want_dslope = dml.prelu_grad(x, slope, x)
    assert np.array_equal(dx, want_dx) and np.array_equal(dslope, want_dslope)


def test_a_deferred_chain_runs_as_one_fused_graph_when_read(device, monkeypatch):
    compiled = []
    original = dml.Device.compile_graph
    monkeypatch.setattr(dml.Device, "compile_graph",
                        lambda self, graph, flags=0: compiled.append(original(self, graph, flags)) or compiled[-1])
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    t = dml.asarray(x, device=device)
    y = dml.relu_grad(t, dml.hard_sigmoid(dml.leaky_relu(dml.linear(t, 0.75, 1.0))))
    assert compiled == []  # nothing ran yet
    expected = dml.relu_grad(x, dml.hard_sigmoid(dml.leaky_relu(dml.linear(x, 0.75, 1.0))))
    assert np.array_equal(bits(y.numpy()), bits(expected))
    (graph,) = compiled
    assert [k.nodes for k in graph.kernels] == [(0, 1, 2, 3)]
    again = dml.relu_grad(t, dml.hard_sigmoid(dml.leaky_relu(dml.linear(t, 0.75, 1.0)))).compute()
    assert len(compiled) == 1 and np.array_equal(bits(again.numpy()), bits(expected))  # compiled once, reused


def test_a_value_read_twice_in_a_chain_counts_once_toward_a_graphs_size(device, monkeypatch):
    """y = y * y + y, six times: 12 operators, each result read three times. Counted once each,
    they are one graph of one kernel; counted per read, the chain would be cut into graphs of
    a few operators."""
    compiled = []
    original = dml.Device.compile_graph
    monkeypatch.setattr(dml.Device, "compile_graph",
                        lambda self, graph, flags=0: compiled.append(original(self, graph, flags)) or compiled[-1])
    x = np.linspace(-1, 1, 100, dtype=np.float32)
    value, expected = dml.asarray(x, device=device), x
    for _ in range(6):
        value, expected = value * value + value, dml.add(dml.multiply(expected, expected), expected)
    assert np.array_equal(bits(value.numpy()), bits(expected))
    assert len(compiled) == 1 and [len(k.nodes) for k in compiled[0].kernels] == [12]


def test_a_chain_of_four_arrays_and_four_python_scalars_is_one_kernel(device, monkeypatch):
    """A leaky ReLU of a * b + c plus a scaled d: each Python scalar is an input of the graph,
    so the chain reads eight tensors, the most one element-wise kernel takes."""
    compiled = []
    original = dml.Device.compile_graph
    monkeypatch.setattr(dml.Device, "compile_graph",
                        lambda self, graph, flags=0: compiled.append(original(self, graph, flags)) or compiled[-1])
    rng = np.random.default_rng(12)
    hosts = [(rng.standard_normal(300) * 4).astype(np.float32) for _ in range(4)]
    hosts[0][:4] = [np.inf, -0.0, np.nan, 1e-40]
    a, b, c, d = (dml.asarray(h, device=device) for h in hosts)
    y = dml.where(a * b + c > 0, a * b + c, (a * b + c) * 0.01) + d * 0.5 - 0.25
    got = y.numpy()
    (graph,) = compiled
    assert len(graph.kernels) == 1
    ha, hb, hc, hd = hosts
    s = ha * hb + hc
    with np.errstate(invalid="ignore"):
        expected = np.where(s > 0, s, s * np.float32(0.01)) + hd * np.float32(0.5) - np.float32(0.25)
    assert np.array_equal(bits(got), bits(expected))


def test_deferred_results_see_their_inputs_as_they_were_at_the_call(device):
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    t = dml.asarray(x, device=device)
    before = dml.tanh(t)
    dml.relu(t, out=t)  # t changes in place: `before` is computed first
    assert np.array_equal(bits(before.numpy()), bits(dml.tanh(x)))
    assert np.array_equal(t.numpy(), dml.relu(x))
    u = dml.sigmoid(t)
    t.write(np.zeros(64, np.float32))
    assert np.array_equal(bits(u.numpy()), bits(dml.sigmoid(dml.relu(x))))
    inner = dml.elu(t)
    outer = dml.tanh(inner)
    assert np.array_equal(bits(outer.numpy()), bits(dml.tanh(dml.elu(np.zeros(64, np.float32)))))
    assert np.array_equal(bits(inner.numpy()), bits(dml.elu(np.zeros(64, np.float32))))  # still right after


def test_deferred_broadcasts_long_chains_threads_and_errors(device, device_at):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    row = dml.tanh(dml.asarray(x[0], device=device))  # deferred, then broadcast: computed on its own
    got = dml.relu_grad(dml.asarray(x, device=device), row)
    assert np.array_equal(bits(got.numpy()), bits(dml.relu_grad(x, dml.tanh(x[0]))))
    value, expected = dml.asarray(x, device=device), x
    for _ in range(40):  # past MAX_FUSED_NODES: computed in pieces
        value, expected = dml.linear(value, 1.125, -0.25), dml.linear(expected, 1.125, -0.25)
    assert np.array_equal(bits(value.numpy()), bits(expected))
    shared = dml.sigmoid(dml.elu(dml.asarray(x, device=device)))
    results = []
    threads = [threading.Thread(target=lambda: results.append(shared.numpy())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(np.array_equal(bits(r), bits(dml.sigmoid(dml.elu(x)))) for r in results)
    with pytest.raises(dml.InvalidArgumentError, match="alpha"):
        dml.celu(dml.asarray(x, device=device), alpha=0.0)  # refused at the call, not when read
    old = device_at(dml.FeatureLevel.LEVEL_5_0)
    with pytest.raises(dml.UnsupportedError, match="FEATURE_LEVEL_5_1"):
        dml.gelu(dml.asarray(x, device=old))
