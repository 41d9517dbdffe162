"""Device arrays, command lists and the buffer pool under threads, fork, the garbage collector
and careless input (docs/ownership.md, "Device arrays"). Crashes and hangs run in a child
process with a time limit; every other outcome must be the serial result or a DmlError."""

import gc
import os
import threading

import ml_dtypes
import numpy as np
import pytest
from child import assert_clean, run_child
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import prelu_grad as reference_prelu_grad

import dmlpy as dml

MESA_FORK_SAFE_ENV = {**os.environ, "GLIBC_TUNABLES": "glibc.pthread.stack_cache_size=1073741824"}


def bits(array):
    array = np.ascontiguousarray(array)
    return array.view(f"u{array.dtype.itemsize}")


@pytest.fixture(scope="module")
def small_segments():
    """A device whose buffers are cut into 4 KiB segments (1,024 FP32 elements per binding)."""
    with dml.create_device() as device:
        device.segment_size = 4096
        yield device


# Crashes and hangs


@pytest.mark.parametrize("when", ["before close", "after close"])
def test_a_command_list_over_a_destroyed_buffer_raises_instead_of_crashing(when):
    result = run_child(f"""
        device = dml.create_device()
        desc = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (256,))
        compiled = device.compile_operator(device.create_operator(dml.ActivationReluGradOperatorDesc(desc, desc, desc)))
        buffers = [device.create_buffer(1024) for _ in range(3)]
        table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
        commands = device.create_command_list()
        commands.record_dispatch(table)
        if {when == "after close"}:
            commands.close()
        buffers[1].destroy()
        attempts = {{"close": commands.close, "execute list": lambda: device.execute(commands),
                    "execute table": lambda: device.execute(table)}}
        for name, attempt in attempts.items():
            try:
                attempt()
                # closing a list already recorded records nothing, so it has nothing to refuse
                if name != "close" or {when == "before close"}:
                    raise AssertionError(f"{{name}}: a destroyed buffer was accepted")
            except dml.DeviceRemovedError as error:
                assert "destroyed" in str(error), error
        print("ok")
    """)
    assert_clean(result)


def test_arrays_freed_by_the_cycle_collector_inside_the_pool_never_deadlock():
    # The collector runs on whatever thread allocates, under whatever lock it holds: here it
    # is made to run at every line of the pool's own methods, with arrays in reference cycles
    # waiting to be freed, so their finalizers run while the pool's lock is held.
    result = run_child("""
        device = dml.create_device()
        cycles = []
        for k in range(400):  # arrays only the collector can free: each in a reference cycle
            cycle = {"array": dml.asarray(np.full(64, k, np.float32), device=device)}
            cycle["self"] = cycle
            cycles.append(cycle)

        def collect_at_every_line(frame, event, arg):
            if event == "line" and cycles:
                cycles.pop()  # one more cycle for the collector, which runs here and now
                gc.collect()
            return collect_at_every_line

        def trace(frame, event, arg):
            code = frame.f_code
            if code.co_filename.endswith("caches.py") and code.co_name in ("take", "give"):
                return collect_at_every_line
            return None

        sys.settrace(trace)
        for k in range(40):
            dml.tanh(dml.asarray(np.full(64, k, np.float32), device=device)).compute()
        sys.settrace(None)
        assert not cycles
        assert np.array_equal(dml.asarray(np.ones(64, np.float32), device=device).numpy(), np.ones(64, np.float32))
        print("ok")
    """, timeout=60)
    assert_clean(result)


