"""InfiniCore's lifecycle over dmlpy: status codes instead of exceptions, same operators."""

import numpy as np
import pytest
from reference import REFERENCES_F64, REFERENCES_F64_APPROXIMATE, hard_sigmoid_grad, prelu_grad, relu_grad, ulp_error

import dmlpy as dml
from dmlpy import infiniop as op
from dmlpy.infiniop import InfiniDtype, InfiniStatus


@pytest.fixture
def handle(device):
    status, handle = op.infiniopCreateHandle(device)
    assert status == InfiniStatus.SUCCESS
    yield handle
    op.infiniopDestroyHandle(handle)


def padded(nbytes):
    """Tensor sizes round up to whole 32-bit words (calc_buffer_tensor_size)."""
    return max(16, (nbytes + 3) // 4 * 4)


def tensor(shape, dtype=InfiniDtype.F32, strides=None):
    status, descriptor = op.infiniopCreateTensorDescriptor(shape, strides, dtype)
    assert status == InfiniStatus.SUCCESS, op.last_error()
    return descriptor


def upload(device, array):
    buffer = device.create_buffer(padded(array.nbytes))
    buffer.write(array)
    return buffer


def test_enums_carry_infinicore_values():
    assert [InfiniStatus.SUCCESS, InfiniStatus.BAD_PARAM, InfiniStatus.NULL_POINTER, InfiniStatus.BAD_TENSOR_DTYPE,
            InfiniStatus.BAD_TENSOR_SHAPE, InfiniStatus.BAD_TENSOR_STRIDES,
            InfiniStatus.INSUFFICIENT_WORKSPACE] == [0, 3, 4, 10, 11, 12, 13]
    assert (InfiniDtype.F16, InfiniDtype.F32, InfiniDtype.BF16) == (12, 13, 19)


@pytest.mark.parametrize("dtype, numpy_dtype", [(InfiniDtype.F32, np.float32), (InfiniDtype.F16, np.float16)])
@pytest.mark.parametrize("in_place", [False, True])
def test_relu_backward_lifecycle(device, handle, dtype, numpy_dtype, in_place):
    rng = np.random.default_rng(0)
    x, dy = (rng.standard_normal((3, 5)).astype(numpy_dtype) for _ in range(2))
    t = tensor((3, 5), dtype)
    status, descriptor = op.infiniopCreateReluBackwardDescriptor(handle, t, t, t)
    assert status == InfiniStatus.SUCCESS
    assert op.infiniopGetReluBackwardWorkspaceSize(descriptor) == (InfiniStatus.SUCCESS, 0)
    input_buffer, grad_output = upload(device, x), upload(device, dy)
    grad_input = grad_output if in_place else device.create_buffer(padded(x.nbytes))
    assert op.infiniopReluBackward(descriptor, None, 0, grad_input, input_buffer, grad_output, None) == 0
    assert np.array_equal(grad_input.read(numpy_dtype, 15).reshape(3, 5), relu_grad(x, dy))
    assert op.infiniopDestroyReluBackwardDescriptor(descriptor) == InfiniStatus.SUCCESS


def test_sigmoid_backward_lifecycle(device, handle):
    """InfiniCore's SigmoidBackward: (grad_input, input, grad_output), dmlpy's SIGMOID gradient."""
    rng = np.random.default_rng(4)
    x, dy = (rng.standard_normal((4, 6)).astype(np.float32) * 4 for _ in range(2))
    t = tensor((4, 6))
    status, descriptor = op.infiniopCreateSigmoidBackwardDescriptor(handle, t, t, t)
    assert status == InfiniStatus.SUCCESS
    assert op.infiniopGetSigmoidBackwardWorkspaceSize(descriptor) == (InfiniStatus.SUCCESS, 0)
    grad_input = device.create_buffer(x.nbytes)
    assert op.infiniopSigmoidBackward(descriptor, None, 0, grad_input, upload(device, x), upload(device, dy),
                                      None) == InfiniStatus.SUCCESS
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    assert np.allclose(grad_input.read(np.float32, x.size).reshape(x.shape), dy * s * (1 - s), rtol=1e-6, atol=0)
    assert op.infiniopDestroySigmoidBackwardDescriptor(descriptor) == InfiniStatus.SUCCESS


@pytest.mark.parametrize("options, reference", [({}, REFERENCES_F64_APPROXIMATE["gelu_grad", "tanh"]),
                                                 ({"approximate": "none"}, REFERENCES_F64["gelu_grad"])])
def test_gelu_backward_is_infinicores_tanh_form_unless_asked(device, handle, options, reference):
    """InfiniCore's GeluBackward is the tanh approximation; approximate="none" is DirectML's erf GELU."""
    rng = np.random.default_rng(5)
    x, dy = (rng.standard_normal((4, 6)).astype(np.float32) * 3 for _ in range(2))
    t = tensor((4, 6))
    status, descriptor = op.infiniopCreateGeluBackwardDescriptor(handle, t, t, t, **options)
    assert status == InfiniStatus.SUCCESS, op.last_error()
    grad_input = device.create_buffer(x.nbytes)
    assert op.infiniopGeluBackward(descriptor, None, 0, grad_input, upload(device, x), upload(device, dy)) == 0
    got = grad_input.read(np.float32, x.size).reshape(x.shape)
    assert ulp_error(got, reference(x, dy), np.float32, np.abs(dy.astype(np.float64)) / 8).max() <= 12
    other = REFERENCES_F64["gelu_grad"] if not options else REFERENCES_F64_APPROXIMATE["gelu_grad", "tanh"]
    assert ulp_error(got, other(x, dy), np.float32).max() > 100  # the two forms differ by far more


@pytest.mark.parametrize("options, message", [({"approximate": "erf"}, "must be one of 'none', 'tanh'"),
                                              ({"approximation": "none"}, "unknown option approximation")])
def test_gelu_backward_bad_options_are_bad_params(handle, options, message):
    t = tensor((4,))
    status, descriptor = op.infiniopCreateGeluBackwardDescriptor(handle, t, t, t, **options)
    assert status == InfiniStatus.BAD_PARAM and descriptor is None
    assert message in op.last_error()


def test_strided_tensors(device, handle):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    dy = np.ones((6, 4), np.float32)
    t_x, t_dy, t_out = tensor((4, 6)), tensor((4, 6), strides=(1, 4)), tensor((4, 6))
    status, descriptor = op.infiniopCreateReluBackwardDescriptor(handle, t_out, t_x, t_dy)
    assert status == InfiniStatus.SUCCESS
    out = device.create_buffer(96)
    assert op.infiniopReluBackward(descriptor, None, 0, out, upload(device, x), upload(device, dy), None) == 0
    assert np.array_equal(out.read(np.float32, 24).reshape(4, 6), relu_grad(x, dy.T))


def test_hard_sigmoid_backward(device, handle):
    x = np.linspace(-4, 4, 16, dtype=np.float32)
    dy = np.full(16, 2.0, np.float32)
    t = tensor((16,))
    status, descriptor = op.infiniopCreateHardSigmoidBackwardDescriptor(handle, t, t, t, 0.2, 0.5)
    assert status == InfiniStatus.SUCCESS
    out = device.create_buffer(64)
    assert op.infiniopHardSigmoidBackward(descriptor, None, 0, out, upload(device, x), upload(device, dy)) == 0
    assert np.array_equal(out.read(np.float32, 16), hard_sigmoid_grad(x, dy, 0.2, 0.5))
    status, _ = op.infiniopCreateHardSigmoidBackwardDescriptor(handle, t, t, t, float("nan"), 0.5)
    assert status == InfiniStatus.BAD_PARAM and "alpha" in op.last_error()


def test_prelu_backward_needs_its_workspace(device, handle):
    rng = np.random.default_rng(2)
    x, dy = (rng.standard_normal((300, 4)).astype(np.float32) for _ in range(2))
    slope = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    t_x, t_slope, t_grad_slope = tensor((300, 4)), tensor((300, 4), strides=(0, 1)), tensor((1, 4))
    status, descriptor = op.infiniopCreatePReluBackwardDescriptor(handle, t_x, t_grad_slope, t_x, t_slope, t_x)
    assert status == InfiniStatus.SUCCESS
    status, size = op.infiniopGetPReluBackwardWorkspaceSize(descriptor)
    assert status == InfiniStatus.SUCCESS and size == 4 * 4  # a total per channel
    grad_input, grad_slope = device.create_buffer(x.nbytes), device.create_buffer(16)
    workspace = device.create_buffer(64)
    data = (grad_input, grad_slope, upload(device, x), upload(device, slope), upload(device, dy))
    assert op.infiniopPReluBackward(descriptor, workspace, size - 4, *data, None) == InfiniStatus.INSUFFICIENT_WORKSPACE
    assert op.infiniopPReluBackward(descriptor, None, size, *data, None) == InfiniStatus.NULL_POINTER
    assert op.infiniopPReluBackward(descriptor, workspace, size, *data, None) == InfiniStatus.SUCCESS
    expected_dx, exact, _ = prelu_grad(x, np.broadcast_to(slope, x.shape), dy, (0,))
    assert np.array_equal(grad_input.read(np.float32, x.size).reshape(x.shape), expected_dx)
    assert np.allclose(grad_slope.read(np.float32, 4), exact.ravel(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [InfiniDtype.U8, InfiniDtype.F64, InfiniDtype.C64, 99])
def test_bad_dtypes(handle, dtype):
    status, descriptor = op.infiniopCreateTensorDescriptor((2, 3), None, dtype)
    if status == InfiniStatus.SUCCESS:
        status, descriptor = op.infiniopCreateReluBackwardDescriptor(handle, descriptor, descriptor, descriptor)
    assert status == InfiniStatus.BAD_TENSOR_DTYPE and descriptor is None


def test_bad_shapes_and_strides(handle):
    a, b = tensor((2, 3)), tensor((3, 2))
    assert op.infiniopCreateReluBackwardDescriptor(handle, a, b, a)[0] == InfiniStatus.BAD_TENSOR_SHAPE
    assert op.infiniopCreateReluBackwardDescriptor(handle, a, tensor((2, 3, 1)), a)[0] == InfiniStatus.BAD_TENSOR_SHAPE
    assert op.infiniopCreateTensorDescriptor((2, 3), (-3, 1), InfiniDtype.F32)[0] == InfiniStatus.BAD_TENSOR_STRIDES
    overlapping = tensor((2, 3), strides=(0, 1))
    assert op.infiniopCreateReluBackwardDescriptor(handle, overlapping, a, a)[0] == InfiniStatus.BAD_TENSOR_STRIDES
    assert op.infiniopCreateTensorDescriptor((2, 0), None, InfiniDtype.F32)[0] == InfiniStatus.BAD_TENSOR_SHAPE


def test_null_pointers_and_use_after_destroy(device, handle):
    t = tensor((4,))
    assert op.infiniopCreateReluBackwardDescriptor(None, t, t, t) == (InfiniStatus.NULL_POINTER, None)
    assert op.infiniopCreateReluBackwardDescriptor(handle, t, None, t)[0] == InfiniStatus.NULL_POINTER
    assert op.infiniopCreateTensorDescriptor(None, None, InfiniDtype.F32)[0] == InfiniStatus.NULL_POINTER
    status, descriptor = op.infiniopCreateReluBackwardDescriptor(handle, t, t, t)
    buffer = device.create_buffer(16)
    assert op.infiniopReluBackward(descriptor, None, 0, None, buffer, buffer, None) == InfiniStatus.NULL_POINTER
    assert op.infiniopReluBackward(None, None, 0, buffer, buffer, buffer, None) == InfiniStatus.NULL_POINTER
    other = device.create_buffer(16)
    assert op.infiniopReluBackward(descriptor, None, 0, buffer, buffer, other) == InfiniStatus.SUCCESS
    assert op.infiniopDestroyReluBackwardDescriptor(descriptor) == InfiniStatus.SUCCESS
    for use in (lambda: op.infiniopReluBackward(descriptor, None, 0, buffer, buffer, buffer, None),
                lambda: op.infiniopGetReluBackwardWorkspaceSize(descriptor)[0],
                lambda: op.infiniopDestroyReluBackwardDescriptor(descriptor)):
        assert use() == InfiniStatus.BAD_PARAM and "after it was destroyed" in op.last_error()
    assert op.infiniopDestroyTensorDescriptor(t) == InfiniStatus.SUCCESS
    assert op.infiniopCreateReluBackwardDescriptor(handle, t, t, t)[0] == InfiniStatus.BAD_PARAM


def test_partial_overlap_and_foreign_arguments_are_bad_params(device, handle):
    t = tensor((8,))
    _, descriptor = op.infiniopCreateReluBackwardDescriptor(handle, t, t, t)
    shared = device.create_buffer(64)
    partial = dml.BufferBinding(shared, 16)
    assert op.infiniopReluBackward(descriptor, None, 0, partial, shared, device.create_buffer(32)) == \
        InfiniStatus.BAD_PARAM
    assert "partially overlaps" in op.last_error()
    assert op.infiniopReluBackward(descriptor, None, 0, "pointer", shared, shared) == InfiniStatus.BAD_PARAM
    assert op.infiniopCreateReluBackwardDescriptor(handle, t, t) == (InfiniStatus.BAD_PARAM, None)


def test_own_handle_closes_its_device():
    status, handle = op.infiniopCreateHandle()
    assert status == InfiniStatus.SUCCESS and handle.owns_device
    assert op.infiniopDestroyHandle(handle) == InfiniStatus.SUCCESS
    assert handle.device.closed
    assert op.infiniopDestroyHandle(handle) == InfiniStatus.BAD_PARAM
