"""Graphs: DirectML's CompileGraph validation rules, the builder, and fusion that gives the
same bits as the operators run one by one (through the NumPy front ends, which never fuse)."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlpy as dml
from dmlpy.base.types import data_type_info
from dmlpy.frontends.numpy_api import FRONT_ENDS
from dmlpy.kernels.interface import MAX_ELEMENTWISE_INPUTS
from dmlpy.ops.fusion import MAX_FUSED_NODES
from dmlpy.ops.schema import OPERATORS

T = dml.TensorDataType
F32 = dml.BufferTensorDesc(T.FLOAT32, (8,))


def tanh(desc=F32):
    return dml.ActivationTanhOperatorDesc(desc, desc)


def relu_grad(desc=F32):
    return dml.ActivationReluGradOperatorDesc(desc, desc, desc)


def chain_of_two():
    """x -> tanh -> tanh -> y, as edges."""
    return dict(input_count=1, output_count=1, nodes=[tanh(), tanh()],
                input_edges=[dml.GraphInputEdge(0, 0, 0)], output_edges=[dml.GraphOutputEdge(1, 0, 0)],
                intermediate_edges=[dml.GraphIntermediateEdge(0, 0, 1, 0)])


def with_(**changes):
    return {**chain_of_two(), **changes}


def upload(device, array):
    buffer = device.create_buffer(max(array.nbytes, 4))
    buffer.write(array)
    return buffer


def run_graph(device, compiled, inputs):
    """Bind fresh buffers, execute, and return each graph output's elements (packed descs)."""
    buffers = []
    for array, (_, desc) in zip(inputs, compiled.input_tensors):
        buffers.append(device.create_buffer(desc.total_tensor_size_in_bytes))
        buffers[-1].write(np.ascontiguousarray(array))
    outputs = [device.create_buffer(desc.total_tensor_size_in_bytes) for _, desc in compiled.output_tensors]
    size = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(size) if size else None
    device.execute(device.create_binding_table(compiled, buffers, outputs, temporary))
    return [buffer.read(data_type_info(desc.data_type).numpy_dtype, desc.element_count)
            for buffer, (_, desc) in zip(outputs, compiled.output_tensors)]


def bits(array):
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


def _is_nan(array):
    return np.isnan(array.astype(np.float64)) if np.dtype(array.dtype).kind not in "iu" else np.zeros(array.shape, bool)


