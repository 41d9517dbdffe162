"""What a hostile or careless caller must not be able to do: change a desc after it was
checked, overflow a workspace, stall the overlap proof, lose another thread's results, be
served the wrong cached operator, plant SPIR-V, or get an error that is not a DmlError.
(Crashes and hangs are tested in child processes: test_isolation.py.)"""

import errno
import os
import stat
import threading
import time
import warnings

import ml_dtypes
import numpy as np
import pytest
from reference import hard_sigmoid_grad, prelu_grad, relu_grad

import dmlpy as dml
from dmlpy import infiniop
from dmlpy.infiniop import InfiniDtype, InfiniStatus
from dmlpy.runtime import shader_compiler

T = dml.TensorDataType


def packed(count, data_type=T.FLOAT32):
    return dml.BufferTensorDesc(data_type, (count,))


def canary_buffer(device, size, canary=0xA5):
    buffer = device.create_buffer(size)
    buffer.write(np.full(size, canary, np.uint8))
    return buffer


# 3: a desc changed after validation, or a subclass that skips validation


def test_a_desc_changed_after_create_operator_does_not_reach_the_operator():
    with dml.create_device(guarded=True) as device:
        tensor = packed(4)
        op = device.create_operator(dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor))
        object.__setattr__(tensor, "sizes", (4096,))
        object.__setattr__(tensor, "total_tensor_size_in_bytes", 16)
        compiled = device.compile_operator(op)
        assert compiled.desc.input_tensor.sizes == (4,) and compiled.plan.element_count == 4
        buffers = [canary_buffer(device, 64) for _ in range(3)]
        buffers[0].write(np.ones(4, np.float32))
        table = device.create_binding_table(compiled, inputs=[dml.BufferBinding(b, 0, 16) for b in buffers[:2]],
                                            outputs=[dml.BufferBinding(buffers[2], 0, 16)])
        device.execute(table)  # guarded: any byte written past the 16 bound ones raises
        assert np.array_equal(buffers[2].read(np.uint8, 64)[16:], np.full(48, 0xA5, np.uint8))


def test_a_desc_changed_before_create_operator_is_checked_again(device):
    tensor = packed(4)
    desc = dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)
    object.__setattr__(tensor, "sizes", (4096,))
    with pytest.raises(dml.InvalidArgumentError, match="total_tensor_size_in_bytes 16 is smaller"):
        device.create_operator(desc)


class UncheckedTensorDesc(dml.BufferTensorDesc):
    def __post_init__(self):  # skips every rule
        pass


class UncheckedReluGrad(dml.ActivationReluGradOperatorDesc):
    schema = None  # a subclass cannot choose the rules it is checked by

    def __post_init__(self):
        pass


@pytest.mark.parametrize("tensor, match", [
    (UncheckedTensorDesc(T.FLOAT32, (-4,)), "must be in"),
    (UncheckedTensorDesc(T.FLOAT32, (4096,), None, dml.TensorFlags.NONE, 16), "smaller than"),
    (UncheckedTensorDesc("FLOAT32", (4,)), "not a TensorDataType"),
])
def test_subclasses_that_skip_validation_are_validated_by_the_device(device, tensor, match):
    good = packed(4)
    with pytest.raises(dml.InvalidArgumentError, match=match):
        device.create_operator(UncheckedReluGrad(tensor, good, good))


def test_an_unchecked_subclass_with_valid_values_runs_as_its_operator(device):
    tensor = UncheckedTensorDesc(T.FLOAT32, (4,), None, dml.TensorFlags.NONE, 16, 0)
    op = device.create_operator(UncheckedReluGrad(tensor, tensor, tensor))
    assert type(op.desc) is dml.ActivationReluGradOperatorDesc and type(op.desc.input_tensor) is dml.BufferTensorDesc


# 4: infiniop never widens the caller's workspace


