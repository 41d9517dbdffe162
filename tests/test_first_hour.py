"""What a new user meets in the first hour: annotations on every public name, error messages
that name the function, the argument and the fix, buffers that know their tensor, and a
`dmlpy` logger that explains the first call's pause without printing anything by default."""

from __future__ import annotations

import inspect
import logging

import ml_dtypes
import numpy as np
import pytest
from child import assert_clean, run_child

import dmlpy as dml
import dmlpy.graph
from dmlpy import infiniop

T = dml.TensorDataType


def _public_callables():
    """(where, function) for every public function of dmlpy, dmlpy.graph and dmlpy.infiniop,
    and every public method and property of the classes they export. The NumPy front ends and
    graph functions made from the operator table carry generated signatures (and stubs)."""
    seen = set()
    for module, prefix in ((dml, "dml."), (dmlpy.graph, "dml.graph."), (infiniop, "infiniop.")):
        for name in getattr(module, "__all__", dir(module)):
            value = getattr(module, name)
            if name.startswith("_") or id(value) in seen or not getattr(value, "__module__", "").startswith("dmlpy"):
                continue
            seen.add(id(value))
            if inspect.isfunction(value) and getattr(value, "__signature__", None) is None:
                yield prefix + name, value
            elif inspect.isclass(value):
                for attribute, member in vars(value).items():
                    if attribute.startswith("_") and attribute != "__init__":
                        continue
                    if isinstance(member, property) and member.fget is not None:
                        yield f"{prefix}{name}.{attribute}", member.fget
                    elif inspect.isfunction(member):
                        yield f"{prefix}{name}.{attribute}", member


def test_every_public_function_and_method_is_annotated():
    missing = []
    for where, function in _public_callables():
        signature = inspect.signature(function)
        bare = [p for p in signature.parameters if p not in ("self", "cls")
                and signature.parameters[p].annotation is inspect.Parameter.empty]
        if bare or (signature.return_annotation is inspect.Signature.empty and not where.endswith("__init__")):
            missing.append(f"{where}: parameters {bare}, return annotated: "
                           f"{signature.return_annotation is not inspect.Signature.empty}")
    assert not missing, "\n".join(missing)
    names = {where for where, _ in _public_callables()}
    assert {"dml.asarray", "dml.prelu_grad", "dml.Buffer.read", "infiniop.infiniopReluBackward"} <= names


# --- Error messages -----------------------------------------------------------------------


def test_a_front_ends_type_error_names_the_function(device):
    with pytest.raises(TypeError, match=r"^relu\(\) got an unexpected keyword argument 'axis'$"):
        dml.relu(np.ones(3, np.float32), axis=1)
    with pytest.raises(TypeError, match=r"^relu_grad\(\) missing a required argument: 'dy'$"):
        dml.relu_grad(np.ones(3, np.float32))


@pytest.mark.parametrize("dtype, conversion", [
    (np.float64, "x.astype(np.float32)"), (np.int64, "x.astype(np.int32)"), (np.uint64, "x.astype(np.float32)")])
def test_a_host_dtype_the_operator_never_takes_is_refused_with_the_conversion(device, dtype, conversion):
    with pytest.raises(dml.InvalidArgumentError) as error:
        dml.relu(np.ones(4, dtype), device=device)
    message = str(error.value)
    assert message.startswith(f"relu: x has dtype {np.dtype(dtype)}, which ACTIVATION_RELU does not take (it takes "
                              "np.float32, np.float16, np.int32, np.int16, np.int8, ml_dtypes.bfloat16); convert it "
                              f"first, e.g. {conversion}")
    with pytest.raises(dml.InvalidArgumentError, match=r"^softmax: x has dtype float64, .* x\.astype\(np\.float32\)"):
        dml.softmax(np.ones((2, 3)), axes=1, device=device)