# Each rule, broken once: (the GraphDesc's arguments, words the message must contain).
BROKEN = {
    "graph input index out of range": (with_(input_edges=[dml.GraphInputEdge(1, 0, 0)]),
                                       "input_edges[0].graph_input_index 1 is out of range: the graph has 1 inputs"),
    "to_node out of range": (with_(input_edges=[dml.GraphInputEdge(0, 2, 0)]),
                             "input_edges[0].to_node 2 is out of range: the graph has 2 nodes"),
    "node input index out of range": (with_(input_edges=[dml.GraphInputEdge(0, 0, 1)]),
                                      "to_node_input_index 1 is out of range: node 0 (ACTIVATION_TANH) has 1 inputs"),
    "node output index out of range": (with_(output_edges=[dml.GraphOutputEdge(1, 1, 0)]),
                                       "from_node_output_index 1 is out of range"),
    "graph output index out of range": (with_(output_edges=[dml.GraphOutputEdge(1, 0, 1)]),
                                        "graph_output_index 1 is out of range: the graph has 1 outputs"),
    "negative index": (with_(intermediate_edges=[dml.GraphIntermediateEdge(-1, 0, 1, 0)]),
                       "intermediate_edges[0].from_node -1 is out of range"),
    "bool index": (with_(input_edges=[dml.GraphInputEdge(0, False, 0)]), "must be an integer, not a bool"),
    "missing edge": (with_(intermediate_edges=[]), "node 1 (ACTIVATION_TANH) input 0 (InputTensor) has no edge"),
    "duplicate edge": (with_(input_edges=[dml.GraphInputEdge(0, 0, 0), dml.GraphInputEdge(0, 1, 0)]),
                       "intermediate_edges[0]: node 1 input 0 (InputTensor) is already fed by input_edges[1]"),
    "cycle": (dict(input_count=1, output_count=1, nodes=[relu_grad(), tanh(), tanh()],
                   input_edges=[dml.GraphInputEdge(0, 0, 0)], output_edges=[dml.GraphOutputEdge(2, 0, 0)],
                   intermediate_edges=[dml.GraphIntermediateEdge(0, 0, 1, 0), dml.GraphIntermediateEdge(1, 0, 0, 1),
                                       dml.GraphIntermediateEdge(1, 0, 2, 0)]),
              "nodes [0, 1, 2] form a cycle through intermediate_edges [0, 1, 2]"),
    "self loop": (dict(input_count=1, output_count=1, nodes=[relu_grad()], input_edges=[dml.GraphInputEdge(0, 0, 0)],
                       output_edges=[dml.GraphOutputEdge(0, 0, 0)],
                       intermediate_edges=[dml.GraphIntermediateEdge(0, 0, 0, 1)]), "form a cycle"),
    "mismatched intermediate desc": (
        with_(nodes=[tanh(), tanh(dml.BufferTensorDesc(T.FLOAT16, (8,)))]),
        "intermediate_edges[0]: node 0 output 0 (OutputTensor) is BufferTensorDesc(FLOAT32, (8,)) but node 1 "
        "input 0 (InputTensor) is BufferTensorDesc(FLOAT16, (8,))"),
    "intermediate strides differ": (
        with_(nodes=[tanh(), tanh(dml.BufferTensorDesc(T.FLOAT32, (8,), (2,)))]), "the same desc"),
    "graph input descs differ": (
        dict(input_count=1, output_count=2, nodes=[tanh(), tanh(dml.BufferTensorDesc(T.FLOAT32, (4, 2)))],
             input_edges=[dml.GraphInputEdge(0, 0, 0), dml.GraphInputEdge(0, 1, 0)],
             output_edges=[dml.GraphOutputEdge(0, 0, 0), dml.GraphOutputEdge(1, 0, 1)]),
        "input_edges[1]: graph input 0 reaches node 1 input 0 (InputTensor) as BufferTensorDesc(FLOAT32, (4, 2))"),
    "graph output without edge": (with_(output_count=2), "graph output 1 has no edge"),
    "graph output twice": (with_(output_edges=[dml.GraphOutputEdge(1, 0, 0), dml.GraphOutputEdge(0, 0, 0)]),
                           "output_edges[1]: graph output 0 already has output_edges[0]"),
    "node output twice a graph output": (
        with_(output_count=2, output_edges=[dml.GraphOutputEdge(1, 0, 0), dml.GraphOutputEdge(1, 0, 1)]),
        "a node output is at most one graph output"),
    "graph input unused": (with_(input_count=2), "graph input 1 has no edge"),
    "node output unconnected": (with_(output_edges=[dml.GraphOutputEdge(0, 0, 0)]),
                                "node 1 (ACTIVATION_TANH) output 0 (OutputTensor) has no edge"),
    "no nodes": (with_(nodes=[]), "GraphDesc.nodes is empty"),
    "node not an operator": (with_(nodes=[tanh(), "tanh"]), "GraphDesc.nodes[1] must be an Operator or an operator"),
    "edge of the wrong kind": (with_(input_edges=[dml.GraphOutputEdge(0, 0, 0)]),
                               "GraphDesc.input_edges[0] must be a GraphInputEdge, not GraphOutputEdge"),
    "edges not a list": (with_(input_edges=dml.GraphInputEdge(0, 0, 0)), "GraphDesc.input_edges must be a list"),
    "input count zero": (with_(input_count=0), "GraphDesc.input_count 0 must be an integer of at least 1"),
    "output count not an int": (with_(output_count=1.0), "GraphDesc.output_count 1.0 must be an integer"),
}


@pytest.mark.parametrize("rule", BROKEN)
def test_graph_desc_refuses_each_broken_rule_naming_node_and_edge(rule):
    arguments, words = BROKEN[rule]
    with pytest.raises(dml.InvalidArgumentError) as caught:
        dml.GraphDesc(**arguments)
    assert words in caught.value.message
    assert caught.value.hresult == 0x80070057


