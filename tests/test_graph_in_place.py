"""Graph outputs bound over graph inputs: legal once every kernel reading the input has run
(any overlap), or exactly in place inside the kernel that reads it where its nodes run element
by element; refused otherwise, naming the outputs, inputs and the rule."""

import numpy as np
import pytest

import dmlpy as dml

T = dml.TensorDataType
ROWS = dml.BufferTensorDesc(T.FLOAT32, (4, 8))
SIZE = ROWS.total_tensor_size_in_bytes


def bits(array):
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


def filled(device, array, size=None):
    buffer = device.create_buffer(size or array.nbytes)
    buffer.write(np.ascontiguousarray(array))
    return buffer


def read(binding, count=32):
    binding = binding if isinstance(binding, dml.BufferBinding) else dml.BufferBinding(binding)
    return binding.buffer.read(np.float32, count, binding.offset)


def execute(device, compiled, inputs, outputs, times=1):
    size = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(size) if size else None
    table = device.create_binding_table(compiled, inputs, outputs, temporary)
    for _ in range(times):
        device.execute(table)


def out_of_place(device, compiled, arrays):
    """Each output's values, every tensor in a buffer of its own."""
    outputs = [device.create_buffer(desc.total_tensor_size_in_bytes) for _, desc in compiled.output_tensors]
    execute(device, compiled, [filled(device, a) for a in arrays], outputs)
    return [read(buffer, desc.element_count) for buffer, (_, desc) in zip(outputs, compiled.output_tensors)]


def refused(device, compiled, inputs, outputs, *words):
    with pytest.raises(dml.InvalidArgumentError) as caught:
        execute(device, compiled, inputs, outputs)
    for word in words:
        assert word in caught.value.message, caught.value.message


def values(seed, shape=(4, 8)):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np.float32)


def relu_then_add(device):
    """y = relu(x) (kernel 0), read by two later kernels: z = y + w and t = tanh(y)."""
    g = dml.GraphBuilder(device)
    x, w = g.input(ROWS), g.input(ROWS)
    y = dml.graph.relu(x)
    compiled = g.build([dml.graph.add(y, w), dml.graph.tanh(y)])
    assert [k.nodes for k in compiled.kernels] == [(0,), (1,), (2,)]
    return compiled


def test_an_output_over_an_input_only_earlier_kernels_read_gives_the_same_bits(device):
    compiled = relu_then_add(device)
    x, w = values(1), values(2)
    z, t = out_of_place(device, compiled, [x, w])
    # z exactly over x, which only kernel 0 reads.
    shared, w_buffer, t_buffer = filled(device, x), filled(device, w), device.create_buffer(SIZE)
    execute(device, compiled, [shared, w_buffer], [shared, t_buffer])
    assert np.array_equal(bits(read(shared)), bits(z)) and np.array_equal(bits(read(t_buffer)), bits(t))
    # Any overlap will do: z 48 bytes into x's range, and t over w (read by kernel 1, before t's kernel 2).
    shared, w_buffer = filled(device, x, SIZE + 48), filled(device, w)
    z_binding = dml.BufferBinding(shared, 48, SIZE)
    execute(device, compiled, [dml.BufferBinding(shared, 0, SIZE), w_buffer], [z_binding, w_buffer])
    assert np.array_equal(bits(read(z_binding)), bits(z)) and np.array_equal(bits(read(w_buffer)), bits(t))


def test_an_output_over_an_input_a_later_kernel_reads_is_refused(device):
    g = dml.GraphBuilder(device)
    x = g.input(ROWS)
    y = dml.graph.relu(x)  # a graph output: kernel 0
    compiled = g.build([y, dml.graph.add(y, x)])  # kernel 1 reads x again
    shared = filled(device, values(3))
    refused(device, compiled, [shared], [shared, device.create_buffer(SIZE)],
            "outputs[0] (graph output 0) is bound over inputs[0] (graph input 0)",
            "kernel 1 reads the input after kernel 0 writes the output")
    partly = dml.BufferBinding(filled(device, values(3), SIZE + 16), 16, SIZE)
    refused(device, compiled, [dml.BufferBinding(partly.buffer, 0, SIZE)], [partly, device.create_buffer(SIZE)],
            "partially overlaps inputs[0] (graph input 0)", "kernel 1 reads the input after kernel 0")


