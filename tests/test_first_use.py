"""What a new user types first: the README's code, the front end on what NumPy and PyTorch
users pass, the reprs they print, and the mistakes they make."""

import contextlib
import ctypes
import io
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from dlpack_capsule import DLDataType, DLDevice, DLManagedTensor, DLTensor, capsule

import dmlpy as dml

ROOT = Path(__file__).resolve().parent.parent


def readme_python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


# What the README's blocks print, where a reader could misread it: (text the block holds,
# text its output must hold).
README_OUTPUTS = [
    ("ActivationReluGradOperatorDesc(input_tensor=x", "[[[0. 0. 0. 0.]\n  [0. 0. 0. 0.]\n  [0. 0. 0. 0.]]\n\n"
                                                    " [[0. 1. 1. 1.]\n"),
    ("infiniopReluBackward(desc", "InfiniStatus.SUCCESS [0.  0.5 0.  0.5 0.  0.5]"),
    ("g = dml.GraphBuilder(device)", "<dmlpy.CompiledGraph 4 nodes in 1 kernel> same bits as the four calls one by "
                                     "one: True"),
    ("u = dml.tanh(dml.elu(t))", "dmlpy.DeviceArray([-0.7398795 , -0.7077598 ,"),
]


def test_every_readme_python_block_runs_as_written_and_shows_what_it_says():
    """In order, in one namespace, as a reader pasting them into one session would."""
    blocks = readme_python_blocks()
    assert len(blocks) >= 8
    namespace, outputs = {}, {}
    for index, block in enumerate(blocks):
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            exec(compile(block, f"README.md python block {index}", "exec"), namespace)
        assert shown.getvalue().strip(), f"README python block {index} prints nothing:\n{block}"
        outputs[block] = shown.getvalue()
    for marker, expected in README_OUTPUTS:
        [output] = [output for block, output in outputs.items() if marker in block]
        assert expected in output, output


# --- DLPack: a producer written here, so the test needs no framework -------------------------


DLPACK_CODES = {"i": 0, "u": 1, "f": 2}


