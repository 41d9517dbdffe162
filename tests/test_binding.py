"""Buffers and binding tables: DirectML's binding rules, checked before anything runs."""

import numpy as np
import pytest

import dmlpy as dml

T = dml.TensorDataType


def relu_grad(device, data_type=T.FLOAT32, sizes=(2, 3), strides=(None, None, None), alignment=0):
    tensors = [dml.BufferTensorDesc(data_type, sizes, s, guaranteed_base_offset_alignment=alignment) for s in strides]
    desc = dml.ActivationReluGradOperatorDesc(*tensors)
    return device.compile_operator(device.create_operator(desc))


def filled(device, size, value=0xA5):
    buffer = device.create_buffer(size)
    buffer.write(np.full(size, value, np.uint8))
    return buffer


def assert_rejected_untouched(device, compiled, inputs, outputs, error_class, message):
    """The binding is refused with `error_class`, and no output byte changed."""
    before = [b.read(np.uint8, b.size_in_bytes) for b in _buffers(outputs)]
    with pytest.raises(error_class) as error:
        table = device.create_binding_table(compiled, inputs=inputs, outputs=outputs)
        device.execute(table)
    assert message in str(error.value)
    after = [b.read(np.uint8, b.size_in_bytes) for b in _buffers(outputs)]
    assert all(np.array_equal(x, y) for x, y in zip(before, after))
    return error.value


def _buffers(items):
    buffers = [item.buffer if isinstance(item, dml.BufferBinding) else item for item in items]
    return [buffer for buffer in buffers if isinstance(buffer, dml.Buffer)]


def test_buffer_round_trip_with_partial_writes(device):
    buffer = device.create_buffer(37)
    assert np.array_equal(buffer.read(np.uint8, 37), np.zeros(37, np.uint8))
    buffer.write(np.arange(37, dtype=np.uint8))
    buffer.write(b"\xff\xfe", offset=5)
    buffer.write(np.array([7], np.uint16), offset=35)
    expected = np.arange(37, dtype=np.uint8)
    expected[5:7] = [0xFF, 0xFE]
    expected[35:37] = [7, 0]
    assert np.array_equal(buffer.read(np.uint8, 37), expected)
    assert buffer.read(T.FLOAT16, 2, offset=4).dtype == np.float16


@pytest.mark.parametrize("call, message", [
    (lambda b: b.write(np.zeros(9, np.uint8)), "ends past the buffer's 8 bytes"),
    (lambda b: b.write(np.zeros(2, np.uint8), offset=7), "ends past the buffer's 8 bytes"),
    (lambda b: b.write(np.zeros(2, np.uint8), offset=-1), "must not be negative"),
    (lambda b: b.read(np.float32, 3), "ends past the buffer's 8 bytes"),
    (lambda b: b.read("not a dtype", 1), "is not a NumPy dtype"),
    (lambda b: b.read(T.UINT4, 1), "has no NumPy equivalent"),
    (lambda b: b.read(np.float32, 1.0), "must be an integer"),
])
def test_buffer_io_errors(device, call, message):
    with pytest.raises(dml.InvalidArgumentError, match=message):
        call(device.create_buffer(8))


@pytest.mark.parametrize("size", [0, -4, 2.5, None])
def test_buffer_size_must_be_positive_integer(device, size):
    with pytest.raises(dml.InvalidArgumentError):
        device.create_buffer(size)


def test_offset_must_be_16_byte_aligned(device):
    compiled = relu_grad(device)
    good, big = filled(device, 24), filled(device, 64)
    assert_rejected_untouched(device, compiled, [good, good], [dml.BufferBinding(big, 8)],
                              dml.InvalidArgumentError, "offset 8 is not a multiple of 16")


def test_guaranteed_alignment_raises_the_offset_rule(device):
    compiled = relu_grad(device, alignment=64)
    x, big = filled(device, 24), filled(device, 256)
    assert_rejected_untouched(device, compiled, [x, x], [dml.BufferBinding(big, 16)],
                              dml.InvalidArgumentError, "offset 16 is not a multiple of 64")
    device.create_binding_table(compiled, inputs=[x, x], outputs=[dml.BufferBinding(big, 64)])