def test_exactly_in_place_inside_one_fused_kernel(device):
    g = dml.GraphBuilder(device)
    x = g.input(ROWS)
    compiled = g.build([dml.graph.tanh(dml.graph.relu(dml.graph.tanh(x)))])
    assert len(compiled.kernels) == 1
    array = values(4)
    (expected,) = out_of_place(device, compiled, [array])
    shared = filled(device, array)
    execute(device, compiled, [shared], [shared])
    assert np.array_equal(bits(read(shared)), bits(expected))
    assert np.array_equal(bits(expected), bits(dml.tanh(dml.relu(dml.tanh(array))).reshape(-1)))

    bigger = filled(device, array, SIZE + 16)
    refused(device, compiled, [dml.BufferBinding(bigger, 0, SIZE)], [dml.BufferBinding(bigger, 16, SIZE)],
            "partially overlaps inputs[0] (graph input 0)", "kernel 0 reads the input as it writes the output")

    g = dml.GraphBuilder(device)
    x = g.input(dml.BufferTensorDesc(T.FLOAT32, (4, 8), (1, 4)))  # column-major: the output is packed
    compiled = g.build([dml.graph.tanh(x)])
    shared = filled(device, array)
    refused(device, compiled, [shared], [shared], "their strides differ", "only exactly in place")


def test_in_place_inside_a_kernel_needs_every_node_to_run_in_place(device):
    g = dml.GraphBuilder(device)
    x = g.input(ROWS)
    compiled = g.build([dml.graph.softmax(dml.graph.tanh(x))])  # tanh is the reduction's prologue
    assert len(compiled.kernels) == 1
    shared = filled(device, values(5))
    refused(device, compiled, [shared], [shared], "outputs[0] (graph output 0) is bound over inputs[0]",
            "its node 1 (ACTIVATION_SOFTMAX) does not run in place")


def test_weights_updated_in_place_over_repeated_executions(device):
    """w' = w + relu(x), relu(x) also an output (its own kernel): w is read only by the kernel
    that writes w', exactly in place; then w' = w * x + x, w read only by an earlier kernel."""
    w, x = values(6), values(7)
    g = dml.GraphBuilder(device)
    w_in, x_in = g.input(ROWS), g.input(ROWS)
    step = dml.graph.relu(x_in)
    compiled = g.build([dml.graph.add(w_in, step), step])
    weights = filled(device, w)
    execute(device, compiled, [weights, filled(device, x)], [weights, device.create_buffer(SIZE)], times=3)
    expected = w.copy()
    for _ in range(3):
        expected = expected + np.maximum(x, np.float32(0))
    assert np.array_equal(bits(read(weights).reshape(4, 8)), bits(expected))

    g = dml.GraphBuilder(device)
    w_in, x_in = g.input(ROWS), g.input(ROWS)
    product = dml.graph.multiply(w_in, x_in)  # a graph output: kernel 0, the only one to read w
    compiled = g.build([dml.graph.add(product, x_in), product])
    weights, products = filled(device, w), device.create_buffer(SIZE)
    execute(device, compiled, [weights, filled(device, x)], [weights, products], times=3)
    expected = w.copy()
    for _ in range(3):
        last_product = expected * x
        expected = last_product + x
    assert np.array_equal(bits(read(weights).reshape(4, 8)), bits(expected))
    assert np.array_equal(bits(read(products).reshape(4, 8)), bits(last_product))


def test_outputs_still_never_overlap_each_other_nor_the_temporary_anything(device):
    compiled = relu_then_add(device)
    x, w = filled(device, values(8)), filled(device, values(9))
    refused(device, compiled, [x, w], [x, x], "outputs[0] (graph output 0) and outputs[1] (graph output 1) overlap")
    g = dml.GraphBuilder(device)
    a = g.input(ROWS)
    compiled = g.build([dml.graph.tanh(dml.graph.softmax(a))])  # the softmax lives in the temporary resource
    size = compiled.binding_properties.temporary_resource_size
    assert size >= SIZE
    shared = filled(device, values(10), size)
    with pytest.raises(dml.InvalidArgumentError, match=r"temporary \[0, \d+\) partially overlaps inputs\[0\]"):
        device.create_binding_table(compiled, [shared], [device.create_buffer(SIZE)], shared)


def test_an_output_in_place_over_an_input_and_read_by_a_later_kernel(device):
    """y = relu(x) is graph output 0, bound exactly over x (its own kernel reads x, element by
    element); kernel 1 reads y from there for y + w, bound over w."""
    g = dml.GraphBuilder(device)
    x_in, w_in = g.input(ROWS), g.input(ROWS)
    y = dml.graph.relu(x_in)
    compiled = g.build([y, dml.graph.add(y, w_in)])
    x, w = values(11), values(12)
    y_expected, z_expected = out_of_place(device, compiled, [x, w])
    xs, ws = filled(device, x), filled(device, w)
    execute(device, compiled, [xs, ws], [xs, ws])
    assert np.array_equal(bits(read(xs)), bits(y_expected)) and np.array_equal(bits(read(ws)), bits(z_expected))
    assert np.array_equal(bits(z_expected), bits((np.maximum(x, np.float32(0)) + w).reshape(-1)))
