"""Hostile inputs at dmlpy's edges (DLPack capsules, adapter and profile names, bindings, the
dump tool's arguments): each is a DmlError naming the argument, the value and the rule, never
a crash, a hang or a stray ValueError, OverflowError or TypeError."""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from child import assert_clean, run_child
from dlpack_capsule import DLDataType, DLDevice, DLManagedTensor, DLTensor, capsule

import dmlpy as dml

ROOT = Path(__file__).resolve().parent.parent
T = dml.TensorDataType


# --- DLPack: a producer that writes whatever fields it is given ------------------------------



class Producer:
    """A host tensor whose "dltensor" capsule holds exactly the fields given: `shape` and
    `strides` None are NULL pointers, `ndim` defaults to len(shape), the data is 16 real
    float32 values unless `null_data`."""

    def __init__(self, shape=(4,), strides=None, ndim=None, null_data=False, byte_offset=0, dtype=(2, 32, 1)):
        self.memory = np.arange(16, dtype=np.float32)
        self.shape = None if shape is None else (ctypes.c_int64 * len(shape))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        ndim = len(shape) if ndim is None else ndim
        data = None if null_data else self.memory.ctypes.data
        self.managed = DLManagedTensor(DLTensor(data, DLDevice(1, 0), ndim, DLDataType(*dtype), self.shape,
                                                self.strides, byte_offset))

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **_):
        return capsule(self.managed)


@pytest.mark.parametrize("fields, message", [
    (dict(ndim=-1), r"^x: DLPack ndim -1 is not 0 to 32"),
    (dict(shape=(1,) * 33), r"^x: DLPack ndim 33 is not 0 to 32"),
    (dict(shape=None, ndim=2), r"^x: DLPack shape is NULL with ndim 2"),
    (dict(shape=(2, -3)), r"^x: DLPack shape\[1\] -3 is negative: sizes are 0 or more"),
    (dict(shape=(2, -3), strides=(1, 1)), r"^x: DLPack shape\[1\] -3 is negative"),
    (dict(dtype=(2, 32, 4)), r"^x: DLPack dtype.lanes 4 is not 1"),
    (dict(shape=(2**40, 2**40)), r"^x: DLPack shape \(1099511627776, 1099511627776\) of 4-byte elements makes "
                                 r"4835703278458516698824704 bytes .*: more than 2\^63 - 1"),
    (dict(shape=(0, 2**62, 2**62)), r"^x: DLPack shape \(0, 4611686018427387904, 4611686018427387904\) .* more "
                                    r"than 2\^63 - 1"),  # empty, but NumPy cannot describe it
    (dict(shape=(2,), strides=(2**62,)), r"^x: DLPack shape \(2,\) with strides \(4611686018427387904,\) spans "
                                         r"18446744073709551620 bytes of memory: more than 2\^63 - 1"),
    (dict(shape=(3, 3), strides=(-(2**61), 1)), r"spans 18446744073709551628 bytes"),
    (dict(byte_offset=2**64 - 8), r"^x: DLPack data 0x[0-9a-f]+ \+ byte_offset 18446744073709551608 with strides "
                                  r"\(1,\) puts elements from address 0x[0-9a-f]+ to 0x[0-9a-f]+: outside the address "
                                  r"space \(1 to 0xffffffffffffffff\)"),
])
def test_a_dlpack_tensor_with_impossible_fields_is_refused_by_name(device, fields, message):
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.relu(Producer(**fields), device=device)


@pytest.mark.parametrize("fields, message", [
    # Without the checks these read address 0, or an address below it (wrapping to the top).
    ("null_data=True", "x: DLPack data is NULL with shape (4,): only an empty tensor may have no memory"),
    ("null_data=True, shape=(2, 2), strides=(0, 0)", "x: DLPack data is NULL with shape (2, 2)"),
    ("shape=(3,), strides=(-(2**46),)", "puts elements from address -0x"),
    ("ndim=2**31 - 1", "x: DLPack ndim 2147483647 is not 0 to 32"),  # would read 16 GiB of "shape"
])
def test_a_dlpack_tensor_pointing_at_no_memory_is_refused_before_any_read(fields, message):
    result = run_child(f"""
        from test_hostile_inputs import Producer
        try:
            dml.relu(Producer({fields}))
        except dml.InvalidArgumentError as error:
            print(error.message)
        print("ok")
    """, timeout=60)
    assert_clean(result)
    assert message in result.stdout, result.stdout


