"""Recorded command lists and the front end's reuse of compiled operators and bindings."""

import numpy as np
import pytest
from reference import relu_grad

import dmlpy as dml
from dmlpy.runtime.kompute import GpuContext

T = dml.TensorDataType


def compiled_relu_grad(device, count=256, data_type=T.FLOAT32):
    tensor = dml.BufferTensorDesc(data_type, (count,))
    return device.compile_operator(device.create_operator(dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)))


def upload(device, array):
    buffer = device.create_buffer(array.nbytes)
    buffer.write(array)
    return buffer


def test_a_chain_of_dependent_dispatches_runs_in_order(device):
    """dy_{k+1} = relu_grad(x_k, dy_k): each dispatch reads what the one before wrote."""
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(256).astype(np.float32) for _ in range(5)]
    dy = rng.standard_normal(256).astype(np.float32)
    compiled = compiled_relu_grad(device)
    gradients = [upload(device, dy)] + [device.create_buffer(1024) for _ in xs]
    command_list = device.create_command_list()
    for k, x in enumerate(xs):
        command_list.record_dispatch(device.create_binding_table(compiled, inputs=[upload(device, x), gradients[k]],
                                                                 outputs=[gradients[k + 1]]))
    assert (command_list.batch_count, command_list.barrier_count) == (1, 4)  # one submission, a barrier per link
    expected = dy
    for x in xs:
        expected = relu_grad(x, expected)
    for _ in range(3):  # replays give the same result
        device.execute(command_list)
        assert np.array_equal(gradients[-1].read(np.float32, 256), expected)


def test_independent_dispatches_share_a_step_and_write_after_read_takes_a_barrier(device):
    compiled = compiled_relu_grad(device)
    x, dy = upload(device, np.ones(256, np.float32)), upload(device, np.ones(256, np.float32))
    command_list = device.create_command_list()
    for _ in range(10):
        command_list.record_dispatch(device.create_binding_table(compiled, inputs=[x, dy],
                                                                 outputs=[device.create_buffer(1024)]))
    assert (command_list.batch_count, command_list.barrier_count) == (1, 0)
    command_list.record_dispatch(device.create_binding_table(compiled, inputs=[x, dy], outputs=[dy]))  # overwrites dy
    assert (command_list.batch_count, command_list.barrier_count) == (1, 1)


def test_multi_stage_operators_put_a_barrier_between_stages(device):
    x = dml.BufferTensorDesc(T.FLOAT32, (5000, 4))  # rows of 5000 span two chunks: two dependent stages
    desc = dml.ActivationParameterizedReluGradOperatorDesc(
        x, dml.BufferTensorDesc(T.FLOAT32, (5000, 4), (0, 1)), x, x, dml.BufferTensorDesc(T.FLOAT32, (1, 4)))
    compiled = device.compile_operator(device.create_operator(desc))
    assert len(compiled.plan.stages) == 2
    buffers = [device.create_buffer(t) for t in (80000, 16, 80000, 80000, 16)]
    table = device.create_binding_table(compiled, inputs=buffers[:3], outputs=buffers[3:],
                                        temporary=device.create_buffer(compiled.binding_properties.temporary_resource_size))
    command_list = device.create_command_list()
    command_list.record_dispatch(table)
    assert (command_list.batch_count, command_list.barrier_count) == (1, 1)


def test_replay_records_and_uploads_nothing(device, monkeypatch):
    compiled = compiled_relu_grad(device)
    x, dy = upload(device, np.ones(256, np.float32)), upload(device, np.ones(256, np.float32))
    command_list = device.create_command_list()
    output = device.create_buffer(1024)
    command_list.record_dispatch(device.create_binding_table(compiled, inputs=[x, dy], outputs=[output]))
    device.execute(command_list)
    for name in ("record", "create_dispatch", "write", "create_words"):
        monkeypatch.setattr(GpuContext, name, lambda *a, name=name, **k: pytest.fail(f"replay called {name}"))
    for _ in range(5):
        device.execute(command_list)


def test_closed_and_foreign_command_lists(device):
    compiled = compiled_relu_grad(device)
    x = upload(device, np.ones(256, np.float32))
    table = device.create_binding_table(compiled, inputs=[x, x], outputs=[device.create_buffer(1024)])
    command_list = device.create_command_list()
    command_list.record_dispatch(table)
    command_list.close()
    with pytest.raises(dml.InvalidArgumentError, match="CommandList is closed"):
        command_list.record_dispatch(table)
    with pytest.raises(dml.InvalidArgumentError, match="must be a BindingTable"):
        device.create_command_list().record_dispatch(command_list)
    with dml.create_device() as other, pytest.raises(dml.InvalidArgumentError, match="another device"):
        other.execute(command_list)
    x.destroy()
    with pytest.raises(dml.DeviceRemovedError, match="Buffer was destroyed"):
        device.execute(command_list)