def test_a_front_ends_axes_are_checked_in_numpys_terms(device):
    x = np.ones((2, 3), np.float32)
    for axes in ((-3,), 2, (0, 5)):
        with pytest.raises(dml.InvalidArgumentError, match=r"x has 2 dims, so each axis must lie in \[-2, 1\] "
                                                           r"\(negative axes count from the end\)"):
            dml.softmax(x, axes=axes, device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"x has 2 dims, so each axis must lie in \[-2, 1\]"):
        dml.softmax(dml.asarray(x, device=device), axes=(-3,))
    assert np.array_equal(dml.softmax(x, axes=-1, device=device), dml.softmax(x, axes=(1,), device=device))


def test_mixed_data_types_are_named_even_when_given_as_numbers():
    with pytest.raises(dml.InvalidArgumentError) as error:
        dml.ActivationReluOperatorDesc(dml.BufferTensorDesc(1, (2,)), dml.BufferTensorDesc(2, (2,)))
    assert "output_tensor.data_type FLOAT16 != input_tensor.data_type FLOAT32" in str(error.value)


def test_unsupported_data_types_list_each_type_once_at_its_first_level():
    with pytest.raises(dml.InvalidArgumentError) as error:
        dml.ActivationReluOperatorDesc(dml.BufferTensorDesc(T.FLOAT64, (2,)), dml.BufferTensorDesc(T.FLOAT64, (2,)))
    assert str(error.value).startswith(
        "ActivationReluOperatorDesc.input_tensor.data_type FLOAT64 is not supported: ACTIVATION_RELU accepts FLOAT32 "
        "and FLOAT16 from FEATURE_LEVEL_1_0; BFLOAT16 from FEATURE_LEVEL_3_0; INT32, INT16, and INT8 from "
        "FEATURE_LEVEL_5_1 (")


# --- Buffers made for a tensor ---------------------------------------------------------------


def test_a_buffer_made_for_a_tensor_checks_dtypes_and_reads_the_tensor(device):
    x = dml.BufferTensorDesc(np.float16, (2, 3))
    buffer = device.create_buffer(tensor=x)
    assert buffer.size_in_bytes == x.total_tensor_size_in_bytes and buffer.tensor == x
    assert repr(buffer) == "<dmlpy.Buffer 12 bytes for BufferTensorDesc(FLOAT16, (2, 3))>"
    with pytest.raises(dml.InvalidArgumentError, match=r"array.dtype float32 != float16: this buffer holds a FLOAT16 "
                                                       r"tensor; convert first, e.g. array.astype\(np.float16\)"):
        buffer.write(np.ones(3, np.float32))  # 12 bytes: the slip a size check alone would miss
    buffer.write(np.arange(6, dtype=np.float16).reshape(2, 3))
    assert np.array_equal(buffer.read(), np.arange(6, dtype=np.float16).reshape(2, 3))
    assert buffer.read().dtype == np.float16
    assert np.array_equal(buffer.read(np.float16, 2, offset=2), [1, 2])
    with pytest.raises(dml.InvalidArgumentError, match="dtype float32 != float16: this buffer holds a FLOAT16 tensor"):
        buffer.read(np.float32, 3)
    buffer.write(b"\x00" * 12)  # raw bytes stay raw bytes


def test_a_buffer_made_for_a_strided_tensor_reads_through_its_strides(device):
    transposed = dml.BufferTensorDesc(ml_dtypes.bfloat16, (2, 3), (1, 2))
    buffer = device.create_buffer(tensor=transposed)
    buffer.write(np.arange(6).astype(ml_dtypes.bfloat16))
    assert np.array_equal(buffer.read(), np.arange(6).reshape(3, 2).T.astype(ml_dtypes.bfloat16))
    with pytest.raises(dml.InvalidArgumentError, match=r"array.astype\(ml_dtypes.bfloat16\)"):
        buffer.write(np.ones(6, np.float16))