def test_compile_graph_checks_nodes_against_the_device(device, device_at):
    old = device_at(dml.FeatureLevel.LEVEL_2_0)
    graph = dml.GraphDesc(**chain_of_two())
    with pytest.raises(dml.UnsupportedError, match=r"GraphDesc.nodes\[0\] \(ACTIVATION_TANH\): .*FEATURE_LEVEL_3_0"):
        old.compile_graph(dml.GraphDesc(**with_(nodes=[tanh(dml.BufferTensorDesc(T.FLOAT32, (2, 2, 2))),
                                                       tanh(dml.BufferTensorDesc(T.FLOAT32, (2, 2, 2)))])))
    foreign = old.create_operator(tanh(dml.BufferTensorDesc(T.FLOAT32, (2, 2, 1, 2))))
    mixed = dml.GraphDesc(**with_(nodes=[foreign, tanh(dml.BufferTensorDesc(T.FLOAT32, (2, 2, 1, 2)))]))
    with pytest.raises(dml.InvalidArgumentError, match=r"nodes\[0\] is an operator of another device"):
        device.compile_graph(mixed)
    with pytest.raises(dml.InvalidArgumentError, match="graph_desc must be a GraphDesc"):
        device.compile_graph(chain_of_two())
    with pytest.raises(dml.InvalidArgumentError, match="flags"):
        device.compile_graph(graph, flags=99)
    strict = dml.create_device(strict_directml=True)
    try:
        with pytest.raises(dml.UnsupportedError, match=r"nodes\[1\] \(ACTIVATION_TANH_GRAD\).*dmlpy extension"):
            strict.compile_graph(dml.GraphDesc(
                **with_(nodes=[tanh(), dml.ActivationTanhGradOperatorDesc(F32, F32, F32)],
                        input_edges=[dml.GraphInputEdge(0, 0, 0), dml.GraphInputEdge(0, 1, 0)],
                        intermediate_edges=[dml.GraphIntermediateEdge(0, 0, 1, 1)])))
    finally:
        strict.close()


def test_graph_desc_keeps_its_own_copies(device):
    """Lists changed after construction, and a desc subclass changed after validation, never
    reach the compiled graph."""
    arguments = chain_of_two()
    graph = dml.GraphDesc(**arguments)
    arguments["nodes"].append(tanh())
    arguments["input_edges"][0] = dml.GraphInputEdge(0, 1, 0)
    assert len(graph.nodes) == 2 and graph.input_edges == (dml.GraphInputEdge(0, 0, 0),)
    compiled = device.compile_graph(graph)
    x = np.linspace(-3, 3, 8, dtype=np.float32)
    (got,) = run_graph(device, compiled, [x])
    assert np.array_equal(bits(got), bits(dml.tanh(dml.tanh(x))))


def test_operators_as_nodes_and_a_multi_kernel_graph(device):
    """LINEAR -> SOFTMAX -> TANH: LINEAR fuses into the reduction's passes (a prologue), which
    ends the fused group; its output lives in the temporary resource; graph inputs and outputs
    bind in their index order."""
    rows = dml.BufferTensorDesc(T.FLOAT32, (4, 6))
    nodes = [device.create_operator(dml.ActivationLinearOperatorDesc(rows, rows, alpha=0.5, beta=-1.0)),
             dml.ActivationSoftmaxOperatorDesc(rows, rows), dml.ActivationTanhOperatorDesc(rows, rows),
             dml.ActivationReluGradOperatorDesc(rows, rows, rows)]
    graph = dml.GraphDesc(
        2, 2, nodes,
        input_edges=[dml.GraphInputEdge(1, 0, 0), dml.GraphInputEdge(0, 3, 0)],
        output_edges=[dml.GraphOutputEdge(2, 0, 1), dml.GraphOutputEdge(3, 0, 0)],
        intermediate_edges=[dml.GraphIntermediateEdge(0, 0, 1, 0), dml.GraphIntermediateEdge(1, 0, 2, 0),
                            dml.GraphIntermediateEdge(2, 0, 3, 1)])
    compiled = device.compile_graph(graph)
    assert [k.nodes for k in compiled.kernels] == [(0, 1), (2,), (3,)]  # tanh is a graph output: not fused away
    assert compiled.binding_properties.temporary_resource_size >= rows.total_tensor_size_in_bytes
    rng = np.random.default_rng(1)
    a, x = (rng.standard_normal((4, 6)).astype(np.float32) for _ in range(2))
    relu_out, tanh_out = run_graph(device, compiled, [a, x])
    expected_tanh = dml.tanh(dml.softmax(dml.linear(x, 0.5, -1.0)))
    assert np.array_equal(bits(tanh_out), bits(expected_tanh.reshape(-1)))
    assert np.array_equal(bits(relu_out), bits(dml.relu_grad(a, expected_tanh).reshape(-1)))
    assert "CompiledGraph 4 nodes in 3 kernels" in repr(compiled)