def test_fork_while_another_thread_computes_a_device_array():
    result = run_child("""
        device = dml.create_device()
        x = dml.asarray(np.linspace(-2, 2, 1 << 16, dtype=np.float32), device=device)
        stop = threading.Event()
        latest = [dml.sigmoid(x)]

        def compute():  # the array the child reads is mostly being computed at the fork
            while not stop.is_set():
                latest[0] = dml.tanh(dml.elu(x))
                latest[0].numpy()

        thread = threading.Thread(target=compute)
        thread.start()
        pending = dml.sigmoid(x)
        for _ in range(10):
            time.sleep(0.02)
            pid = os.fork()
            if pid == 0:
                codes = []
                for array in (latest[0], pending):  # each must say it belongs to the parent
                    try:
                        array.numpy()
                        codes.append(3)
                    except dml.DeviceRemovedError as error:
                        codes.append(0 if "another process" in str(error) else 4)
                    except BaseException:
                        codes.append(5)
                os._exit(max(codes))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                time.sleep(0.02)
            else:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError("the forked child hung on a device array")
            assert os.waitstatus_to_exitcode(status) == 0, status
        stop.set()
        thread.join()
        expected = dml.sigmoid(np.linspace(-2, 2, 1 << 16, dtype=np.float32), device=device)
        assert np.array_equal(pending.numpy().view(np.uint32), expected.view(np.uint32))  # the parent still computes
        print("ok")
    """, env=MESA_FORK_SAFE_ENV)
    assert_clean(result)


# Results under concurrent writes


def test_a_deferred_chain_keeps_its_inputs_while_another_thread_writes_them(device):
    versions = [np.full(4096, v, np.float32) * np.linspace(-1, 1, 4096, dtype=np.float32) for v in range(1, 9)]
    expected = [dml.linear(dml.relu(v), 1.5, 0.25) for v in versions]
    a = dml.asarray(versions[0], device=device)
    published = [0]  # how many writes have finished: a holds versions[published % 8] or the next
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
        for _ in range(60):
            before = published[0]
            c = dml.linear(dml.relu(a), 1.5, 0.25)
            after = published[0]
            got = bits(c.numpy())
            # c holds a version current during the call, whatever was written since
            allowed = {k % len(versions) for k in range(before, after + 2)}
            assert any(np.array_equal(got, bits(expected[k])) for k in allowed), (before, after)
    finally:
        stop.set()
        thread.join()


OPERATIONS = st.sampled_from(["compute", "chain", "write", "read", "drop"])


@settings(max_examples=12)
@given(schedules=st.lists(st.lists(st.tuples(OPERATIONS, st.integers(0, 3), st.integers(1, 5)), min_size=4,
                                   max_size=12), min_size=2, max_size=3))