@pytest.mark.parametrize("call, message", [
    (lambda d: d.create_buffer(), "size_in_bytes None: give the buffer's size, or the tensor it holds"),
    (lambda d: d.create_buffer(8, tensor=dml.BufferTensorDesc(T.FLOAT32, (3,))),
     "size_in_bytes 8 is smaller than tensor.total_tensor_size_in_bytes 12"),
    (lambda d: d.create_buffer(tensor=(3,)), "tensor must be a BufferTensorDesc, not tuple"),
    (lambda d: d.create_buffer(tensor=dml.BufferTensorDesc(T.INT4, (8,))), "INT4 has no NumPy dtype"),
    (lambda d: d.create_buffer(16).read(), "read() needs dtype and count: this buffer was made by size"),
])
def test_buffer_misuse_is_refused_by_name(device, call, message):
    with pytest.raises(dml.InvalidArgumentError) as error:
        call(device)
    assert message in str(error.value)


# --- What prints ------------------------------------------------------------------------------


def test_infini_status_prints_its_name_and_stays_an_int():
    assert str(infiniop.InfiniStatus.SUCCESS) == "InfiniStatus.SUCCESS" == f"{infiniop.InfiniStatus.SUCCESS}"
    status = infiniop.InfiniStatus
    assert status.SUCCESS == 0 and int(status.BAD_PARAM) == status.BAD_PARAM


def test_a_device_array_prints_its_values_and_a_closed_ones_does_not_raise():
    device = dml.create_device()
    array = dml.tanh(dml.asarray(np.zeros((2, 2), np.float32), device=device))  # deferred: printing computes it
    assert repr(array) == (f"dmlpy.DeviceArray([[0., 0.],\n                   [0., 0.]], dtype=float32, "
                           f"shape=(2, 2), device={device.adapter_name!r})")
    device.close()
    assert repr(array).endswith("values unreadable (DeviceRemovedError)>")


# --- Logging ----------------------------------------------------------------------------------


def test_the_dmlpy_logger_says_what_compiled_and_how_long_it_took(device, caplog):
    caplog.set_level(logging.DEBUG, logger="dmlpy")
    x = np.linspace(-1, 1, 97, dtype=np.float32)  # a size no other test compiles for this operator
    dml.softsign_grad(x, x, device=device)
    compiled = [r for r in caplog.records if r.levelno == logging.INFO and r.message.startswith("compiled ")]
    assert compiled and compiled[0].name == "dmlpy.runtime.device", caplog.text
    assert "ACTIVATION_SOFTSIGN_GRAD FLOAT32" in compiled[0].message and " ms (" in compiled[0].message
    caplog.clear()
    dml.softsign_grad(x.reshape(1, 97), x.reshape(1, 97), out=np.empty((1, 97), np.float32), device=device)
    assert not [r for r in caplog.records if r.message.startswith("compiled ")], caplog.text


def test_creating_a_device_logs_the_adapter_and_profile(caplog):
    caplog.set_level(logging.INFO, logger="dmlpy")
    device = dml.create_device(profile="nvidia-h100")
    device.close()
    [record] = [r for r in caplog.records if r.message.startswith("device on adapter")]
    assert "device profile 'nvidia-h100' (from profile)" in record.message and "FEATURE_LEVEL_6_4" in record.message


def test_nothing_is_printed_by_default_and_logging_shows_it_when_asked():
    quiet = run_child("""
        dml.relu(np.linspace(-1, 1, 103, dtype=np.float32))
        print("ok")
    """)
    assert_clean(quiet)
    assert quiet.stdout == "ok\n" and "dmlpy" not in quiet.stderr, quiet.stderr
    shown = run_child("""
        import logging
        logging.basicConfig(level=logging.INFO)
        dml.relu(np.linspace(-1, 1, 103, dtype=np.float32))
        print("ok")
    """)
    assert_clean(shown)
    assert "INFO:dmlpy.runtime.device:device on adapter" in shown.stderr
    assert "INFO:dmlpy.runtime.device:compiled ACTIVATION_RELU FLOAT32" in shown.stderr
