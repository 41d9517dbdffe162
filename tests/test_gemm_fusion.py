"""GEMM in graphs and device-array chains: an optional input left out (no edge, None), and the
element-wise chain that alone reads a product fused into its store, with the bits of the
operators run one by one (the NumPy front ends, which never fuse)."""

import numpy as np
import pytest
from test_graph import bits, run_graph

import dmlpy as dml

T = dml.TensorDataType
RNG = np.random.default_rng(31)


def desc(shape, data_type=T.FLOAT32, strides=None):
    return dml.BufferTensorDesc(data_type, shape, strides)


def values(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def test_a_bias_add_and_activation_after_a_product_are_one_kernel_with_the_unfused_bits(device):
    a, b, bias = values((9, 13)), values((13, 6)), values((6,))
    builder = dml.GraphBuilder(device)
    x, w, row = builder.input(desc((9, 13))), builder.input(desc((13, 6))), builder.input(desc((9, 6), strides=(0, 1)))
    y = dml.graph.relu(dml.graph.add(dml.graph.gemm(x, w), row))
    compiled = builder.build([y])
    assert len(compiled.kernels) == 1 and compiled.kernels[0].plan.path == "matmul"
    (fused,) = run_graph(device, compiled, [a, b, bias])
    apart = dml.relu(dml.add(dml.gemm(a, b, device=device), bias, device=device), device=device)
    assert np.array_equal(bits(fused.reshape(9, 6)), bits(apart))


def test_a_product_read_twice_by_its_epilogue_is_one_kernel(device, monkeypatch):
    """A leaky ReLU written out, where(y > 0, y, 0.01 * y), on device arrays: the product is read
    three times by the chain that ends it, and the chain is its store's epilogue."""
    a, b = values((9, 13)), values((13, 6))
    compiled = []
    original = dml.Device.compile_graph
    monkeypatch.setattr(dml.Device, "compile_graph",
                        lambda self, graph, flags=0: compiled.append(original(self, graph, flags)) or compiled[-1])
    y = dml.asarray(a, device=device) @ dml.asarray(b, device=device)
    got = dml.where(y > 0.0, y, y * 0.01).numpy()
    assert len(compiled[-1].kernels) == 1 and compiled[-1].kernels[0].plan.path == "matmul"
    ys = dml.matmul(a, b, device=device)
    assert np.array_equal(bits(got), bits(dml.where(dml.greater(ys, 0.0), ys, dml.multiply(ys, 0.01))))


@pytest.mark.parametrize("extra", [7, 8])
def test_an_epilogue_takes_seven_more_tensors_and_splits_past_them(device, extra):
    """y = ((x·w) * t1 + t2) * t3 + ...: the sum and seven outside tensors are the eight inputs
    an element-wise kernel takes, so the chain is the product's epilogue; an eighth leaves
    the chain's last node to a kernel of its own. The bits are the operators' one by one."""
    a, b = values((6, 5)), values((5, 4))
    tensors = [values((6, 4)) for _ in range(extra)]
    builder = dml.GraphBuilder(device)
    x, w = builder.input(desc((6, 5))), builder.input(desc((5, 4)))
    others = [builder.input(desc((6, 4))) for _ in range(extra)]
    y, expected = dml.graph.gemm(x, w), dml.gemm(a, b, device=device)
    for k, (node, array) in enumerate(zip(others, tensors)):
        combine, reference = (dml.graph.multiply, dml.multiply) if k % 2 == 0 else (dml.graph.add, dml.add)
        y, expected = combine(y, node), reference(expected, array, device=device)
    compiled = builder.build([y])
    assert [len(k.nodes) for k in compiled.kernels] == ([extra + 1] if extra <= 7 else [extra, 1])
    (fused,) = run_graph(device, compiled, [a, b, *tensors])
    assert np.array_equal(bits(fused.reshape(6, 4)), bits(expected))


def test_c_a_fused_activation_a_cast_and_a_residual_fuse_into_one_store(device):
    a, b, c, residual = values((2, 5, 7)), values((2, 7, 4)), values((2, 5, 4)), values((2, 5, 4)).astype(np.float16)
    builder = dml.GraphBuilder(device)
    x, w, bias, skip = (builder.input(desc(v.shape, dml.TensorDataType.FLOAT16 if v.dtype == np.float16 else T.FLOAT32))
                        for v in (a, b, c, residual))
    leaky = dml.ActivationLeakyReluOperatorDesc(None, None, alpha=0.125)
    product = dml.graph.gemm(x, w, bias, beta=0.5, alpha=2.0, fused_activation=leaky)
    y = dml.graph.add(dml.graph.cast(product, np.float16), skip)
    compiled = builder.build([y])
    assert len(compiled.kernels) == 1
    (fused,) = run_graph(device, compiled, [a, b, c, residual])
    alone = dml.gemm(a, b, c, alpha=2.0, beta=0.5, fused_activation=leaky, device=device)
    apart = dml.add(dml.cast(alone, np.float16, device=device), residual, device=device)
    assert np.array_equal(bits(fused.reshape(apart.shape)), bits(apart))


def test_a_product_read_twice_or_kept_as_an_output_is_stored_and_still_right(device):
    a, b = values((4, 6)), values((6, 3))
    builder = dml.GraphBuilder(device)
    x, w = builder.input(desc((4, 6))), builder.input(desc((6, 3)))
    product = dml.graph.gemm(x, w)
    y = dml.graph.tanh(product)
    compiled = builder.build([product, y])  # the product is a graph output: not absorbed
    assert len(compiled.kernels) == 2
    kept, fused = run_graph(device, compiled, [a, b])
    alone = dml.gemm(a, b, device=device)
    assert np.array_equal(bits(kept.reshape(4, 3)), bits(alone))
    assert np.array_equal(bits(fused.reshape(4, 3)), bits(dml.tanh(alone, device=device)))


def test_two_products_meeting_in_an_add_take_one_each_and_a_reduction_takes_none(device):
    a, b, c, d = values((3, 5)), values((5, 4)), values((3, 2)), values((2, 4))
    builder = dml.GraphBuilder(device)
    inputs = [builder.input(desc(v.shape)) for v in (a, b, c, d)]
    total = dml.graph.add(dml.graph.gemm(inputs[0], inputs[1]), dml.graph.gemm(inputs[2], inputs[3]))
    compiled = builder.build([total])
    assert len(compiled.kernels) == 2
    (fused,) = run_graph(device, compiled, inputs=[a, b, c, d])
    apart = dml.add(dml.gemm(a, b, device=device), dml.gemm(c, d, device=device), device=device)
    assert np.array_equal(bits(fused.reshape(3, 4)), bits(apart))
    builder = dml.GraphBuilder(device)
    x, w = builder.input(desc((3, 5))), builder.input(desc((5, 4)))
    summed = dml.graph.reduce(dml.graph.gemm(x, w), function="SUM", axes=(1,))
    compiled = builder.build([summed])
    assert len(compiled.kernels) == 2
    (reduced,) = run_graph(device, compiled, [a, b])
    assert np.array_equal(bits(reduced), bits(dml.reduce(dml.gemm(a, b, device=device), "SUM", 1,
                                                         device=device).reshape(-1)))


def test_device_array_chains_end_in_the_product_s_store(device):
    a, b, bias = values((7, 9)), values((9, 5)), values((5,))
    x, w, row = (dml.asarray(v, device) for v in (a, b, bias))
    y = dml.relu(x @ w + row)
    assert np.array_equal(bits(y.numpy()), bits(dml.relu(dml.gemm(a, b, device=device) + bias, device=device)))
    scaled = (x * 2.0) @ w  # a deferred operand is computed first, as its own kernel
    assert np.array_equal(bits(scaled.numpy()), bits(dml.matmul(a * np.float32(2), b, device=device)))
    assert isinstance(a @ w, dml.DeviceArray) and np.array_equal((a @ w).numpy(), dml.matmul(a, b, device=device))


def test_an_input_left_out_takes_no_edge_and_none_in_the_builder(device):
    gemm = dml.GemmOperatorDesc(desc((2, 3)), desc((3, 4)), None, desc((2, 4)))
    edges = dict(input_count=2, output_count=1, nodes=[gemm],
                 input_edges=[dml.GraphInputEdge(0, 0, 0), dml.GraphInputEdge(1, 0, 1)],
                 output_edges=[dml.GraphOutputEdge(0, 0, 0)])
    dml.GraphDesc(**edges)
    with pytest.raises(dml.InvalidArgumentError, match=r"node 0 \(GEMM\) input 2 \(CTensor\) is None in the node's "
                                                       r"desc: an input it leaves out takes no edge"):
        dml.GraphDesc(**{**edges, "input_edges": [*edges["input_edges"], dml.GraphInputEdge(0, 0, 2)]})
    builder = dml.GraphBuilder(device)
    x, w = builder.input(desc((2, 3))), builder.input(desc((3, 4)))
    builder.add(gemm, [x, w, None])
    with pytest.raises(dml.InvalidArgumentError, match=r"sources\[2\] is a GraphValue but the desc's c_tensor is None"):
        builder.add(gemm, [x, w, x])
    with_c = dml.GemmOperatorDesc(desc((2, 3)), desc((3, 4)), desc((2, 4)), desc((2, 4)))
    with pytest.raises(dml.InvalidArgumentError, match=r"sources\[2\] is None but GEMM's CTensor is in the desc"):
        builder.add(with_c, [x, w, None])


def test_binding_a_buffer_for_a_left_out_input_is_refused(device):
    gemm = dml.GemmOperatorDesc(desc((2, 3)), desc((3, 4)), None, desc((2, 4)))
    compiled = device.compile_operator(device.create_operator(gemm))
    buffers = [device.create_buffer(64) for _ in range(4)]
    size = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(size) if size else None
    with pytest.raises(dml.InvalidArgumentError, match=r"inputs\[2\] \(CTensor\) is Buffer: the operator's desc "
                                                       r"leaves this optional tensor out"):
        device.create_binding_table(compiled, buffers[:3], buffers[3:], temporary)
    device.create_binding_table(compiled, [*buffers[:2], None], buffers[3:], temporary)