def test_threads_sharing_device_arrays_match_a_serial_reference(device, schedules):
    """Each thread writes only its own source array; every thread computes, reads and drops
    results of every source. A result must equal its formula on a value its source held
    during the call that made it: never a mixture, never an exception but a DmlError."""
    count = 512
    base = np.linspace(-3, 3, count, dtype=np.float32)
    sources = [dml.asarray(base * (k + 1), device=device) for k in range(len(schedules))]
    written = [[base * (k + 1)] for k in range(len(schedules))]  # every value each source has held
    lock = threading.Lock()
    failures = []

    def run(me, schedule):
        held = []  # (result, source index, first version it may hold, formula)
        for operation, which, step in schedule:
            which %= len(sources)
            try:
                if operation == "write":
                    value = base * (me + 1) + np.float32(step)
                    with lock:
                        written[me].append(value)
                    sources[me].write(value)
                elif operation in ("compute", "chain"):
                    with lock:  # the source holds this value or the one before (a write in flight)
                        first = max(0, len(written[which]) - 2)
                    formula = [("elu", {}), ("linear", {"alpha": 0.5, "beta": float(step)})]
                    formula = formula[:2 if operation == "chain" else 1]
                    result = sources[which]
                    for name, fields in formula:
                        result = getattr(dml, name)(result, **fields)
                    if step % 2:
                        result.compute()
                    held.append((result, which, first, formula))
                elif operation == "read" and held:
                    check(*held.pop(step % len(held)))
                elif operation == "drop" and held:
                    held.pop(0)
            except dml.DmlError:
                pass
            except Exception as error:  # any other exception is the failure itself
                failures.append(repr(error))
        for entry in held:
            check(*entry)

    def check(result, which, first, formula):
        got = bits(result.numpy())
        with lock:
            candidates = written[which][first:]
        for value in candidates:
            for name, fields in formula:
                value = getattr(dml, name)(value, **fields)
            if np.array_equal(got, bits(value)):
                return
        failures.append(f"a result of source {which} matches none of its values since the call")

    threads = [threading.Thread(target=run, args=(k, schedule)) for k, schedule in enumerate(schedules)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


# Writes, reads and arguments


def test_write_follows_numpy_assignment_and_refuses_what_numpy_refuses(device):
    a = dml.asarray(np.arange(4, dtype=np.float32), device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"shape \(4,\).*broadcast"):
        a.write([9.0, 9.0, 9.0])
    assert np.array_equal(a.numpy(), np.arange(4, dtype=np.float32))  # nothing was written
    for bad in ("abc", object(), [[1.0], [2.0, 3.0]], {"a": 1}):
        with pytest.raises(dml.InvalidArgumentError, match="values"):
            a.write(bad)
    a.write(7)  # a scalar fills, as a[...] = 7 does
    assert np.array_equal(a.numpy(), np.full(4, 7, np.float32))
    a.write(np.array([[1], [2], [3], [4]], np.int64).reshape(4))
    assert np.array_equal(a.numpy(), np.arange(1, 5, dtype=np.float32))
    pending = dml.tanh(a)
    a.write(dml.asarray(np.zeros(4, np.float32), device=device))  # a device array's values
    assert np.array_equal(bits(pending.numpy()), bits(dml.tanh(np.arange(1, 5, dtype=np.float32))))
    assert np.array_equal(a.numpy(), np.zeros(4, np.float32))


def test_a_write_takes_the_values_when_it_is_made(device):
    """An array of the device array's own dtype and shape is written without a conversion: the
    device keeps the values as they were at the write, as after a converting write, and a
    result computed from the old values is not changed by it."""
    for values in (np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(6, dtype=np.float64).reshape(2, 3),
                   np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))):
        a = dml.asarray(np.full((2, 3), 5, np.float32), device=device)
        pending = a * 2.0
        a.write(values)
        expected = values.astype(np.float32)
        values[...] = -1  # the caller's array changes after the write
        assert np.array_equal(a.numpy(), expected)
        assert np.array_equal(pending.numpy(), np.full((2, 3), 10, np.float32))
        assert np.array_equal(dml.asarray(expected, device=device).numpy(), expected)
    base = dml.asarray(np.zeros((4, 4), np.float32), device=device)
    view = base[1:3, ::2]
    view.write(np.ones((2, 2), np.float32))
    expected = np.zeros((4, 4), np.float32)
    expected[1:3, ::2] = 1
    assert np.array_equal(base.numpy(), expected)


def test_np_asarray_copy_false_is_refused_as_numpy_2_expects(device):
    a = dml.asarray(np.ones(3, np.float32), device=device)
    with pytest.raises(ValueError, match="copy"):
        np.asarray(a, copy=False)
    with pytest.raises(dml.InvalidArgumentError):
        np.asarray(a, copy=False)
    assert np.array_equal(np.asarray(a, copy=True), np.ones(3, np.float32))


@pytest.mark.parametrize("axis", [0, np.int64(0), -2, (0,)])
def test_rowwise_device_arrays_take_axis_zero(device, axis):
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
    got = dml.softmax(dml.asarray(x, device=device), axes=axis)
    assert np.array_equal(bits(got.numpy()), bits(dml.softmax(x, axes=(0,))))


def test_prelu_grad_takes_bfloat16_device_arrays(device):
    rng = np.random.default_rng(3)
    x, dy = (rng.standard_normal((4, 8)).astype(ml_dtypes.bfloat16) for _ in range(2))
    slope = rng.standard_normal(8).astype(ml_dtypes.bfloat16)
    on_device = dml.prelu_grad(*(dml.asarray(v, device=device) for v in (x, slope, dy)))
    on_host = dml.prelu_grad(x, slope, dy, device=device)
    for got, expected in zip(on_device, on_host):
        assert np.array_equal(bits(np.asarray(got)), bits(expected))