@pytest.mark.parametrize("binding, message", [
    (lambda b: dml.BufferBinding(b, 0, 20),
     "size_in_bytes 20 is smaller than the tensor's total_tensor_size_in_bytes 24"),
    (lambda b: dml.BufferBinding(b, 32), "size_in_bytes 16 is smaller"),
    (lambda b: dml.BufferBinding(b, 64), "is past the end of the 48-byte buffer"),
    (lambda b: dml.BufferBinding(b, 16, 40), "ends past the buffer's 48 bytes"),
    (lambda b: dml.BufferBinding(b, -16), "must not be negative"),
    (lambda b: None, "is None: this tensor is required"),
    (lambda b: "buffer", "must be a Buffer or a BufferBinding, not str"),
    (lambda b: dml.BufferBinding("buffer"), ".buffer must be a Buffer, not str"),
])
def test_output_binding_range_rules(device, binding, message):
    compiled = relu_grad(device)
    x, out = filled(device, 24), filled(device, 48)
    error = assert_rejected_untouched(device, compiled, [x, x], [binding(out)], dml.InvalidArgumentError, message)
    assert "outputs[0] (OutputGradientTensor)" in str(error) and error.hresult == 0x80070057


def test_a_small_input_buffer_is_rejected(device):
    compiled = relu_grad(device)
    small, out = filled(device, 20), filled(device, 24)
    assert_rejected_untouched(device, compiled, [small, out], [filled(device, 24)], dml.InvalidArgumentError,
                              "inputs[0] (InputTensor).size_in_bytes 20 is smaller")


@pytest.mark.parametrize("inputs, outputs, message", [
    (1, 1, "inputs has 1 bindings: ACTIVATION_RELU_GRAD has 2 (InputTensor, InputGradientTensor)"),
    (3, 1, "inputs has 3 bindings"),
    (2, 0, "outputs has 0 bindings"),
    (2, 2, "outputs has 2 bindings"),
])
def test_binding_counts_must_be_exact(device, inputs, outputs, message):
    compiled = relu_grad(device)
    x = filled(device, 24)
    out = [filled(device, 24) for _ in range(outputs)]
    assert_rejected_untouched(device, compiled, [x] * inputs, out, dml.InvalidArgumentError, message)


def test_bindings_must_be_lists(device):
    compiled = relu_grad(device)
    x = filled(device, 24)
    with pytest.raises(dml.InvalidArgumentError, match="inputs must be a list of bindings, not Buffer"):
        device.create_binding_table(compiled, inputs=x, outputs=[x])
    with pytest.raises(dml.InvalidArgumentError, match="temporary must be None, a Buffer or a BufferBinding"):
        device.create_binding_table(compiled, inputs=[x, x], outputs=[filled(device, 24)], temporary=5)


def test_partial_overlap_of_output_and_input_is_rejected(device):
    compiled = relu_grad(device)
    shared, x = filled(device, 64), filled(device, 24)
    assert_rejected_untouched(device, compiled, [x, dml.BufferBinding(shared, 0)], [dml.BufferBinding(shared, 16)],
                              dml.InvalidArgumentError, "partially overlaps inputs[1]")


def test_in_place_needs_the_same_layout(device):
    compiled = relu_grad(device, sizes=(2, 2), strides=(None, None, (1, 2)))
    shared, x = filled(device, 16), filled(device, 16)
    assert_rejected_untouched(device, compiled, [x, shared], [shared], dml.InvalidArgumentError,
                              "their strides differ")


def test_buffers_of_another_device_are_rejected(device):
    compiled = relu_grad(device)
    with dml.create_device() as other:
        foreign = other.create_buffer(24)
        x = filled(device, 24)
        with pytest.raises(dml.InvalidArgumentError, match="buffer of another device"):
            device.create_binding_table(compiled, inputs=[x, foreign], outputs=[filled(device, 24)])


def test_use_after_destroy_and_close():
    device = dml.create_device()
    compiled = relu_grad(device)
    x, out = filled(device, 24), filled(device, 24)
    table = device.create_binding_table(compiled, inputs=[x, x], outputs=[out])
    device.execute(table)
    x.destroy()
    x.destroy()  # destroying twice is harmless
    with pytest.raises(dml.DeviceRemovedError, match="Buffer was destroyed"):
        device.execute(table)
    with pytest.raises(dml.DeviceRemovedError):
        x.read(np.uint8, 4)
    with pytest.raises(dml.DeviceRemovedError):
        device.create_binding_table(compiled, inputs=[x, out], outputs=[filled(device, 24)])
    device.close()
    for use in (lambda: device.execute(table), lambda: out.read(np.uint8, 4), lambda: device.create_buffer(4),
                lambda: relu_grad(device)):
        with pytest.raises(dml.DeviceRemovedError, match="device was closed"):
            use()
    device.close()  # closing twice is harmless