def test_builder_fuses_a_chain_into_one_kernel_with_the_same_bits(device):
    g = dml.GraphBuilder(device)
    desc = dml.BufferTensorDesc(T.FLOAT16, (3, 50))
    x = g.input(desc)
    y = dml.graph.relu_grad(x, dml.graph.scaled_tanh(dml.graph.elu(dml.graph.linear(x, alpha=2.0, beta=1.0))))
    compiled = g.build([y])
    assert [k.nodes for k in compiled.kernels] == [(0, 1, 2, 3)]
    assert compiled.binding_properties.temporary_resource_size == 0
    rng = np.random.default_rng(2)
    values = (rng.standard_normal((3, 50)) * 4).astype(np.float16)
    values[0, :6] = [np.inf, -np.inf, np.nan, -0.0, 6e-8, -6e-8]
    (got,) = run_graph(device, compiled, [values])
    expected = dml.relu_grad(values, dml.scaled_tanh(dml.elu(dml.linear(values, 2.0, 1.0))))
    assert np.array_equal(bits(got), bits(expected.reshape(-1)))


def test_a_node_reading_several_producers_takes_them_all_once_their_inputs_fit(device):
    """where(a < z, cast(a * b + c * d + e * f + h), cast(c)): taken one at a time in input
    order, the sum's group would bring nine outside tensors (the eight inputs and the second
    cast's output), one past the eight a kernel takes; with the second cast absorbed too, eight:
    one kernel, the bits of the nodes run one by one."""
    g = dml.GraphBuilder(device)
    a, z, b, c, d, e, f, h = (g.input(F32) for _ in range(8))
    half = np.float16
    G = dml.graph
    total = G.add(G.add(G.add(G.multiply(a, b), G.multiply(c, d)), G.multiply(e, f)), h)
    y = G.where(G.less(a, z), G.cast(total, half), G.cast(c, half))
    compiled = g.build([y])
    assert len(compiled.kernels) == 1 and compiled.binding_properties.temporary_resource_size == 0
    rng = np.random.default_rng(6)
    arrays = [(rng.standard_normal(8) * 300).astype(np.float32) for _ in range(8)]
    arrays[1][:3] = [np.nan, -0.0, 0.0]
    va, vz, vb, vc, vd, ve, vf, vh = arrays
    expected_total = dml.add(dml.add(dml.add(dml.multiply(va, vb), dml.multiply(vc, vd)), dml.multiply(ve, vf)), vh)
    expected = dml.where(dml.less(va, vz), dml.cast(expected_total, half), dml.cast(vc, half))
    assert np.array_equal(bits(run_graph(device, compiled, arrays)[0]), bits(expected))


def test_a_select_between_two_casts_to_one_type_converts_once(device):
    """where(c, cast(x), cast(y)) fused rounds the selected number once: NumPy's bits, with
    NaNs, infinities, values that round to FP16 subnormals, ties and overflow on both sides."""
    g = dml.GraphBuilder(device)
    desc = dml.BufferTensorDesc(T.FLOAT32, (64,))
    condition, x, y = g.input(dml.BufferTensorDesc(T.UINT8, (64,))), g.input(desc), g.input(desc)
    half = np.float16
    compiled = g.build([dml.graph.where(condition, dml.graph.cast(x, half), dml.graph.cast(y, half))])
    for source in compiled.sources:  # each stage of the kernel (the main one, its tail)
        body = source[source.index("begin operator_body"):source.index("end operator_body")]
        assert body.count("float16_from_float(") == 1
    rng = np.random.default_rng(7)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 65519.0, 65520.0, -1e6, 2.0 ** -25,
                         -(2.0 ** -25) * 1.5, 2.0 ** -24 * 2.5, 6.1e-5, 1.00048828125, 1e-40], np.float32)
    xs = (rng.standard_normal(64) * 1e3).astype(np.float32)
    ys = (rng.standard_normal(64) * 1e-5).astype(np.float32)
    xs[:15], ys[15:30] = specials, specials
    conditions = rng.integers(0, 3, 64).astype(np.uint8)
    (got,) = run_graph(device, compiled, [conditions, xs, ys])
    expected = np.where(conditions != 0, xs.astype(half), ys.astype(half))
    assert np.array_equal(bits(got), bits(expected))


