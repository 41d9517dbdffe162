"""The dangerous cases, each in a child process with a time limit: close racing every public
operation, fork, interrupts, interpreter exit with work in flight, many threads creating
and closing devices, dropped devices, and memory over many distinct front-end calls.

Each child prints "ok" last only if every outcome was a correct result or a DmlError; a
crash (a signal), a hang (the time limit) or any other exception fails the test."""

import os
import subprocess
import sys
import textwrap

import pytest
from child import assert_clean, run_child

# Mesa (lavapipe) joins every thread pool it ever started from an exit handler, including
# the parent's, which fork() did not copy; glibc reclaims those threads' stacks in the child
# and unmaps them once its stack cache passes 40 MiB, so the join can fault after dmlpy has
# done its part (docs/ownership.md, fork). A larger stack cache keeps them mapped.
MESA_FORK_SAFE_ENV = {**os.environ, "GLIBC_TUNABLES": "glibc.pthread.stack_cache_size=1073741824"}

# Each operation runs in a loop on its own threads while the main thread closes the device.
RACING_OPERATIONS = {
    "execute": "device.execute(table)",
    "command_list": "device.execute(command_list)",
    "front_end": "dml.relu_grad(x, dy, device=device)",
    "buffer_write": "buffers[0].write(x)",
    "buffer_read": "buffers[2].read(np.float32, 4096)",
    "create_buffer": "device.create_buffer(4096).destroy()",
    "compile": "device.compile_operator(device.create_operator(desc))",
    "bind": "device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])",
    "destroy": "device.create_buffer(64).destroy()",
}


@pytest.mark.parametrize("operation", sorted(RACING_OPERATIONS))
def test_close_racing_an_operation_never_crashes(operation):
    result = run_child(f"""
        device = dml.create_device()
        tensor = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (4096,))
        desc = dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)
        compiled = device.compile_operator(device.create_operator(desc))
        buffers = [device.create_buffer(16384) for _ in range(3)]
        table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
        command_list = device.create_command_list()
        command_list.record_dispatch(table)
        x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
        dy = np.ones(4096, np.float32)
        outcomes, started = [], threading.Barrier(5)

        def worker():
            started.wait()
            try:
                while True:
                    {RACING_OPERATIONS[operation]}
            except dml.DeviceRemovedError:
                outcomes.append("removed")
            except Exception as error:
                outcomes.append(repr(error))

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        started.wait()
        time.sleep(0.3)
        device.close()
        for thread in threads:
            thread.join(30)
        assert not any(t.is_alive() for t in threads), "a worker still runs after close()"
        assert outcomes == ["removed"] * 4, outcomes
        print("ok")
    """)
    assert_clean(result)


@pytest.mark.parametrize("parent", ["idle", "busy"])
def test_forked_child_gets_its_own_device_and_the_parent_is_unaffected(parent):
    result = run_child(f"""
        x = np.linspace(-2, 2, 1001).astype(np.float32)
        dy = np.arange(1001, dtype=np.float32)
        expected = reference_relu_grad(x, dy)
        parent_device = dml.default_device()
        assert np.array_equal(dml.relu_grad(x, dy), expected)
        stop = threading.Event()

        def busy():  # the parent keeps the device busy while it forks
            while not stop.is_set():
                dml.relu_grad(x, dy)

        thread = threading.Thread(target=busy)
        if {parent == "busy"}:
            thread.start()
        pid = os.fork()
        if pid == 0:
            try:
                if not all(adapter.survives_fork for adapter in dml.list_adapters()):
                    try:  # NVIDIA's driver: refused before any Vulkan call, not an abort
                        dml.relu_grad(x, dy)
                        os._exit(4)
                    except dml.UnsupportedError as error:
                        assert "spawn" in str(error), error
                    os._exit(0)
                assert np.array_equal(dml.relu_grad(x, dy), expected)        # a fresh device
                assert dml.default_device() is not parent_device
                try:
                    parent_device.create_buffer(16)
                    os._exit(3)
                except dml.DeviceRemovedError as error:
                    assert "another process" in str(error)
            except BaseException:
                import traceback; traceback.print_exc(); os._exit(2)
            # A normal exit: finalizers run and must not free the parent's kp objects (their
            # destructors would destroy the parent's Vulkan device from here, and hang on it).
            sys.exit(0)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError("the forked child hung")
        stop.set()
        if thread.is_alive():
            thread.join()
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert np.array_equal(dml.relu_grad(x, dy), expected)                # the parent still works
        print("ok")
    """, env=MESA_FORK_SAFE_ENV)
    assert_clean(result)


