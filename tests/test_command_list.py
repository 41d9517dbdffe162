"""Recorded command lists and the front end's reuse of compiled operators and bindings."""

import numpy as np
import pytest
from reference import relu_grad

import dmlpy as dml
from dmlpy.kompute import GpuContext

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
    assert command_list.batch_count == 5
    expected = dy
    for x in xs:
        expected = relu_grad(x, expected)
    for _ in range(3):  # replays give the same result
        device.execute(command_list)
        assert np.array_equal(gradients[-1].read(np.float32, 256), expected)


def test_independent_dispatches_share_one_submission_and_write_after_read_splits(device):
    compiled = compiled_relu_grad(device)
    x, dy = upload(device, np.ones(256, np.float32)), upload(device, np.ones(256, np.float32))
    command_list = device.create_command_list()
    for _ in range(10):
        command_list.record_dispatch(device.create_binding_table(compiled, inputs=[x, dy],
                                                                 outputs=[device.create_buffer(1024)]))
    assert command_list.batch_count == 1
    command_list.record_dispatch(device.create_binding_table(compiled, inputs=[x, dy], outputs=[dy]))  # overwrites dy
    assert command_list.batch_count == 2


def test_multi_stage_operators_split_batches(device):
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
    assert command_list.batch_count == 2


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