def test_builder_prelu_grad_gives_two_outputs_and_uses_scratch(device):
    g = dml.GraphBuilder(device)
    x = g.input(dml.BufferTensorDesc(T.FLOAT32, (2, 3, 4)))
    slope = g.input(dml.BufferTensorDesc(T.FLOAT32, (2, 3, 4), (0, 1, 0)))
    dx, dslope = dml.graph.prelu_grad(dml.graph.tanh(x), slope, x)
    assert dslope.desc.sizes == (1, 3, 1)
    compiled = g.build([dml.graph.identity(dx), dslope])
    rng = np.random.default_rng(3)
    xs, slopes = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    got_dx, got_dslope = run_graph(device, compiled, [xs, slopes])
    want_dx, want_dslope = dml.prelu_grad(dml.tanh(xs), slopes, xs, data_format="NCX")
    assert np.array_equal(bits(got_dx), bits(want_dx.reshape(-1)))
    assert np.array_equal(bits(got_dslope), bits(want_dslope))


def test_builder_errors_and_unused_nodes(device):
    g, other = dml.GraphBuilder(device), dml.GraphBuilder(device)
    x, y = g.input(F32), other.input(F32)
    unused = dml.graph.sigmoid(x)
    out = dml.graph.tanh(x)
    with pytest.raises(dml.InvalidArgumentError, match="dy belongs to another GraphBuilder"):
        dml.graph.relu_grad(x, y)
    with pytest.raises(dml.InvalidArgumentError, match="x must be a GraphValue, not ndarray"):
        dml.graph.tanh(np.zeros(8, np.float32))
    with pytest.raises(dml.InvalidArgumentError, match="non-empty list of GraphValues"):
        g.build(out)
    with pytest.raises(dml.InvalidArgumentError, match=r"outputs\[0\] is graph input 0"):
        g.build([x])
    with pytest.raises(dml.InvalidArgumentError, match="alpha"):
        dml.graph.celu(x, alpha=0.0)
    with pytest.raises(dml.InvalidArgumentError, match="device must be a dmlpy Device"):
        dml.GraphBuilder("gpu")
    assert unused.node == 0
    compiled = g.build([out])
    assert len(compiled.graph.nodes) == 1  # the sigmoid nobody reads is left out
    assert "graph.tanh" not in repr(out) and "node 1 output 0" in repr(out)


def test_a_value_read_twice_is_computed_once_in_its_readers_kernel(device):
    """where(y > 0, y, 0.1 * y) reads y three times, and y * y twice through one node's two
    inputs: each chain is one kernel once every reader of y is in it; a reader in another
    kernel (a reduction's, which takes no second reader's chain) keeps y a kernel output."""
    g = dml.GraphBuilder(device)
    x, b = g.input(F32), g.input(F32)
    y = dml.graph.add(dml.graph.multiply(x, b), b)
    leaky = dml.graph.where(dml.graph.greater(y, dml.graph.element_wise_identity(b, scale_bias=dml.ScaleBias(0, 0))),
                            y, dml.graph.element_wise_identity(y, scale_bias=dml.ScaleBias(0.1, 0)))
    square = dml.graph.multiply(leaky, leaky)
    compiled = g.build([square])
    assert [len(k.nodes) for k in compiled.kernels] == [7] and compiled.binding_properties.temporary_resource_size == 0
    rng = np.random.default_rng(9)
    xs, bs = (rng.standard_normal(8).astype(np.float32) * 3 for _ in range(2))
    xs[:3] = [np.inf, -0.0, 1e-40]
    ys = dml.add(dml.multiply(xs, bs), bs)
    zero = dml.element_wise_identity(bs, scale_bias=dml.ScaleBias(0, 0))
    leaky_ys = dml.where(dml.greater(ys, zero), ys, dml.element_wise_identity(ys, scale_bias=dml.ScaleBias(0.1, 0)))
    (got,) = run_graph(device, compiled, [xs, bs])
    assert np.array_equal(bits(got), bits(dml.multiply(leaky_ys, leaky_ys)))

    g = dml.GraphBuilder(device)
    x = g.input(dml.BufferTensorDesc(T.FLOAT32, (2, 4)))
    y = dml.graph.tanh(x)
    compiled = g.build([dml.graph.add(dml.graph.softmax(y), y)])
    assert [k.nodes for k in compiled.kernels] == [(0,), (1,), (2,)]
    assert compiled.binding_properties.temporary_resource_size > 0
    xs = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    expected = dml.add(dml.softmax(dml.tanh(xs)), dml.tanh(xs))
    assert np.array_equal(bits(run_graph(device, compiled, [xs])[0]), bits(expected.reshape(-1)))