def test_a_forked_child_refuses_a_driver_that_does_not_survive_fork():
    # Every adapter's driver taken as NVIDIA's: the child's first device is an UnsupportedError
    # naming the way out, raised before any Vulkan call; the parent and a child whose parent
    # never loaded a driver are unaffected.
    result = run_child("""
        dml.AdapterInfo.survives_fork = property(lambda adapter: False)
        x = np.linspace(-2, 2, 11).astype(np.float32)
        dy = np.ones(11, np.float32)
        assert np.array_equal(dml.relu_grad(x, dy), reference_relu_grad(x, dy))
        pid = os.fork()
        if pid == 0:
            try:
                dml.create_device()
                os._exit(3)
            except dml.UnsupportedError as error:
                message = str(error)
                ok = (f"forked from process {os.getppid()}" in message and "spawn" in message
                      and dml.list_adapters()[0].driver in message)
                os._exit(0 if ok else 4)
            except BaseException:
                os._exit(5)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert np.array_equal(dml.relu_grad(x, dy), reference_relu_grad(x, dy))
        print("ok")
    """, env=MESA_FORK_SAFE_ENV)
    assert_clean(result)


def test_multiprocessing_fork_pool_computes_in_every_worker():
    result = run_child("""
        import multiprocessing

        def work(seed):
            rng = np.random.default_rng(seed)
            x, dy = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
            try:
                return bool(np.array_equal(dml.relu_grad(x, dy), reference_relu_grad(x, dy)))
            except dml.UnsupportedError:  # a driver that cannot be loaded again after fork
                return "refused"

        dml.relu_grad(np.ones(3, np.float32), np.ones(3, np.float32))  # the parent has a device first
        expected = True if all(adapter.survives_fork for adapter in dml.list_adapters()) else "refused"
        with multiprocessing.get_context("fork").Pool(3) as pool:
            assert pool.map(work, range(6)) == [expected] * 6
        print("ok")
    """)
    assert_clean(result)


def test_interrupts_at_random_points_leave_the_device_usable():
    """KeyboardInterrupt lands anywhere in a loop of front-end calls and explicit dispatches;
    after twenty interrupts every lock is free and results are still right.

    The interrupts come from a one-shot interval timer whose handler is Python's SIGINT
    handler, not from a thread sending SIGINT: an interrupt landing inside Thread.start()
    can leave the new thread stuck before it runs, and no further interrupt would come.
    An interrupt that lands in a weakref callback or finalizer is printed and dropped by
    Python itself, so each timer gets a deadline after which the loop arms a new one."""
    result = run_child("""
        import random
        device = dml.create_device(cache_limits=dml.CacheLimits(front_end_bindings=4))
        rng = np.random.default_rng(0)
        random.seed(0)
        signal.signal(signal.SIGALRM, signal.default_int_handler)

        def work():
            n = int(rng.integers(1, 3000))
            x, dy = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
            assert np.array_equal(dml.relu_grad(x, dy, device=device), reference_relu_grad(x, dy))
            buffer = device.create_buffer(4 * n)
            buffer.write(x)
            buffer.destroy()

        caught = 0
        while caught < 20:
            try:
                try:
                    signal.setitimer(signal.ITIMER_REAL, random.uniform(0.001, 0.05))
                    deadline = time.monotonic() + 2
                    while time.monotonic() < deadline:
                        work()
                except KeyboardInterrupt:
                    caught += 1
            except KeyboardInterrupt:
                caught += 1
        signal.setitimer(signal.ITIMER_REAL, 0)
        for _ in range(20):
            work()
        device.close()
        print("ok")
    """)
    assert_clean(result)