def test_infiniop_prelu_workspace_binding_is_the_limit():
    with dml.create_device(guarded=True) as device:
        _, handle = infiniop.infiniopCreateHandle(device)
        _, x = infiniop.infiniopCreateTensorDescriptor([4, 64], None, InfiniDtype.F32)
        _, slope = infiniop.infiniopCreateTensorDescriptor([4, 64], [0, 1], InfiniDtype.F32)
        _, dslope = infiniop.infiniopCreateTensorDescriptor([1, 64], None, InfiniDtype.F32)
        status, op = infiniop.infiniopCreatePReluBackwardDescriptor(handle, x, dslope, x, slope, x)
        assert status == InfiniStatus.SUCCESS
        _, required = infiniop.infiniopGetPReluBackwardWorkspaceSize(op)
        assert required > 4
        data = [device.create_buffer(1024) for _ in range(5)]
        workspace = canary_buffer(device, required + 64)
        status = infiniop.infiniopPReluBackward(op, dml.BufferBinding(workspace, 0, 4), required, *data)
        assert status == InfiniStatus.INSUFFICIENT_WORKSPACE, infiniop.last_error()
        assert np.array_equal(workspace.read(np.uint8, required + 64), np.full(required + 64, 0xA5, np.uint8))
        status = infiniop.infiniopPReluBackward(op, dml.BufferBinding(workspace, 0, required), required + 64, *data)
        assert status == InfiniStatus.SUCCESS, infiniop.last_error()
        assert np.array_equal(workspace.read(np.uint8, 64, offset=required), np.full(64, 0xA5, np.uint8))


# 5: the output-overlap proof is fast whatever the element count


@pytest.mark.parametrize("sizes, strides", [((32768, 65536), (1, 1)), ((8192, 8192), (1, 8191)),
                                            ((65535, 65535), (65534, 1))])
def test_overlapping_huge_outputs_are_refused_quickly(sizes, strides):
    tensor = dml.BufferTensorDesc(T.FLOAT32, sizes, strides)
    started = time.perf_counter()
    with pytest.raises(dml.InvalidArgumentError, match="must not write any element twice"):
        dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("sizes, strides, distinct", [((3, 3), (2, 3), True), ((2, 2), (1, 1), False),
                                                      ((5, 4), (3, 4), False), ((2, 3), (3, 2), True)])
def test_interleaved_strides_are_decided_exactly(sizes, strides, distinct):
    offsets = {sum(i * s for i, s in zip(index, strides)) for index in np.ndindex(*sizes)}
    assert (len(offsets) == np.prod(sizes)) == distinct
    assert dml.BufferTensorDesc(T.FLOAT32, sizes, strides).writes_each_element_once() == distinct


# 6: a call writes exactly the elements of its out


def test_two_threads_writing_interleaved_outs_keep_each_others_results(device):
    rng = np.random.default_rng(0)
    x, dy = rng.standard_normal((2, 4096)).astype(np.float32), rng.standard_normal((2, 4096)).astype(np.float32)
    expected = [relu_grad(x[k], dy[k]) for k in range(2)]
    for _ in range(10):
        base = np.zeros(2 * 4096, np.float32)

        def run(k, base=base):
            for _ in range(5):
                dml.relu_grad(x[k], dy[k], out=base[k::2], device=device)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert np.array_equal(base[0::2], expected[0]) and np.array_equal(base[1::2], expected[1])


def test_out_gaps_are_never_written(device):
    base = np.full(30, 7.0, np.float32)
    x = np.linspace(-1, 1, 10).astype(np.float32)
    dml.relu_grad(x, np.ones(10, np.float32), out=base[::3], device=device)
    assert np.all(np.delete(base, np.arange(0, 30, 3)) == 7.0)


# 7: cached operators are keyed by the bits of every scalar


def test_minus_zero_alpha_is_not_served_the_plus_zero_operator(device):
    x, dy = np.ones(8, np.float32), np.ones(8, np.float32)
    plus = dml.hard_sigmoid_grad(x, dy, alpha=0.0, beta=0.5, device=device)
    minus = dml.hard_sigmoid_grad(x, dy, alpha=-0.0, beta=0.5, device=device)
    assert not np.signbit(plus).any() and np.signbit(minus).all()
    assert np.array_equal(minus.view(np.uint32), hard_sigmoid_grad(x, dy, -0.0, 0.5).view(np.uint32))


# 8: the guard sees only the work it guards, command lists included