class Exported:
    """A host tensor exported through DLPack only (no __array__), as PyTorch exports bfloat16:
    the memory of `array`, with its strides, and DLPack's bfloat16 code for ml_dtypes.bfloat16."""

    def __init__(self, array: np.ndarray, device_type: int = 1):
        self.array = array
        code = 4 if array.dtype == ml_dtypes.bfloat16 else DLPACK_CODES[array.dtype.kind]
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.strides = (ctypes.c_int64 * array.ndim)(*(s // array.itemsize for s in array.strides))
        self.device_type = device_type
        self.managed = DLManagedTensor(DLTensor(array.ctypes.data, DLDevice(device_type, 0), array.ndim,
                                        DLDataType(code, array.itemsize * 8, 1), self.shape, self.strides, 0))

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, **_):
        return capsule(self.managed)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_the_front_end_reads_dlpack_tensors_with_their_strides(device, dtype):
    x = np.linspace(-3, 3, 24).astype(dtype).reshape(4, 6)[::-1, ::2]  # negative and non-unit strides
    dy = np.arange(12).astype(dtype).reshape(4, 3)
    got = dml.relu_grad(Exported(x), Exported(dy), device=device)
    expected = np.where(x > 0, dy, dtype(0)).astype(dtype)
    assert got.dtype == np.dtype(dtype) and got.tobytes() == expected.tobytes()


def test_a_python_scalar_beside_a_dlpack_tensor_takes_its_dtype(device):
    x = np.array([-1.0, 2.0], ml_dtypes.bfloat16)
    got = dml.relu_grad(Exported(x), 3, device=device)
    assert got.dtype == ml_dtypes.bfloat16 and got.tolist() == [0.0, 3.0]


def test_a_dlpack_tensor_off_the_host_is_refused_by_name(device):
    with pytest.raises(dml.InvalidArgumentError, match=r"dy is on DLPack device type 2, not the host"):
        dml.relu_grad(np.ones(3, np.float32), Exported(np.ones(3, np.float32), device_type=2), device=device)


def test_lists_and_scalars_are_arrays_as_numpy_makes_them(device):
    assert dml.relu_grad([[-1.0, 2.0]], [[5.0, 5.0]], device=device).tolist() == [[0.0, 5.0]]
    assert dml.relu_grad(np.array([-1, 2], np.int8), 7, device=device).dtype == np.int8
    with pytest.raises(dml.InvalidArgumentError, match=r"dy 300 does not fit the arrays' dtype int8"):
        dml.relu_grad(np.array([1], np.int8), 300, device=device)
    # Without an array, Python floats are float32 and ints int32 (no FLOAT64 or INT64 activations).
    assert dml.relu_grad([-1.0, 2.0], 1, device=device).dtype == np.float32
    assert dml.relu_grad([[-1, 2]], [[5, 5]], device=device).tolist() == [[0, 5]]
    with pytest.raises(dml.InvalidArgumentError, match=r"x \[1099511627776\] does not fit .* beyond int32"):
        dml.relu([2**40], device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"^x cannot be converted to a NumPy array: .*inhomogeneous"):
        dml.relu([[1], [2, 3]], device=device)


def test_a_number_past_the_arrays_type_is_refused_not_made_infinite_or_wrapped(device):
    """A finite Python float past the largest finite value of the dtype it takes would round to
    an infinity (NumPy warns and goes on); an int past the range would wrap on the device
    arrays' path. Both are refused by name, on host and device arrays alike; an infinity
    given as such stays one."""
    half = np.array([1.0, 2.0], np.float16)
    for given in (half, dml.asarray(half, device=device)):
        with pytest.raises(dml.InvalidArgumentError, match=r"b 100000\.0 does not fit the arrays' dtype float16: "
                                                           r"100000\.0 is beyond float16's largest finite value"):
            dml.add(given, 1e5, device=device)
        got = dml.add(given, [float("inf"), 6e4], device=device)
        assert np.array_equal(np.asarray(got), np.array([np.inf, 6e4], np.float16))
    with pytest.raises(dml.InvalidArgumentError, match=r"x \[1e\+300\] does not fit .* beyond float32's largest"):
        dml.relu([1e300], device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"b 300 does not fit the arrays' dtype int8"):
        dml.add(dml.asarray(np.array([1], np.int8), device=device), 300)


def test_a_fraction_beside_integer_arrays_is_refused_not_truncated(device):
    """A Python float takes an integer array's dtype only where it is a whole number: NumPy's
    conversion would make `x < 0.5` compare with 0 and `x + 0.5` add 0, silently. NaN and
    the infinities are no integers either; 2.0 is 2."""
    ints = np.array([0, 1, 2], np.int32)
    for given in (ints, dml.asarray(ints, device=device)):
        for function, other in ((dml.add, 0.5), (dml.less, [0, 0.5, 1]), (dml.maximum, float("nan")),
                                (dml.subtract, float("-inf"))):
            with pytest.raises(dml.InvalidArgumentError, match=r"does not fit the arrays' dtype int32: int32 holds "
                                                               r"whole numbers only.*a\.astype\(np\.float32\)"):
                function(given, other, device=device)
        assert np.asarray(dml.add(given, 2.0, device=device)).tolist() == [2, 3, 4]
    with pytest.raises(dml.InvalidArgumentError, match=r"^b 0\.5 does not fit the arrays' dtype uint8"):
        _ = dml.asarray(np.arange(3, dtype=np.uint8), device=device) < 0.5


def test_prelu_grad_writes_numpys_multi_output_form(device):
    x = np.array([[-2.0, 1.0, -1.0], [3.0, -4.0, 0.5]], np.float32)
    slope, dy = np.array([0.5, 0.25, 2.0], np.float32), np.ones((2, 3), np.float32)
    dx, dslope = np.full((2, 3), np.nan, np.float32), np.full(3, np.nan, np.float32)
    returned = dml.prelu_grad(x, slope, dy, out=(dx, dslope), device=device)
    assert returned[0] is dx and returned[1] is dslope
    assert dx.tolist() == [[0.5, 1.0, 2.0], [1.0, 0.25, 1.0]] and dslope.tolist() == [-2.0, -4.0, -1.0]


@pytest.mark.parametrize("out, message", [
    (np.empty((2, 3), np.float32), r"out must be a tuple \(dx, dslope\)"),
    ((np.empty((2, 3), np.float32),), r"out must be a tuple \(dx, dslope\)"),
    ((np.empty((2, 3), np.float32), np.empty(4, np.float32)), r"out\[1\] \(dslope\) has shape \(4,\)"),
    ((np.empty((2, 3), np.float16), np.empty(3, np.float32)), r"out\[0\] \(dx\) has shape \(2, 3\) and dtype float16"),
    ((np.empty((2, 3), np.float32), [0, 0, 0]), r"out\[1\] \(dslope\) must be a NumPy array, not list"),
])
def test_prelu_grad_refuses_a_wrong_out(device, out, message):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.prelu_grad(x, np.ones(3, np.float32), x, out=out, device=device)


def test_prelu_grad_refuses_outputs_that_share_memory(device):
    memory = np.empty(9, np.float32)
    x = np.ones((2, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match="share memory"):
        dml.prelu_grad(x, np.ones(3, np.float32), x, out=(memory[:6].reshape(2, 3), memory[5:8]), device=device)


@pytest.mark.parametrize("value", [[1, 2, 3], 7, 2.5, (1.0,)])
def test_buffer_write_refuses_values_without_a_dtype(device, value):
    buffer = device.create_buffer(64)
    with pytest.raises(dml.InvalidArgumentError, match=r"a buffer has no data type, so pass np.asarray"):
        buffer.write(value)


def test_reprs_are_short_and_say_what_the_object_is(device):
    x = dml.BufferTensorDesc(dml.TensorDataType.FLOAT16, (2, 3))
    strided = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (2, 3), (1, 2), total_tensor_size_in_bytes=64)
    desc = dml.ActivationEluGradOperatorDesc(x, x, x, alpha=0.5)
    compiled = device.compile_operator(device.create_operator(desc))
    buffers = [device.create_buffer(12) for _ in range(3)]
    table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
    commands = device.create_command_list()
    commands.record_dispatch(table)
    commands.close()
    expected = [
        (x, "BufferTensorDesc(FLOAT16, (2, 3))"),
        (strided, "BufferTensorDesc(FLOAT32, (2, 3), strides=(1, 2), total_tensor_size_in_bytes=64)"),
        (desc, "ActivationEluGradOperatorDesc(input_tensor=BufferTensorDesc(FLOAT16, (2, 3)), input_gradient_tensor="
              "BufferTensorDesc(FLOAT16, (2, 3)), output_gradient_tensor=BufferTensorDesc(FLOAT16, (2, 3)), "
              "alpha=0.5, use_dst=False)"),
        (compiled, "<dmlpy.CompiledOperator ACTIVATION_ELU_GRAD FLOAT16 (2, 3), path packed, "
                   "stages main+tail>"),
        (device.create_operator(desc), "<dmlpy.Operator ACTIVATION_ELU_GRAD FLOAT16 (2, 3)>"),
        (buffers[0], "<dmlpy.Buffer 12 bytes>"),
        (table, "<dmlpy.BindingTable ACTIVATION_ELU_GRAD 3 bindings>"),
        (commands, "<dmlpy.CommandList 1 dispatches, 0 barriers, closed>"),
    ]
    for thing, text in expected:
        assert repr(thing) == text
    assert repr(device).startswith("<dmlpy.Device ") and len(repr(device)) < 200
    # The repr reads back as the same desc, given the data types' names.
    assert eval(repr(strided), {"BufferTensorDesc": dml.BufferTensorDesc, **dml.TensorDataType.__members__}) == strided


def test_the_version_is_the_distributions():
    from importlib.metadata import version
    assert dml.__version__ == version("dmlpy")