def test_interpreter_exit_with_work_in_flight_is_clean():
    result = run_child("""
        device = dml.create_device()
        x = np.ones(1 << 16, np.float32)

        def busy():
            while True:
                dml.relu_grad(x, x, device=device)
                dml.relu_grad(x, x)

        for _ in range(3):
            threading.Thread(target=busy, daemon=True).start()
        time.sleep(0.5)
        print("ok")
        sys.exit(0)
    """)
    assert_clean(result)


def test_no_device_opens_once_the_interpreter_is_exiting():
    """An exit handler that runs after dmlpy's (registered before dmlpy is imported) finds
    every device closed and cannot open one: a daemon thread reopening the front end's
    default device there would run kp while the interpreter tears its threads down."""
    code = textwrap.dedent("""
        import atexit

        def after_dmlpys_handler():
            try:
                dml.create_device()
            except dml.DeviceRemovedError as error:
                print("refused:", error.message)
            print("default device closed:", device.closed)

        atexit.register(after_dmlpys_handler)
        import dmlpy as dml
        device = dml.default_device()
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "ok", "refused: the interpreter is exiting: dmlpy opens no new device (a thread still calling dmlpy at exit "
        "gets this error)", "default device closed: True"], result.stdout + result.stderr


def test_eight_threads_creating_using_and_closing_devices():
    result = run_child("""
        failures = []

        def worker(seed):
            try:
                rng = np.random.default_rng(seed)
                for _ in range(3):
                    with dml.create_device() as device:
                        x, dy = rng.standard_normal(777).astype(np.float32), rng.standard_normal(777).astype(np.float32)
                        assert np.array_equal(dml.relu_grad(x, dy, device=device), reference_relu_grad(x, dy))
            except Exception as error:
                failures.append(repr(error))

        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures, failures
        print("ok")
    """, timeout=180)
    assert_clean(result)


def test_devices_dropped_without_close_release_their_threads():
    """Caches belong to their device, so a device nobody references is collected with its
    Vulkan instance and threads (no module-level cache keeps it)."""
    result = run_child("""
        def threads_now():
            return len(os.listdir("/proc/self/task"))

        x = np.ones(100, np.float32)
        def use_and_drop():
            device = dml.create_device()
            dml.relu_grad(x, x, device=device)
            dml.hard_sigmoid_grad(x, x, device=device)

        use_and_drop()
        gc.collect()
        baseline = threads_now()
        for _ in range(30):
            use_and_drop()
        gc.collect()
        assert threads_now() <= baseline + 2, (baseline, threads_now())
        print("ok")
    """, timeout=180)
    assert_clean(result)


def test_memory_stays_flat_over_ten_thousand_distinct_shape_front_end_calls():
    result = run_child("""
        def resident_mib():
            with open("/proc/self/status") as status:
                return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))

        device = dml.create_device()
        def call(n):
            x = np.full(n, -1.0 if n % 2 else 1.0, np.float32)
            result = dml.relu_grad(x, x, device=device)
            assert result[0] == (0.0 if n % 2 else 1.0)

        for n in range(1, 2001):  # warm-up: the caches fill to their budgets
            call(n)
        start = resident_mib()
        for n in range(2001, 10001):
            call(n)
        growth = resident_mib() - start
        assert growth < 0.1 * start + 16, f"{start:.0f} MiB after warm-up, grew by {growth:.1f} MiB"
        print("ok")
    """, timeout=300)
    assert_clean(result)