def test_nine_dimensional_device_arrays(device):
    x = np.linspace(-2, 2, 512, dtype=np.float32).reshape((2,) * 9)
    t = dml.asarray(x, device=device)
    assert t.shape == (2,) * 9
    assert np.array_equal(bits(dml.tanh(t).numpy()), bits(dml.tanh(x)))
    assert np.array_equal(bits(dml.relu_grad(t, t).numpy()), bits(dml.relu_grad(x, x)))
    row = dml.asarray(x[0, 0, 0, 0, 0, 0, 0, 0], device=device)  # broadcasts along mergeable dims
    assert np.array_equal(bits(dml.relu_grad(t, row).numpy()),
                          bits(dml.relu_grad(x, np.broadcast_to(x[0, 0, 0, 0, 0, 0, 0, 0], x.shape))))
    checker = dml.asarray(np.ones((2, 1) * 4 + (2,), np.float32), device=device)  # 9 dims that cannot merge
    with pytest.raises(dml.InvalidArgumentError, match="at most 8|1 to 8"):
        dml.relu_grad(t, checker)


def test_a_handed_out_buffer_never_returns_to_the_pool(device):
    a = dml.asarray(np.ones(1000, np.float32), device=device)
    kept = a.buffer
    del a
    kept.destroy()
    b = dml.asarray(np.full(1000, 2, np.float32), device=device)  # the same size: the pool must not hand it out
    assert np.array_equal(b.numpy(), np.full(1000, 2, np.float32))
    c = dml.asarray(np.ones(1000, np.float32), device=device)
    kept = c.buffer
    del c
    d = dml.asarray(np.zeros(1000, np.float32), device=device)
    assert d.buffer is not kept  # still the caller's: a write through it must not reach d


# Arrays larger than one buffer segment


@pytest.mark.parametrize("axes", [None, (1,), (0,), (0, 2)])
def test_rowwise_front_ends_across_segments_give_the_bits_of_one_segment(device, small_segments, axes):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 40, 12)) * 4).astype(np.float32)  # 11,520 bytes: three segments
    for name in ("softmax", "log_softmax", "hardmax"):
        expected = getattr(dml, name)(x, axes=axes, device=device)
        assert np.array_equal(bits(getattr(dml, name)(x, axes=axes, device=small_segments)), bits(expected)), name
        resident = getattr(dml, name)(dml.asarray(x, device=small_segments), axes=axes)
        assert np.array_equal(bits(resident.numpy()), bits(expected)), name


def test_a_row_longer_than_a_segment_is_refused_in_words_a_numpy_caller_understands(small_segments):
    x = np.ones((2, 2048), np.float32)  # each row alone is 8 KiB
    with pytest.raises(dml.UnsupportedError, match="reduces 2048 elements") as error:
        dml.softmax(x, device=small_segments)
    assert "inside one segment" not in str(error.value)