def test_guarded_device_under_concurrent_use_reports_no_false_violation():
    with dml.create_device(guarded=True) as device:
        compiled = device.compile_operator(device.create_operator(
            dml.ActivationReluGradOperatorDesc(packed(256), packed(256), packed(256))))
        failures = []

        def worker(seed):
            try:
                rng = np.random.default_rng(seed)
                buffers = [device.create_buffer(1024) for _ in range(3)]
                table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
                for _ in range(15):
                    x, dy = rng.standard_normal(256).astype(np.float32), rng.standard_normal(256).astype(np.float32)
                    buffers[0].write(x)
                    buffers[1].write(dy)
                    device.execute(table)
                    assert np.array_equal(buffers[2].read(np.float32, 256), relu_grad(x, dy))
            except Exception as error:
                failures.append(repr(error))

        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures, failures


def test_guard_checks_command_lists():
    from dmlpy.kernels.codegen import plan_copy
    from dmlpy.runtime.kompute import Launch
    from dmlpy.runtime.shader_compiler import compile_glsl

    with dml.create_device(guarded=True) as device:
        strided = dml.BufferTensorDesc(T.FLOAT32, (16,), (2,))
        compiled = device.compile_operator(device.create_operator(
            dml.ActivationReluGradOperatorDesc(packed(16), packed(16), strided)))
        buffers = [device.create_buffer(64), device.create_buffer(64), device.create_buffer(128)]
        table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
        (stage,) = plan_copy(32, device.adapter).stages
        rogue = compile_glsl(stage.source()).spirv
        table.steps = [device.context.create_algorithms(rogue, [Launch(
            [buffers[0].segments[0], buffers[2].segments[0]], stage.workgroups(device.adapter, 32),
            np.array([16], np.uint32))])]
        buffers[0].write(np.ones(16, np.float32))
        command_list = device.create_command_list()
        command_list.record_dispatch(table)
        with pytest.raises(dml.GuardViolationError, match="bytes it does not own"):
            device.execute(command_list)


# 9-13: the SPIR-V cache belongs to its user and cannot be planted, stalled or exhausted


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "spirv"
    monkeypatch.setenv("DMLPY_CACHE_DIR", str(directory))
    return directory


def compile_in_fresh_device(sizes=(3, 7)):
    tensor = dml.BufferTensorDesc(T.FLOAT16, sizes)
    with dml.create_device() as device:
        compiled = device.compile_operator(device.create_operator(
            dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)))
        buffers = [device.create_buffer(tensor.total_tensor_size_in_bytes) for _ in range(3)]
        device.execute(device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:]))
        return compiled


def test_cache_directory_is_created_private(cache):
    compile_in_fresh_device()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    for entry in cache.iterdir():
        assert entry.stat().st_uid == os.geteuid() and stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_a_cache_others_may_write_is_refused_with_a_warning(cache):
    cache.mkdir()
    cache.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="writable by others"):
        assert not compile_in_fresh_device().cache_hit
    assert list(cache.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_cache_owned_by_another_user_is_refused(cache):
    cache.mkdir(mode=0o700)
    os.chown(cache, 4242, 4242)
    with pytest.warns(RuntimeWarning, match="owned by uid 4242"):
        compile_in_fresh_device()
    assert list(cache.iterdir()) == []


def main_entry(cache, compiled):
    """The cache entry of the operator's main shader (a packed kernel also has a tail shader,
    and a device caches its denormal probe's shader beside them)."""
    return cache / shader_compiler.cache_entry_name(compiled.sources[0])


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_an_entry_owned_by_another_user_is_rebuilt(cache):
    compiled = compile_in_fresh_device()
    os.chown(main_entry(cache, compiled), 4242, 4242)
    assert not compile_in_fresh_device().cache_hit
    assert main_entry(cache, compiled).stat().st_uid == os.geteuid()


@pytest.mark.parametrize("plant", ["fifo", "symlink_to_dev_zero", "directory", "huge"])
def test_planted_non_regular_or_huge_entries_are_rebuilt_without_blocking(cache, plant):
    entry = main_entry(cache, compile_in_fresh_device())
    entry.unlink()
    if plant == "fifo":
        os.mkfifo(entry)
    elif plant == "symlink_to_dev_zero":
        entry.symlink_to("/dev/zero")
    elif plant == "directory":
        entry.mkdir()
    else:
        with open(entry, "wb") as huge:
            huge.truncate(shader_compiler.MAX_ENTRY_BYTES + 1)
    result = []
    thread = threading.Thread(target=lambda: result.append(compile_in_fresh_device()), daemon=True)
    thread.start()
    thread.join(60)
    assert result and not result[0].cache_hit, "compiling blocked on, or used, a planted entry"
    if plant != "directory":  # a planted directory cannot be replaced, so it stays a miss
        assert compile_in_fresh_device().cache_hit


def test_an_entry_with_a_matching_digest_but_malformed_spirv_is_rebuilt(cache):
    import hashlib

    good = compile_in_fresh_device()
    entry = main_entry(cache, good)
    spirv = entry.read_bytes()[32:]
    malformed = spirv[:20] + bytes(len(spirv) - 20)  # a valid header over a body of zeros
    entry.write_bytes(hashlib.sha256(malformed).digest() + malformed)
    rebuilt = compile_in_fresh_device()  # compiles and runs: the planted body never reached the driver
    assert not rebuilt.cache_hit and rebuilt.spirv == good.spirv


def test_a_full_disk_leaves_no_temporary_files_and_only_disables_caching(cache, monkeypatch):
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, descriptor, *args, **kwargs):
            self.file = real_fdopen(descriptor, *args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(descriptor, mode="r", *args, **kwargs):
        return FullDisk(descriptor, mode, *args, **kwargs) if "w" in mode else real_fdopen(descriptor, mode, *args,
                                                                                           **kwargs)

    monkeypatch.setattr(shader_compiler.os, "fdopen", fdopen)
    for sizes in ((3, 7), (5,), (2, 9)):
        compile_in_fresh_device(sizes)
    assert list(cache.iterdir()) == []


def test_the_disk_cache_keeps_to_its_byte_budget(cache, monkeypatch):
    monkeypatch.setenv("DMLPY_CACHE_MAX_BYTES", "20000")
    for count in range(1, 13):
        tensor = dml.BufferTensorDesc(T.FLOAT32, (count, 3), (1, count))  # a strided shader per count
        with dml.create_device() as device:
            device.compile_operator(device.create_operator(dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)))
    sizes = [e.stat().st_size for e in cache.iterdir()]
    assert len(sizes) >= 1 and sum(sizes) <= 20000