def test_front_end_loop_compiles_and_binds_once(device, monkeypatch):
    calls = {"compile": 0, "create_buffer": 0, "create_binding_table": 0}
    for name in calls:
        real = getattr(dml.Device, {"compile": "compile_operator"}.get(name, name))

        def counting(self, *args, real=real, name=name, **kwargs):
            calls[name] += 1
            return real(self, *args, **kwargs)

        monkeypatch.setattr(dml.Device, {"compile": "compile_operator"}.get(name, name), counting)
    rng = np.random.default_rng(1)
    x, dy = rng.standard_normal((3, 77)).astype(np.float16), rng.standard_normal((3, 77)).astype(np.float16)
    for _ in range(20):
        assert np.array_equal(dml.relu_grad(x, dy, device=device), relu_grad(x, dy))
    assert calls["compile"] <= 1 and calls["create_buffer"] <= 3 and calls["create_binding_table"] <= 1


@pytest.mark.parametrize("limits", [dml.CacheLimits(front_end_bytes=64 << 10), dml.CacheLimits(front_end_bindings=5)])
def test_front_end_binding_cache_is_bounded_by_bytes_and_entries(limits):
    with dml.create_device(cache_limits=limits) as device:
        for count in range(1000, 1040):
            x = np.ones(count, np.float32)
            assert np.array_equal(dml.relu_grad(x, x, device=device), relu_grad(x, x))
        cache = device.front_end_cache
        assert len(cache) <= limits.front_end_bindings
        assert cache.nbytes <= limits.front_end_bytes + 3 * 4 * 1040


def test_a_repeated_front_end_call_builds_and_checks_no_desc(device, monkeypatch):
    """The fast path: C-contiguous arrays of one shape and dtype, no out. A call shaped like
    an earlier one (dtype, size, the scalars' bits) reuses its validated desc and bindings."""
    from reference import REFERENCES

    from dmlpy.frontends import numpy_api

    rng = np.random.default_rng(5)
    x, dy = rng.standard_normal((4, 50)).astype(np.float32), rng.standard_normal((4, 50)).astype(np.float32)
    dml.leaky_relu_grad(x, dy, alpha=0.5, device=device)

    def no_desc(*args, **kwargs):
        raise AssertionError("a desc was built for a call shaped like an earlier one")

    def no_layout_work(*args, **kwargs):
        raise AssertionError("the general path's broadcasting and view mapping ran")

    monkeypatch.setattr(dml.BufferTensorDesc, "__init__", no_desc)
    monkeypatch.setattr(dml.ActivationLeakyReluGradOperatorDesc, "__init__", no_desc)
    monkeypatch.setattr(numpy_api, "broadcast", no_layout_work)
    monkeypatch.setattr(numpy_api, "bindable_views", no_layout_work)
    for _ in range(3):
        got = dml.leaky_relu_grad(x, dy, alpha=0.5, device=device)
        expected = REFERENCES["leaky_relu_grad"](x, dy, alpha=0.5)
        assert got.shape == x.shape and np.array_equal(got.view(np.uint32), expected.view(np.uint32))
    with pytest.raises(AssertionError, match="a desc was built"):  # other scalar bits: a new desc
        dml.leaky_relu_grad(x, dy, alpha=0.5000001, device=device)
    with pytest.raises(AssertionError, match="a desc was built"):  # another size
        dml.leaky_relu_grad(x[:3], dy[:3], alpha=0.5, device=device)


def test_the_fast_path_gives_the_general_paths_bits_and_errors(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(300).astype(np.float32)
    x[:4] = [np.nan, -0.0, np.inf, 1e-40]
    dy = rng.standard_normal(300).astype(np.float32)
    fast = dml.hard_sigmoid_grad(x, dy, alpha=0.25, beta=0.5, device=device)
    general = dml.hard_sigmoid_grad(x[::1].reshape(1, 300).T[:, 0], dy, alpha=0.25, beta=0.5, device=device,
                                    out=np.empty(300, np.float32))
    assert np.array_equal(fast.view(np.uint32), general.view(np.uint32))
    with pytest.raises(dml.InvalidArgumentError, match="alpha"):
        dml.hard_sigmoid_grad(x, dy, alpha="2", device=device)
    with pytest.raises(dml.InvalidArgumentError, match="use_dst"):
        dml.elu_grad(x, dy, use_dst=1, device=device)
    with pytest.raises(dml.InvalidArgumentError, match="device"):
        dml.relu_grad(x, dy, device="gpu")


def test_front_end_calls_that_upload_what_their_kernel_writes_give_the_reference_bits(device):
    """An output with gaps is uploaded so its gaps survive, and an output bound in place is an
    uploaded input: the kernel then writes a buffer the call copied into, which needs the copy
    ordered before the shader's writes (make validate's synchronization checks see this)."""
    from reference import REFERENCES

    rng = np.random.default_rng(8)
    x, dy = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    backing = np.full(600, 7, np.float32)
    out = backing[::2]
    dml.hard_sigmoid_grad(x, dy, out=out, device=device)
    expected = REFERENCES["hard_sigmoid_grad"](x, dy, alpha=0.2, beta=0.5)
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))
    assert np.all(backing[1::2] == 7)  # the gaps keep their bytes
    y = x.copy()
    dml.hard_sigmoid(y, out=y, device=device)
    assert np.array_equal(y.view(np.uint32), REFERENCES["hard_sigmoid"](x, alpha=0.2, beta=0.5).view(np.uint32))