@pytest.mark.parametrize("data_format, slope_shape", [("NXC", (12,)), ("NCX", (40,)), ("NXC", (40, 12))])
def test_prelu_grad_across_segments(device, small_segments, data_format, slope_shape):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((6, 40, 12)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    slope = rng.standard_normal(slope_shape).astype(np.float32)
    expected = dml.prelu_grad(x, slope, dy, data_format=data_format, device=device)
    for got in (dml.prelu_grad(x, slope, dy, data_format=data_format, device=small_segments),
                dml.prelu_grad(*(dml.asarray(v, device=small_segments) for v in (x, slope, dy)),
                               data_format=data_format)):
        for g, e in zip(got, expected):
            assert np.array_equal(bits(np.asarray(g)), bits(e))
    if data_format == "NXC" and slope_shape == (12,):  # dx is exact: the reference's bits
        dx, _, _ = reference_prelu_grad(x, np.broadcast_to(slope, x.shape), dy, (0, 1))
        assert np.array_equal(bits(expected[0]), bits(dx))


def test_broadcasting_device_arrays_across_segments(device, small_segments):
    x = np.linspace(-2, 2, 4000, dtype=np.float32).reshape(40, 100)
    row = np.linspace(1, 2, 100, dtype=np.float32)
    got = dml.relu_grad(dml.asarray(x, device=small_segments), dml.asarray(row, device=small_segments))
    chained = dml.tanh(dml.linear(dml.asarray(row, device=small_segments), 2.0, 0.0))
    mixed = dml.relu_grad(dml.asarray(x, device=small_segments), chained)
    assert np.array_equal(bits(got.numpy()), bits(dml.relu_grad(x, row, device=device)))
    assert np.array_equal(bits(mixed.numpy()), bits(dml.relu_grad(x, dml.tanh(dml.linear(row, 2.0, 0.0)))))


def test_kernels_that_bind_tensors_whole_run_in_pieces_across_segments(device, small_segments):
    """A comparison (FP32 in, UINT8 out), a cast between widths and a transposed operand have
    kernels that bind each tensor whole: past a segment they run on packed host copies in
    pieces that fit one (the NumPy front end once recursed without end here), on NumPy arrays
    and device arrays alike, with the bits of one call on a device of large segments."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(3001) * 1e5).astype(np.float32)  # 12,004 bytes: four segments
    square = x[:2916].reshape(54, 54)
    calls = [(dml.less, (x, np.float32(0.5))), (dml.cast, (x, np.float16)), (dml.add, (square.T, square))]
    for function, (a, b) in calls:
        expected = function(a, b, device=device)
        assert np.array_equal(bits(function(a, b, device=small_segments)), bits(expected)), function.__name__
        on_device = function(dml.asarray(a, device=small_segments), b if function is dml.cast else
                             dml.asarray(b, device=small_segments))
        assert np.array_equal(bits(on_device.numpy()), bits(expected)), function.__name__
    out = dml.asarray(np.zeros(3001, np.uint8), device=small_segments)
    assert dml.less(dml.asarray(x, device=small_segments), 0.5, out=out) is out
    assert np.array_equal(out.numpy(), (x < 0.5).astype(np.uint8))


def test_same_shaped_arrays_and_wider_results_past_a_segment(device, small_segments):
    """The paths that skipped the pieces: two contiguous arrays of one shape (the front end's
    fast path), a UINT8 condition or input whose result or other operands are wider, and a
    missing required scalar union (a TypeError naming it, as on every other path)."""
    rng = np.random.default_rng(8)
    a, b = (rng.standard_normal(3001).astype(np.float32) for _ in range(2))
    small_ints = rng.integers(0, 200, 3001).astype(np.uint8)
    assert np.array_equal(dml.equal(a, b, device=small_segments), (a == b).astype(np.uint8))
    mask = (a > 0).astype(np.uint8)
    on_device = dml.where(dml.asarray(mask, device=small_segments), dml.asarray(a, device=small_segments),
                          dml.asarray(b, device=small_segments))
    assert np.array_equal(bits(on_device.numpy()), bits(np.where(mask != 0, a, b)))
    widened = dml.asarray(small_ints, device=small_segments).astype(np.float16)
    assert np.array_equal(bits(widened.numpy()), bits(small_ints.astype(np.float16)))
    with pytest.raises(TypeError, match=r"clip1\(\) missing a required argument: 'min'"):
        dml.clip1(a, max=1.0, device=device)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_running_sums_and_top_k_past_a_segment_run_in_pieces_of_whole_rows(device, small_segments, axis):
    """cumsum, cumprod and top_k were refused at binding past a segment; they now run in
    pieces that keep whole rows, with the bits of one call; a row longer than a segment is
    refused in the front end's words."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((90, 40)).astype(np.float32)  # 14,400 bytes
    for call in (lambda v, d: dml.cumsum(v, axis=axis, device=d),
                 lambda v, d: dml.cumprod(v, axis=axis, reverse=True, device=d),
                 lambda v, d: dml.top_k(v, 3, axis=axis, device=d)):
        expected = call(x, device)
        got = call(x, small_segments)
        on_device = call(dml.asarray(x, device=small_segments), None)
        for e, g, r in zip(*(v if isinstance(v, tuple) else (v,) for v in (expected, got, on_device))):
            assert np.array_equal(bits(g), bits(e)) and g.dtype == e.dtype
            assert np.array_equal(r.numpy().astype(e.dtype), e)
    with pytest.raises(dml.UnsupportedError, match="cumsum runs along 1200 elements"):
        dml.cumsum(np.ones((3, 1200), np.float32), axis=1, device=small_segments)
    with pytest.raises(dml.UnsupportedError, match="top_k selects from 1200 elements"):
        dml.top_k(np.ones((1200, 3), np.float32), 1, axis=0, device=small_segments)


def test_matrix_products_past_a_segment_run_in_blocks_with_the_bits_of_one_call(device, small_segments):
    """GEMM's operands past a segment were refused at binding; the product now runs in blocks
    of rows and columns (batches broadcast, transposes, C, alpha, beta and a fused activation
    included), each output element summing its K products in the one documented order: the
    bits of one call. A K whose row of A alone passes a segment is refused."""
    rng = np.random.default_rng(10)
    a = rng.standard_normal((2, 1, 48, 37)).astype(np.float32)  # 14 KiB
    b = rng.standard_normal((3, 50, 37)).astype(np.float32)
    c = rng.standard_normal((50,)).astype(np.float32)
    relu = dml.ActivationReluOperatorDesc(None, None)
    options = dict(trans_a=True, trans_b=True, alpha=0.5, beta=2.0, fused_activation=relu)
    a_t = np.ascontiguousarray(np.swapaxes(a, -1, -2))  # (2, 1, 37, 48): op(a) is (48, 37)
    expected = dml.gemm(a_t, b, c, **options, device=device)
    assert expected.shape == (2, 3, 48, 50)
    assert np.array_equal(bits(dml.gemm(a_t, b, c, **options, device=small_segments)), bits(expected))
    resident = dml.gemm(*(dml.asarray(v, device=small_segments) for v in (a_t, b, c)), **options)
    assert np.array_equal(bits(resident.numpy()), bits(expected))
    square = rng.standard_normal((60, 60)).astype(np.float16)
    on_device = dml.asarray(square, device=small_segments)
    assert np.array_equal(bits((on_device.T @ on_device).numpy()), bits(dml.matmul(square.T, square, device=device)))
    with pytest.raises(dml.UnsupportedError, match="matmul sums 1100 products"):
        dml.matmul(np.ones((2, 1100), np.float32), np.ones(1100, np.float32), device=small_segments)


def test_integer_products_and_one_hot_past_a_segment_run_in_pieces(device, small_segments):
    """MATRIX_MULTIPLY_INTEGER (zero points per row and per column, batches) in blocks, exact as
    NumPy's int64 product; ONE_HOT in pieces of whole rows of `depth`; constants and integer
    sequences (a piece starts at its first value, wrapped) in pieces; a float sequence, whose
    element i rounds start + i * delta, refused in the front end's words."""
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, (2, 70, 90)).astype(np.int8)
    b = rng.integers(-128, 128, (2, 90, 40)).astype(np.int8)
    a_zero, b_zero = rng.integers(-5, 5, 70).astype(np.int8), np.int8(3)
    expected = (a.astype(np.int64) - a_zero[:, None]) @ (b.astype(np.int64) - 3)
    got = dml.matrix_multiply_integer(a, b, a_zero, b_zero, device=small_segments)
    assert got.dtype == np.int32 and np.array_equal(got, expected)
    resident = dml.matrix_multiply_integer(dml.asarray(a, device=small_segments), dml.asarray(b, device=small_segments),
                                           a_zero, b_zero)
    assert np.array_equal(resident.numpy(), expected)
    indices = rng.integers(-12, 12, (30, 40)).astype(np.int32)
    for axis in (0, 1, -1):
        assert np.array_equal(bits(dml.one_hot(indices, 10, (0.5, 2.0), axis=axis, device=small_segments)),
                              bits(dml.one_hot(indices, 10, (0.5, 2.0), axis=axis, device=device)))
    for dtype, start, delta in ((np.int32, 2**31 - 5, 7), (np.uint8, 250, 3), (np.int64, -2**63, -3)):
        expected = dml.fill_value_sequence((50, 60), start, delta, dtype, device=device)
        assert np.array_equal(dml.fill_value_sequence((50, 60), start, delta, dtype, device=small_segments), expected)
    constant = dml.fill_value_constant((50, 60), -0.0, np.float32, device=small_segments)
    assert np.array_equal(bits(constant), bits(np.full((50, 60), -0.0, np.float32)))
    with pytest.raises(dml.UnsupportedError, match="fill_value_sequence writes 3000 FLOAT32 elements at once"):
        dml.fill_value_sequence((50, 60), 1.0, 0.25, np.float32, device=small_segments)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.uint8],
                         ids=lambda t: np.dtype(t).name)