# 15-16: every bad input is a DmlError


@pytest.mark.parametrize("device_argument", ["cpu", 0, object()])
def test_front_end_device_must_be_a_device(device_argument):
    with pytest.raises(dml.InvalidArgumentError, match="device must be a dmlpy Device"):
        dml.relu_grad(np.ones(3, np.float32), np.ones(3, np.float32), device=device_argument)


def test_buffer_refuses_objects_and_lists(device):
    buffer = device.create_buffer(64)
    for bad in (np.array([object()]), [1, 2, 3], 5, "text"):
        with pytest.raises(dml.InvalidArgumentError, match="array"):
            buffer.write(bad)
    for dtype in (object, "V0", "not a dtype"):
        with pytest.raises(dml.InvalidArgumentError, match="dtype"):
            buffer.read(dtype, 4)


def test_buffer_writes_a_strided_memoryview(device):
    buffer = device.create_buffer(64)
    data = np.arange(16, dtype=np.uint8)
    buffer.write(memoryview(data)[::2])
    assert np.array_equal(buffer.read(np.uint8, 8), data[::2])


def test_out_with_a_stride_that_is_not_whole_elements(device):
    record = np.zeros(6, dtype=[("flag", "u1"), ("value", "<f4")])  # 5-byte stride
    x = np.linspace(-1, 1, 6).astype(np.float32)
    dml.relu_grad(x, np.ones(6, np.float32), out=record["value"], device=device)
    assert np.array_equal(record["value"], relu_grad(x, np.ones(6, np.float32)))
    assert np.all(record["flag"] == 0)


@pytest.mark.parametrize("call, status", [
    (lambda: infiniop.infiniopCreateHandle("cpu"), InfiniStatus.BAD_PARAM),
    (lambda: infiniop.infiniopCreateTensorDescriptor(5, None, InfiniDtype.F32), InfiniStatus.BAD_TENSOR_SHAPE),
    (lambda: infiniop.infiniopCreateTensorDescriptor([2], ["a"], InfiniDtype.F32), InfiniStatus.BAD_TENSOR_STRIDES),
    (lambda: infiniop.infiniopCreateTensorDescriptor([2], None, "F32"), InfiniStatus.BAD_TENSOR_DTYPE),
    (lambda: infiniop.infiniopCreateTensorDescriptor([2.5], None, InfiniDtype.F32), InfiniStatus.BAD_TENSOR_SHAPE),
])
def test_malformed_infiniop_arguments_are_the_callers_fault(call, status):
    result = call()
    assert (result[0] if isinstance(result, tuple) else result) == status, infiniop.last_error()