def test_kernels_split_past_eight_inputs_and_sixteen_nodes(device):
    g = dml.GraphBuilder(device)
    inputs = [g.input(F32) for _ in range(11)]
    value = inputs[0]
    for extra in inputs[1:]:
        value = dml.graph.relu_grad(extra, value)  # each node brings one more outside tensor
    compiled = g.build([value])
    assert [len(k.tensors) - 1 for k in compiled.kernels] == [8, 4]  # inputs from outside each kernel
    arrays = [np.linspace(-1, 1, 8, dtype=np.float32) * (k + 1) for k in range(11)]
    expected = arrays[0]
    for array in arrays[1:]:
        expected = dml.relu_grad(array, expected)
    assert np.array_equal(bits(run_graph(device, compiled, arrays)[0]), bits(expected))

    for name, fields, limit in (("tanh", {}, MAX_FUSED_NODES),
                                ("linear", {"alpha": 1.5, "beta": -0.25},
                                 # the scalars' room: the words beside one input's and the output's bases
                                # and the element count
                                (device.adapter.max_push_constants_size // 4 - 3) // 2)):
        g = dml.GraphBuilder(device)
        value = g.input(F32)
        for _ in range(MAX_FUSED_NODES + 3):
            value = dml.graph.FUNCTIONS[name](value, **fields)
        compiled = g.build([value])
        sizes = [len(k.nodes) for k in compiled.kernels]
        assert sizes[0] == min(limit, MAX_FUSED_NODES) and sum(sizes) == MAX_FUSED_NODES + 3
        expected = np.linspace(-1, 1, 8, dtype=np.float32)
        for _ in range(MAX_FUSED_NODES + 3):
            expected = FRONT_ENDS[name](expected, **fields)
        assert np.array_equal(bits(run_graph(device, compiled, [np.linspace(-1, 1, 8, dtype=np.float32)])[0]),
                              bits(expected))


# --- Random graphs: fused and unfused give the same bits -------------------------------------------

DATA_TYPES = (T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.INT32, T.INT8, T.INT64, T.UINT64)
REQUIRED_SCALARS = (-1.25, 0.5, 2.0, 3.0)


def _fusable_types(schema) -> set:
    """The data types of DATA_TYPES in which `schema` fuses in a chain: element-wise for a plain
    desc of that type, one output of the inputs' type (so not a comparison or IF, whose
    tensors' types differ)."""
    if schema.elementwise is None or len(schema.outputs) != 1 or schema.axes or \
            any(t.data_types for t in schema.tensors):
        return set()
    fusable = set()
    for data_type in DATA_TYPES:
        tensor = dml.BufferTensorDesc(data_type, (4,))
        try:
            desc = schema.desc_class(**{t.name: tensor for t in schema.tensors},
                                     **{s.name: 1.0 for s in schema.scalars if _required(schema, s.name)},
                                     **{v.name: 1 for v in schema.values if _required(schema, v.name)})
        except dml.DmlError:  # a type the operator does not take
            continue
        if schema.elementwise(desc) is not None:
            fusable.add(data_type)
    return fusable


def _elementwise_schemas():
    """The operators a graph can fuse (by name), each with the data types it fuses in."""
    return {schema.name: types for schema in OPERATORS.values() if (types := _fusable_types(schema))}


def _required(schema, name):
    import dataclasses
    return next(f for f in dataclasses.fields(schema.desc_class) if f.name == name).default is dataclasses.MISSING


ELEMENTWISE = _elementwise_schemas()


def _supports(schema, data_type):
    return any(data_type in row.data_types for row in schema.support)


@st.composite
def random_graphs(draw):
    data_type = draw(st.sampled_from(DATA_TYPES))
    candidates = [OPERATORS[name] for name, types in ELEMENTWISE.items() if data_type in types]
    # Half the steps from the operators of two or three inputs, which bring the graph's inputs in
    several = [schema for schema in candidates if len(schema.inputs) > 1] or candidates
    sizes = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    # Up to twelve graph inputs, more than one fused kernel binds (MAX_ELEMENTWISE_INPUTS), so
    # the groups are cut where the inputs run out, wherever that falls.
    input_count = draw(st.integers(2, 12))
    steps = []
    fresh = 0  # graph inputs taken in turn, so that a long chain reads many of them
    for _ in range(draw(st.integers(1, 14))):
        schema = draw(st.sampled_from(draw(st.sampled_from([candidates, several]))))
        # Input 0 continues the chain; the others read the next graph input (negative), or any
        # graph input or earlier value.
        others = []
        for _ in schema.inputs[1:]:
            fresh += 1
            others.append(draw(st.sampled_from([-(fresh % input_count) - 1, None])))
            if others[-1] is None:
                others[-1] = draw(st.integers(-input_count, len(steps) - 1))
        fields = {s.name: draw(st.sampled_from(REQUIRED_SCALARS)) for s in schema.scalars if _required(schema, s.name)}
        # CLIP1's Min and Max, DML_SCALAR_UNIONs: small ints are values of every data type
        fields.update({v.name: draw(st.integers(0, 5)) for v in schema.values if _required(schema, v.name)})
        if schema.flags and draw(st.booleans()):
            fields["use_dst"] = True
        if schema.choices:
            fields["approximate"] = draw(st.sampled_from(schema.choices[0].choices))
        steps.append((schema, others, fields))
    return data_type, sizes, input_count, steps, draw(st.integers(0, 2**32 - 1))


def _values(rng, data_type, sizes):
    dtype = data_type_info(data_type).numpy_dtype
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, sizes, endpoint=True, dtype=dtype)
    values = (rng.standard_normal(sizes) * 3).astype(dtype)
    flat = values.reshape(-1)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40], np.float32).astype(dtype)
    flat[:min(flat.size, 6)] = specials[:min(flat.size, 6)]
    return values


