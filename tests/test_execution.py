"""Asynchronous execution: execute(wait=False), and what waits for running work. The
dangerous cases (close, destroy and fork while work runs) run in child processes."""

import threading
import time

import numpy as np
import pytest
from child import run_child

import dmlpy as dml

T = dml.TensorDataType
COUNT = 1 << 21  # long enough on lavapipe that the work is still running when execute returns


def slow_table(device, count=COUNT):
    desc = dml.BufferTensorDesc(T.FLOAT32, (count,))
    compiled = device.compile_operator(device.create_operator(dml.ActivationScaledTanhOperatorDesc(desc, desc)))
    source, result = device.create_buffer(4 * count), device.create_buffer(4 * count)
    source.write(np.linspace(-3, 3, count, dtype=np.float32))
    return device.create_binding_table(compiled, [source], [result]), result


def test_execute_without_waiting_then_wait(device):
    table, result = slow_table(device)
    expected = dml.scaled_tanh(np.linspace(-3, 3, COUNT, dtype=np.float32))
    execution = device.execute(table, wait=False)
    assert isinstance(execution, dml.Execution)
    execution.wait()
    assert execution.done and "done" in repr(execution)
    assert np.array_equal(result.read(np.float32, COUNT), expected)
    assert device.execute(table).done  # waiting is the default
    with pytest.raises(dml.InvalidArgumentError, match="wait 0 must be a bool"):
        device.execute(table, wait=0)


def test_execute_without_waiting_returns_while_the_work_runs(device):
    table, _ = slow_table(device)
    device.execute(table)
    start = time.perf_counter()
    device.execute(table)
    synchronous = time.perf_counter() - start
    start = time.perf_counter()
    execution = device.execute(table, wait=False)
    returned = time.perf_counter() - start
    finished_at_return = execution.done
    execution.wait()
    if synchronous > 0.02:  # a device fast enough to finish within the call proves nothing here
        assert returned < synchronous / 4 and not finished_at_return


def test_done_turns_true_without_waiting_and_a_read_waits_for_the_work(device):
    table, result = slow_table(device)
    expected = dml.scaled_tanh(np.linspace(-3, 3, COUNT, dtype=np.float32))
    execution = device.execute(table, wait=False)
    while not execution.done:  # polls the fence; never waits
        pass
    result.write(np.zeros(COUNT, np.float32))
    execution = device.execute(table, wait=False)
    assert np.array_equal(result.read(np.float32, COUNT), expected)  # the read waited for the work
    assert execution.done


def test_a_command_list_and_a_graph_run_without_waiting(device):
    g = dml.GraphBuilder(device)
    x = g.input(dml.BufferTensorDesc(T.FLOAT32, (64, 64)))
    compiled = g.build([dml.graph.tanh(dml.graph.softmax(x))])  # two kernels, two submissions
    values = np.linspace(-2, 2, 4096, dtype=np.float32)
    source, result = device.create_buffer(16384), device.create_buffer(16384)
    source.write(values)
    temporary = device.create_buffer(compiled.binding_properties.temporary_resource_size)
    command_list = device.create_command_list()
    command_list.record_dispatch(device.create_binding_table(compiled, [source], [result], temporary))
    execution = device.execute(command_list, wait=False)
    execution.wait()
    expected = dml.tanh(dml.softmax(values.reshape(64, 64)))
    assert np.array_equal(result.read(np.float32, 4096), expected.reshape(-1))
    device.execute(command_list, wait=False)
    device.execute(command_list, wait=False)  # a replay waits for the one before
    assert np.array_equal(result.read(np.float32, 4096), expected.reshape(-1))


def test_other_threads_run_while_the_device_works(device):
    """kp releases the GIL while a submission runs (dmlpy's kp patch level 3)."""
    table, _ = slow_table(device)
    device.execute(table)
    spins, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            spins[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    before = spins[0]
    device.execute(table)
    during = spins[0] - before
    stop.set()
    thread.join()
    assert during > 1000


def test_close_destroy_and_fork_while_work_runs():
    result = run_child(f"""
        device = dml.create_device()
        count = {COUNT}
        desc = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (count,))
        op = device.compile_operator(device.create_operator(dml.ActivationScaledTanhOperatorDesc(desc, desc)))
        source, result = device.create_buffer(4 * count), device.create_buffer(4 * count)
        source.write(np.ones(count, np.float32))
        table = device.create_binding_table(op, [source], [result])
        running = device.execute(table, wait=False)
        source.destroy()                     # waits for the work, then frees
        assert running.done
        running = device.execute(device.create_binding_table(op, [result], [device.create_buffer(4 * count)]),
                                 wait=False)
        pid = os.fork()
        if pid == 0:
            try:
                device.execute(table)
                os._exit(3)
            except dml.DeviceRemovedError:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        running = device.execute(device.create_binding_table(op, [result], [device.create_buffer(4 * count)]),
                                 wait=False)
        device.close()                       # waits for the work, then releases the device
        assert running.done
        running.wait()
        print("ok")
    """, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