def test_infiniop_workspace_size_must_be_an_integer(device):
    _, handle = infiniop.infiniopCreateHandle(device)
    _, t = infiniop.infiniopCreateTensorDescriptor([4], None, InfiniDtype.F32)
    _, op = infiniop.infiniopCreateReluBackwardDescriptor(handle, t, t, t)
    buffers = [device.create_buffer(16) for _ in range(3)]
    assert infiniop.infiniopReluBackward(op, None, "lots", *buffers) == InfiniStatus.BAD_PARAM


@pytest.mark.parametrize("data_type", [True, 1.0, np.float32(1), "FLOAT32"])
def test_data_type_must_be_an_integer_enum_value(data_type):
    with pytest.raises(dml.InvalidArgumentError, match="not a TensorDataType"):
        dml.BufferTensorDesc(data_type, (4,))


def test_feature_levels_flags_and_queries_must_be_integers(device):
    with pytest.raises(dml.InvalidArgumentError, match="not a FeatureLevel"):
        dml.create_device(max_feature_level=float(0x3000))
    op = device.create_operator(dml.ActivationReluGradOperatorDesc(packed(4), packed(4), packed(4)))
    for flags in (-1, 8, 1.0, True):
        with pytest.raises(dml.InvalidArgumentError, match="ExecutionFlags"):
            device.compile_operator(op, flags)
    with pytest.raises(dml.InvalidArgumentError, match="not a TensorDataType"):
        device.check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, 1.0)


def test_an_implied_size_beyond_uint64_is_refused():
    with pytest.raises(dml.InvalidArgumentError, match="more than a UINT64"):
        dml.BufferTensorDesc(T.FLOAT32, (2**32 - 1,), (2**32 - 1,))


def test_cache_limits_are_checked():
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(dml.InvalidArgumentError, match="CacheLimits.front_end_bindings"):
            dml.CacheLimits(front_end_bindings=bad)
    with pytest.raises(dml.InvalidArgumentError, match="cache_limits must be a CacheLimits"):
        dml.create_device(cache_limits={"shaders": 1})


# 17-18: the front end takes any view NumPy does


def test_front_end_runs_a_strided_view_that_crosses_buffer_segments():
    with dml.create_device() as device:
        device.segment_size = 4096
        rng = np.random.default_rng(3)
        x = rng.standard_normal((64, 64)).astype(np.float32).T  # 16 KiB, transposed: not windowable
        dy = rng.standard_normal((64, 64)).astype(np.float32)
        assert np.array_equal(dml.relu_grad(x, dy, device=device), relu_grad(x, dy))


def test_prelu_grad_normalises_the_stride_of_size_one_axes(device):
    x = np.lib.stride_tricks.as_strided(np.linspace(-1, 1, 3).astype(np.float32), (1, 3), (-12, 4))
    assert x.flags.c_contiguous
    slope, dy = np.full(3, 0.25, np.float32), np.ones((1, 3), np.float32)
    dx, dslope = dml.prelu_grad(x, slope, dy, data_format="NXC", device=device)
    expected_dx, _, _ = prelu_grad(x, np.broadcast_to(slope, (1, 3)), dy, (0,))
    assert np.array_equal(dx, expected_dx)


def test_bfloat16_out_with_gaps_keeps_its_gaps(device):
    base = np.full(12, 3.0, ml_dtypes.bfloat16)
    x = np.array([-1, 1, 2, -2, 0, 5], ml_dtypes.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dml.relu_grad(x, x, out=base[::2], device=device)
    assert np.all(base[1::2] == 3.0) and np.array_equal(base[::2], relu_grad(x, x))


def test_empty_arrays_are_still_checked(device):
    with pytest.raises(dml.InvalidArgumentError, match="FLOAT64 is not supported"):
        dml.hard_sigmoid(np.zeros(0, np.float64), device=device)
    with pytest.raises(dml.InvalidArgumentError, match="Alpha must be finite"):
        dml.hard_sigmoid(np.zeros(0, np.float32), alpha=float("inf"), device=device)
    with pytest.raises(dml.InvalidArgumentError, match="does not fit"):
        dml.relu_grad(np.zeros(2, np.int8), 128, device=device)