@settings(max_examples=40)
@given(random_graphs())
def test_fused_random_graphs_give_the_bits_of_their_operators_run_one_by_one(device, case):
    data_type, sizes, input_count, steps, seed = case
    rng = np.random.default_rng(seed)
    graph_inputs = [_values(rng, data_type, sizes) for _ in range(input_count)]
    g = dml.GraphBuilder(device)
    packed = dml.BufferTensorDesc(data_type, sizes)
    built = [g.input(packed) for _ in graph_inputs]
    reference = list(graph_inputs)
    for schema, others, fields in steps:
        chosen = [len(built) - 1, *(input_count + k if k >= 0 else k + input_count for k in others)]
        try:
            built.append(dml.graph.FUNCTIONS[schema.name](*(built[k] for k in chosen), **fields))
        except dml.InvalidArgumentError:  # a scalar the operator refuses (e.g. its integer form)
            return
        reference.append(FRONT_ENDS[schema.name](*(reference[k] for k in chosen), **fields, device=device))
    if len(built) == input_count:
        return
    # Every graph input must feed a node: a graph output reading each keeps them all bound.
    inputs = built[:input_count]
    keep = [dml.graph.relu(v) if _supports(OPERATORS["relu"], data_type) else v for v in inputs]
    compiled = g.build([built[-1], *(dml.graph.element_wise_identity(v) if v in inputs else v for v in keep)])
    got, want = run_graph(device, compiled, graph_inputs)[0], reference[-1].reshape(-1)
    # Which NaN is the hardware's where a device takes its arithmetic (docs/numerics.md, "Which
    # NaN"): a compiler may rewrite (-x) + x as x - x in a fused body. That it is a NaN is kept.
    nan = _is_nan(want)
    assert np.array_equal(_is_nan(got), nan) and np.array_equal(bits(got)[~nan], bits(want)[~nan]), (
        [(schema.name, others, fields) for schema, others, fields in steps], seed, [k.nodes for k in compiled.kernels])


@st.composite
def wide_chains(draw):
    """A chain of two-input operators, step k reading graph input k + 1: nine to thirteen
    graph inputs, more than one kernel binds."""
    data_type = draw(st.sampled_from((T.FLOAT32, T.FLOAT16, T.INT32)))
    binary = [OPERATORS[name] for name, types in ELEMENTWISE.items()
              if data_type in types and len(OPERATORS[name].inputs) == 2
              and not any(_required(OPERATORS[name], field.name)
                          for field in (*OPERATORS[name].scalars, *OPERATORS[name].values))]
    input_count = draw(st.integers(MAX_ELEMENTWISE_INPUTS + 1, MAX_ELEMENTWISE_INPUTS + 5))
    schemas = [draw(st.sampled_from(binary)) for _ in range(input_count - 1)]
    return data_type, input_count, schemas, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=12, deadline=None)