def test_an_empty_dlpack_tensor_may_have_null_data(device):
    assert dml.relu(Producer(shape=(0, 3), null_data=True), device=device).shape == (0, 3)


def test_a_dlpack_tensor_too_big_to_copy_is_unsupported(device):
    """A real producer can broadcast one value through a zero stride; 4 PiB is no copy to make."""
    with pytest.raises(dml.UnsupportedError, match=r"^x: its copy of 4503599627370496 bytes does not fit in host "
                                                    r"memory"):
        dml.relu(Producer(shape=(2**50,), strides=(0,)), device=device)


# --- adapters -----------------------------------------------------------------------------

ADAPTERS = r"; the adapters are 0: "


@pytest.mark.parametrize("adapter, message", [
    ("²", r"^adapter '²' matches no adapter" + ADAPTERS),  # str.isdigit() is true for it, int() refuses it
    ("7" * 5000, r"^adapter '7{509}\.\.\.7{510}' is not an adapter index" + ADAPTERS),  # past int()'s 4,300 digits
    (10**5000, r"^adapter <a 16610-bit integer> is not an adapter index" + ADAPTERS),  # repr() refuses it
], ids=["superscript two", "5000-digit str", "5000-digit int"])
def test_an_adapter_that_is_no_index_is_refused_listing_the_adapters(adapter, message):
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.create_device(adapter=adapter)


def test_dmlpy_adapter_that_is_no_index_is_refused_by_its_name(monkeypatch):
    monkeypatch.setenv("DMLPY_ADAPTER", "²")
    with pytest.raises(dml.InvalidArgumentError, match=r"^DMLPY_ADAPTER '²' matches no adapter" + ADAPTERS):
        dml.create_device()


# --- device profiles ----------------------------------------------------------------------

class BytesPath(os.PathLike):
    def __fspath__(self):
        return b"/tmp/profile.json"


@pytest.mark.parametrize("profile, message", [
    ("/tmp/a\0b.json", r"^profile '/tmp/a\\x00b.json' contains a NUL byte: no file has that name"),
    (Path("/"), r"^profile '/' is a directory: a device profile must be a regular file"),
    ("/dev/zero", r"^profile '/dev/zero' is a character device: a device profile must be a regular file"),
    (BytesPath(), r"^profile <.*BytesPath object at 0x[0-9a-f]+> is a path of bytes: give a str path"),
])
def test_a_profile_path_that_is_no_regular_file_is_refused(profile, message):
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.create_device(profile=profile)


def test_dmlpy_device_profile_that_is_no_regular_file_is_refused_by_its_name(monkeypatch):
    monkeypatch.setenv("DMLPY_DEVICE_PROFILE", "/dev/zero")
    with pytest.raises(dml.InvalidArgumentError, match=r"^DMLPY_DEVICE_PROFILE '/dev/zero' is a character device"):
        dml.create_device()


def test_a_profile_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "profile.json"
    os.mkfifo(fifo)
    result = run_child(f"""
        try:
            dml.create_device(profile={str(fifo)!r})
        except dml.InvalidArgumentError as error:
            print(error.message)
        print("ok")
    """, timeout=30)
    assert_clean(result)
    assert f"profile {str(fifo)!r} is a FIFO: a device profile must be a regular file" in result.stdout


# --- bindings -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def relu(device):
    desc = dml.ActivationReluOperatorDesc(dml.BufferTensorDesc(T.FLOAT32, (2, 3)),
                                          dml.BufferTensorDesc(T.FLOAT32, (2, 3)))
    return device.compile_operator(device.create_operator(desc))


@pytest.mark.parametrize("binding, message", [
    (lambda x: dml.BufferBinding("x"), r"^inputs\[0\] \(InputTensor\).buffer must be a Buffer, not str"),
    (lambda x: dml.BufferBinding(x, 10**5000),
     r"^inputs\[0\] \(InputTensor\).offset <a 16610-bit integer> is more than 2\^64 - 1"),
    (lambda x: dml.BufferBinding(x, -(10**5000)),
     r"^inputs\[0\] \(InputTensor\).offset <a negative 16610-bit integer> must not be negative"),
    (lambda x: dml.BufferBinding(x, 0, 10**5000),
     r"^inputs\[0\] \(InputTensor\).size_in_bytes <a 16610-bit integer> is more than 2\^64 - 1"),
])
def test_a_binding_is_refused_naming_its_field_and_what_was_passed(device, relu, binding, message):
    x = device.create_buffer(24)
    with pytest.raises(dml.InvalidArgumentError, match=message):
        device.create_binding_table(relu, inputs=[binding(x)], outputs=[x])