def test_rows_longer_than_a_segment_reduce_in_blocks_with_the_bits_of_one_call(device, small_segments, dtype):
    """REDUCE over rows past a segment (the sum of a whole large array) was refused; it now
    reduces aligned power-of-two blocks, each a subtree of the row's documented tree, and
    combines their partials with a second REDUCE (the levels above), so every function but
    LOG_SUM_EXP gives the bits of one call; ARGMAX and ARGMIN the first extreme's index."""
    rng = np.random.default_rng(12)
    if np.dtype(dtype).kind == "f":
        x = (rng.uniform(0.9, 1.1, (3, 2500)) * rng.choice([-1, 1], (3, 2500))).astype(dtype)
        x[0, 5], x[0, 2100], x[2, 2222] = -0.0, 0.0, np.nan
    else:
        x = rng.integers(0, 100, (3, 2500)).astype(dtype)
    x[1, 2049] = x[1, 17] = x[1].max()  # a tie across blocks: the first index wins
    for function in dml.ReduceFunction:
        for axes in ((1,), (0, 1)):
            try:
                expected = dml.reduce(x, function, axes=axes, device=device)
            except dml.DmlError:  # a function this dtype does not take
                continue
            if function is dml.ReduceFunction.LOG_SUM_EXP:
                with pytest.raises(dml.UnsupportedError, match="LOG_SUM_EXP reduces"):
                    dml.reduce(x, function, axes=axes, device=small_segments)
                continue
            got = dml.reduce(x, function, axes=axes, device=small_segments)
            assert got.dtype == expected.dtype and np.array_equal(bits(got), bits(expected)), (function, axes)
    resident = dml.asarray(x, device=small_segments)
    assert np.array_equal(bits(resident.sum().numpy()), bits(dml.sum(x, device=device)))  # uint8: NumPy's uint64
    assert resident.argmax().numpy() == dml.argmax(x, device=device)