@given(wide_chains())
def test_a_chain_reading_more_inputs_than_a_kernel_binds_is_cut_with_the_same_bits(device, case):
    data_type, input_count, schemas, seed = case
    rng = np.random.default_rng(seed)
    graph_inputs = [_values(rng, data_type, (3, 5)) for _ in range(input_count)]
    g = dml.GraphBuilder(device)
    built = [g.input(dml.BufferTensorDesc(data_type, (3, 5))) for _ in graph_inputs]
    value, expected = built[0], graph_inputs[0]
    for k, schema in enumerate(schemas):
        value = dml.graph.FUNCTIONS[schema.name](value, built[k + 1])
        expected = FRONT_ENDS[schema.name](expected, graph_inputs[k + 1], device=device)
    compiled = g.build([value])
    assert len(compiled.kernels) >= 2, [k.nodes for k in compiled.kernels]
    (got,) = run_graph(device, compiled, graph_inputs)
    want = np.asarray(expected).reshape(-1)
    nan = _is_nan(want)
    assert np.array_equal(_is_nan(got), nan) and np.array_equal(bits(got)[~nan], bits(want)[~nan]), (
        [schema.name for schema in schemas], seed, [k.nodes for k in compiled.kernels])


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.BFLOAT16], ids=lambda t: t.name)
def test_an_operator_whose_output_is_zero_fuses_with_ieee_s_signed_zeros(device, data_type):
    """HARDMAX_GRAD writes +0 whatever its inputs. Fused into RELU, its +0, which has no data
    type of its own, decodes as the output's; then in MEAN, (+0 + -0) / 2 is +0 (a driver that
    sees the zero may fold x + 0 to x)."""
    dtype = np.float32 if data_type is T.FLOAT32 else ml_dtypes.bfloat16
    x = np.array([1.0, -2.0, 0.5, 3.0], dtype)
    dy = np.array([-0.0, 0.0, -1.0, np.nan], dtype)
    g = dml.GraphBuilder(device)
    packed = dml.BufferTensorDesc(data_type, x.shape)
    a, b = g.input(packed), g.input(packed)
    compiled = g.build([dml.graph.element_wise_mean(dml.graph.relu(dml.graph.hardmax_grad(a, b)), b)])
    assert len(compiled.kernels) == 1
    (mean,) = run_graph(device, compiled, [x, dy])
    zeros = dml.relu(dml.hardmax_grad(x, dy, device=device), device=device)
    assert np.array_equal(bits(mean), bits(dml.element_wise_mean(zeros, dy, device=device)))
    assert np.array_equal(bits(mean)[:2], [0, 0])  # +0, not -0


def test_a_graph_desc_tampered_with_after_construction_is_checked_again(device):
    """compile_graph works from a copy it checks again: edges set behind the frozen dataclass's
    back, or an operator whose desc was swapped, never reach a kernel unchecked."""
    graph = dml.GraphDesc(**chain_of_two())
    object.__setattr__(graph, "intermediate_edges", (dml.GraphIntermediateEdge(0, 0, 1, 5),))
    with pytest.raises(dml.InvalidArgumentError, match="to_node_input_index 5 is out of range"):
        device.compile_graph(graph)
    small = dml.BufferTensorDesc(T.FLOAT32, (2,))
    op = device.create_operator(tanh())
    graph = dml.GraphDesc(**with_(nodes=[op, tanh()]))
    op.desc = tanh(small)  # the node now claims 2 elements where the edges were checked for 8
    with pytest.raises(dml.InvalidArgumentError, match="intermediate_edges\\[0\\]"):
        device.compile_graph(graph)


def test_a_fused_chain_reading_a_constant_result(device):
    """hardmax_grad is +0 everywhere (stored bits of no input): the nodes after it still read it
    as a value of the graph's data type, and give the bits of the operators run one by one."""
    builder = dml.GraphBuilder(device)
    x = builder.input(dml.BufferTensorDesc(dml.TensorDataType.FLOAT16, (8,)))
    zero = dml.graph.hardmax_grad(x, x)
    compiled = builder.build([dml.graph.relu(zero), dml.graph.elu_grad(x, zero)])
    values = np.array([-2, -0.0, 0, 1, np.nan, np.inf, -np.inf, 3], np.float16)
    source = device.create_buffer(16)
    outputs = [device.create_buffer(16), device.create_buffer(16)]
    source.write(values)
    temporary = device.create_buffer(compiled.binding_properties.temporary_resource_size)
    device.execute(device.create_binding_table(compiled, inputs=[source], outputs=outputs, temporary=temporary))
    zero = dml.hardmax_grad(values, values, device=device)
    expected = [dml.relu(zero, device=device), dml.elu_grad(values, zero, device=device)]  # one by one
    for out, want in zip(outputs, expected):
        assert np.array_equal(out.read(np.uint16, 8), want.view(np.uint16))