def test_a_temporary_of_the_wrong_type_is_refused_naming_the_type(device, relu):
    x = device.create_buffer(24)
    with pytest.raises(dml.InvalidArgumentError, match=r"^temporary must be None, a Buffer or a BufferBinding, not "
                                                       r"str"):
        device.create_binding_table(relu, inputs=[x], outputs=[x], temporary="scratch")


@pytest.mark.parametrize("call, message", [
    (lambda d, x: d.create_buffer(10**5000), r"^size_in_bytes <a 16610-bit integer> is more than 2\^64 - 1"),
    (lambda d, x: x.read(np.uint8, 10**20), r"^count 100000000000000000000 is more than 2\^64 - 1"),
    (lambda d, x: x.read(np.float64, 2**61),  # 2^64 bytes: no array to allocate before the range is checked
     r"^read of 18446744073709551616 bytes at offset 0 ends past the buffer's 24 bytes"),
    (lambda d, x: x.write(np.zeros(4, np.uint8), 10**5000), r"^write offset <a 16610-bit integer> is more than"),
])
def test_a_huge_count_or_offset_is_refused_and_printed_short(device, call, message):
    with pytest.raises(dml.InvalidArgumentError, match=message):
        call(device, device.create_buffer(24))


# --- the dump tool ------------------------------------------------------------------------

def dump(*args):
    return subprocess.run([sys.executable, "tools/dump_shaders.py", "relu_grad", "--dtype", "float32", "--sizes", "4",
                           *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("args, message", [
    (["--adapter", "²"], "adapter '²' matches no adapter; the adapters are 0: "),
    (["--out", "/dev/null/dir"], "argument --out: '/dev/null/dir' cannot be created: Not a directory"),
    (["--out", "/dev/null"], "argument --out: '/dev/null' is not a directory"),
    (["--out", "a" * 5000], f"argument --out: '{'a' * 509}...{'a' * 510}' cannot be created: File name too long"),
    (["--profile", "/"], "profile '/' is a directory: a device profile must be a regular file"),
])
def test_dump_usage_errors_exit_2_with_one_error_line(args, message):
    result = dump(*args)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"dump_shaders.py: error: {message}"), result.stderr


def test_dump_writes_into_an_out_it_creates(tmp_path):
    out = tmp_path / "dir"  # only the last directory is created: its parent must exist
    result = dump("--out", out)
    assert result.returncode == 0, result.stderr
    assert sorted(p.suffix for p in out.iterdir()) == [".comp", ".comp", ".spv", ".spv", ".spvasm", ".spvasm"]


def test_bench_replot_of_a_fifo_is_a_usage_error_not_a_hang(tmp_path):
    fifo = tmp_path / "bench.json"
    os.mkfifo(fifo)
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "bench.py"), "--replot", str(fifo), "--plot",
                             str(tmp_path / "bench.png")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "is a FIFO" in result.stderr.splitlines()[-1], result.stderr


class UnprintableNumber:
    """A value whose repr() raises: the message about it must still be an InvalidArgumentError."""

    def __repr__(self):
        raise RuntimeError("repr refused")


@pytest.mark.parametrize("alpha, message", [
    (10 ** 5000, r"alpha <a 16610-bit integer> is not a finite FP32 value: Alpha must be finite"),
    (-(10 ** 5000), r"alpha <a negative 16610-bit integer> is not a finite FP32 value"),
    (UnprintableNumber(), r"alpha <UnprintableNumber instance at 0x[0-9a-f]+> must be a number"),
], ids=["huge", "huge negative", "unprintable"])
def test_a_scalar_too_big_or_unprintable_is_refused_by_name(alpha, message):
    tensor = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (4,))
    with pytest.raises(dml.InvalidArgumentError, match=message) as raised:
        dml.ActivationEluOperatorDesc(tensor, tensor, alpha=alpha)
    assert raised.value.field == "alpha"
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.elu(np.ones(4, np.float32), alpha)
