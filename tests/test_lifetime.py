"""Lifetimes, leaks and threads: objects after close or destroy, long create/destroy loops,
one device shared by eight threads."""

import threading

import numpy as np
import pytest
from reference import relu_grad

import dmlpy as dml

T = dml.TensorDataType


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status")


def relu_grad_desc(count=64, data_type=T.FLOAT32):
    tensor = dml.BufferTensorDesc(data_type, (count,))
    return dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)


def cycle(device, x, dy):
    compiled = device.compile_operator(device.create_operator(relu_grad_desc(x.size)))
    buffers = [device.create_buffer(x.nbytes) for _ in range(3)]
    buffers[0].write(x)
    buffers[1].write(dy)
    device.execute(device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:]))
    result = buffers[2].read(np.float32, x.size)
    for buffer in buffers:
        buffer.destroy()
    return result


def test_ten_thousand_cycles_keep_memory_flat():
    rng = np.random.default_rng(0)
    x, dy = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    expected = relu_grad(x, dy)
    with dml.create_device() as device:
        for _ in range(1000):  # warm-up: caches, allocator pools, kp's bookkeeping
            cycle(device, x, dy)
        start = resident_mib()
        for i in range(9000):
            result = cycle(device, x, dy)
            if i % 1000 == 0:
                assert np.array_equal(result, expected)
        growth = resident_mib() - start
    assert growth < 64, f"resident memory grew by {growth:.1f} MiB over 9000 cycles"


def test_tables_of_one_operator_over_their_own_buffers_share_its_pipeline():
    """Two hundred live binding tables of one compiled operator, each over its own buffers:
    each gives the bits of its own inputs, and together they cost a descriptor set each, not
    a pipeline each (about 0.8 MiB apiece on lavapipe, where building one is an LLVM compile)."""
    rng = np.random.default_rng(1)
    with dml.create_device() as device:
        compiled = device.compile_operator(device.create_operator(relu_grad_desc(256)))
        cycle(device, np.ones(256, np.float32), np.ones(256, np.float32))  # warm-up
        start = resident_mib()
        runs = []
        for _ in range(200):
            x, dy = rng.standard_normal(256).astype(np.float32), rng.standard_normal(256).astype(np.float32)
            buffers = [device.create_buffer(x.nbytes) for _ in range(3)]
            buffers[0].write(x)
            buffers[1].write(dy)
            runs.append((device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:]),
                         buffers[2], relu_grad(x, dy)))
        for table, _, _ in reversed(runs):
            device.execute(table)
        growth = resident_mib() - start
        for _, output, expected in runs:
            assert np.array_equal(output.read(np.float32, 256), expected)
    assert growth < 48, f"200 binding tables took {growth:.1f} MiB of host memory"


def test_every_object_refuses_use_after_its_device_closes():
    device = dml.create_device()
    op = device.create_operator(relu_grad_desc())
    compiled = device.compile_operator(op)
    buffers = [device.create_buffer(256) for _ in range(3)]
    table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
    command_list = device.create_command_list()
    command_list.record_dispatch(table)
    device.close()
    uses = [lambda: device.create_operator(relu_grad_desc()), lambda: device.compile_operator(op),
            lambda: device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:]),
            lambda: device.execute(table), lambda: device.execute(command_list),
            lambda: buffers[0].write(np.zeros(4, np.uint8)), lambda: buffers[0].read(np.uint8, 4),
            lambda: device.create_command_list(), lambda: command_list.record_dispatch(table),
            lambda: device.check_feature_support(dml.Feature.FEATURE_LEVELS, [dml.FeatureLevel.LEVEL_1_0])]
    for use in uses:
        with pytest.raises(dml.DeviceRemovedError, match="device was closed"):
            use()


def run_in_threads(worker, count=8):
    """Run worker(seed) on `count` threads at once; the seeds (and errors) of those that failed."""
    failures = []

    def run(seed):
        try:
            if not worker(seed):
                failures.append(seed)
        except Exception as error:  # an exception in a thread would otherwise vanish
            failures.append((seed, error))

    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def test_eight_threads_with_their_own_tables_share_one_device(device):
    compiled = device.compile_operator(device.create_operator(relu_grad_desc(1000, T.FLOAT16)))

    def worker(seed):
        """True when every result was right."""
        rng = np.random.default_rng(seed)
        buffers = [device.create_buffer(2000) for _ in range(3)]
        table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
        correct = True
        for _ in range(40):
            x, dy = rng.standard_normal(1000).astype(np.float16), rng.standard_normal(1000).astype(np.float16)
            buffers[0].write(x)
            buffers[1].write(dy)
            device.execute(table)
            correct &= np.array_equal(buffers[2].read(np.float16, 1000), relu_grad(x, dy))
        return correct

    assert not run_in_threads(worker)


def test_eight_threads_through_the_front_end(device):
    def worker(seed):
        rng = np.random.default_rng(seed)
        results = []
        for _ in range(40):
            x, dy = rng.standard_normal((5, 33)).astype(np.float32), rng.standard_normal((5, 33)).astype(np.float32)
            results.append(np.array_equal(dml.relu_grad(x, dy, device=device), relu_grad(x, dy)))
        return all(results)

    assert not run_in_threads(worker)


def test_the_guard_catches_a_dispatch_that_writes_outside_its_elements():
    """A guarded device must notice a shader that writes the gaps of a strided output: the
    table's dispatch is swapped for a plain copy over the whole output buffer."""
    from dmlpy.kernels.codegen import plan_copy
    from dmlpy.runtime.kompute import Launch
    from dmlpy.runtime.shader_compiler import compile_glsl

    with dml.create_device(guarded=True) as device:
        tensor, strided = dml.BufferTensorDesc(T.FLOAT32, (16,)), dml.BufferTensorDesc(T.FLOAT32, (16,), (2,))
        compiled = device.compile_operator(device.create_operator(
            dml.ActivationReluGradOperatorDesc(tensor, tensor, strided)))
        buffers = [device.create_buffer(64), device.create_buffer(64), device.create_buffer(128)]
        buffers[0].write(np.ones(16, np.float32))
        table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
        device.execute(table)  # the real shader passes the guard
        (stage,) = plan_copy(32, device.adapter).stages
        rogue = compile_glsl(stage.source()).spirv
        table.submission = device.context.create_dispatch(rogue, [Launch(
            [buffers[0].segments[0], buffers[2].segments[0]], stage.workgroups(device.adapter, 32),
            np.array([16], np.uint32))])
        with pytest.raises(dml.GuardViolationError, match="changed .* bytes it does not own"):
            device.execute(table)