# Python numbers beside device arrays: one array per device, dtype and value (docs/ownership.md,
# "Constants")


def test_a_python_number_is_uploaded_once_and_bound_once(monkeypatch):
    compiled = []
    original = dml.Device.compile_graph
    monkeypatch.setattr(dml.Device, "compile_graph",
                        lambda self, graph, flags=0: compiled.append(graph) or original(self, graph, flags))
    rng = np.random.default_rng(21)
    hx, hy = (rng.standard_normal(100).astype(np.float32) for _ in range(2))
    with dml.create_device() as device:
        x, y = dml.asarray(hx, device=device), dml.asarray(hy, device=device)
        got = (x * 0.5 + y * 0.5).numpy()
        assert compiled[-1].input_count == 3 and len(device.constant_arrays) == 1  # x, y and one 0.5
        assert np.array_equal(bits(got), bits(hx * np.float32(0.5) + hy * np.float32(0.5)))
        again = (x - 0.5).numpy()
        assert len(device.constant_arrays) == 1 and np.array_equal(bits(again), bits(hx - np.float32(0.5)))
        half = dml.asarray(hx.astype(np.float16), device=device)
        assert np.array_equal(bits((half * 0.5).numpy()), bits(hx.astype(np.float16) * np.float16(0.5)))
        negative_zero = (x * -0.0).numpy()  # -0.0 is not 0.0: its own array
        assert len(device.constant_arrays) == 3 and np.array_equal(bits(negative_zero), bits(hx * np.float32(-0.0)))


def test_an_evicted_constant_still_serves_the_deferred_result_that_reads_it():
    rng = np.random.default_rng(22)
    hx = rng.standard_normal(300).astype(np.float32)
    with dml.create_device(cache_limits=dml.CacheLimits(constant_arrays=1)) as device:
        x = dml.asarray(hx, device=device)
        first = x * 0.5  # deferred: reads the array of 0.5
        second = x * 0.25  # evicts 0.5 from the cache
        gc.collect()
        assert len(device.constant_arrays) == 1
        assert np.array_equal(bits(first.numpy()), bits(hx * np.float32(0.5)))
        assert np.array_equal(bits(second.numpy()), bits(hx * np.float32(0.25)))
        assert np.array_equal(bits((x * 0.5).numpy()), bits(hx * np.float32(0.5)))  # uploaded again


def test_threads_sharing_a_python_number_get_numpys_bits():
    rng = np.random.default_rng(23)
    hosts = [rng.standard_normal(1000).astype(np.float32) for _ in range(4)]
    failures = []
    with dml.create_device(cache_limits=dml.CacheLimits(constant_arrays=2)) as device:
        arrays = [dml.asarray(h, device=device) for h in hosts]

        def work(k):
            for step in range(30):
                scale = (0.5, 0.25, 0.125)[(k + step) % 3]  # three values through a cache of two
                got = (arrays[k] * scale + 1.5).numpy()
                if not np.array_equal(bits(got), bits(hosts[k] * np.float32(scale) + np.float32(1.5))):
                    failures.append((k, step))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []


def test_closing_a_device_empties_its_constants():
    device = dml.create_device()
    x = dml.asarray(np.ones(8, np.float32), device=device)
    (x * 3.0).numpy()
    assert len(device.constant_arrays) == 1
    device.close()
    assert len(device.constant_arrays) == 0
    with pytest.raises(dml.DeviceRemovedError):
        (x * 3.0).numpy()


def test_a_forked_child_neither_uses_nor_corrupts_the_parents_constants():
    result = run_child("""
        device = dml.create_device()
        x = dml.asarray(np.arange(64, dtype=np.float32), device=device)
        assert np.array_equal((x * 0.5).numpy(), np.arange(64, dtype=np.float32) * np.float32(0.5))
        pid = os.fork()
        if pid == 0:
            code = 0
            if len(device.constant_arrays) != 0:
                code = 6
            try:
                (x * 0.5).numpy()
                code = 3
            except dml.DeviceRemovedError as error:
                code = code or (0 if "another process" in str(error) else 4)
            except BaseException:
                code = 5
            try:  # a device of its own shares nothing with the parent's
                with dml.create_device() as own:
                    y = dml.asarray(np.arange(64, dtype=np.float32), device=own)
                    if not np.array_equal((y * 0.5).numpy(), np.arange(64, dtype=np.float32) * np.float32(0.5)):
                        code = code or 7
            except BaseException:
                code = code or 8
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert np.array_equal((x * 0.5 + 1.0).numpy(), np.arange(64, dtype=np.float32) * np.float32(0.5) + 1)
        print("ok")
    """, env=MESA_FORK_SAFE_ENV, timeout=120)
    assert_clean(result)
