"""Graphs under load and abuse: compiling takes work linear in the graph's size; hostile
nodes, edges and builder values are refused as DmlErrors naming what is wrong; a graph
whose temporaries span several buffer segments binds and gives the bits it gives on a
device with one segment."""

import os
import sys

import numpy as np
import pytest

import dmlpy as dml

T = dml.TensorDataType
F32 = dml.BufferTensorDesc(T.FLOAT32, (8,))
BF16 = dml.BufferTensorDesc(T.BFLOAT16, (8,))
SEGMENT = 4096  # the small segments tests give a fresh device, as in test_layouts.py


def tanh(desc=F32):
    return dml.ActivationTanhOperatorDesc(desc, desc)


def one_node(node) -> dict:
    """x -> node -> y, as GraphDesc arguments."""
    return dict(input_count=1, output_count=1, nodes=[node], input_edges=[dml.GraphInputEdge(0, 0, 0)],
                output_edges=[dml.GraphOutputEdge(0, 0, 0)])


def chain_of_two(**changes) -> dict:
    """x -> tanh -> tanh -> y, as GraphDesc arguments."""
    return {**dict(input_count=1, output_count=1, nodes=[tanh(), tanh()], input_edges=[dml.GraphInputEdge(0, 0, 0)],
                   output_edges=[dml.GraphOutputEdge(1, 0, 0)],
                   intermediate_edges=[dml.GraphIntermediateEdge(0, 0, 1, 0)]), **changes}


def refused(call, error=dml.InvalidArgumentError) -> str:
    with pytest.raises(error) as caught:
        call()
    return caught.value.message


# --- Linear time -------------------------------------------------------------------------

def lines_run(call) -> int:
    """How many lines of dmlpy's own code `call` executes: a measure of work that, unlike
    time, does not depend on the machine's load."""
    package = os.path.dirname(dml.__file__)
    count = 0

    def local(frame, event, arg):
        nonlocal count
        count += event == "line"
        return local

    previous = sys.gettrace()
    sys.settrace(lambda frame, event, arg: local if frame.f_code.co_filename.startswith(package) else None)
    try:
        call()
    finally:
        sys.settrace(previous)
    return count


def test_building_and_compiling_a_graph_takes_work_linear_in_its_nodes(device):
    """graph_desc and compile_graph on a chain of 4x the nodes run at most about 4x the lines
    (every node lookup used to scan every node or edge: 4x the nodes ran about 11x the lines)."""
    steps = [("linear", {"alpha": 0.5, "beta": 0.25}), ("relu_grad", {})]

    def graph_of(nodes):
        builder = dml.GraphBuilder(device)
        x = builder.input(dml.BufferTensorDesc(T.FLOAT32, (64,)))
        y = dml.graph.chain(x, (steps * nodes)[:nodes])
        return lambda: device.compile_graph(builder.graph_desc([y]))

    for nodes in (128, 512):  # every shader compiled once, outside the count
        graph_of(nodes)()
    small, large = lines_run(graph_of(128)), lines_run(graph_of(512))
    assert large < 4.4 * small, (small, large)


# --- Hostile nodes, edges and values -----------------------------------------------------

def test_an_operator_the_device_refuses_is_named_by_its_node_index():
    """A strict device refuses a dmlpy extension in an operator's (reassigned) desc: the
    UnsupportedError names the node, where the error path itself used to fail."""
    with dml.create_device(strict_directml=True) as strict:
        op = strict.create_operator(tanh())
        graph = dml.GraphDesc(**one_node(op))
        op.desc = tanh(BF16)
        message = refused(lambda: strict.compile_graph(graph), dml.UnsupportedError)
        assert message.startswith("GraphDesc.nodes[0] (ACTIVATION_TANH): ")
        assert "BFLOAT16 is a dmlpy extension" in message


@pytest.mark.parametrize("replace", ["assignment", "object.__setattr__", "del"])
def test_an_operator_whose_desc_was_replaced_is_refused_naming_the_node(device, replace):
    def spoil(op):
        if replace == "assignment":
            op.desc = "tanh"
        elif replace == "object.__setattr__":
            object.__setattr__(op, "desc", 5)
        else:
            del op.desc

    expected = "could not be read" if replace == "del" else "is not an operator desc"
    before = device.create_operator(tanh())  # replaced before the GraphDesc is built
    spoil(before)
    assert expected in refused(lambda: dml.GraphDesc(**chain_of_two(nodes=[tanh(), before])))
    after = device.create_operator(tanh())  # replaced between the GraphDesc and compile_graph
    graph = dml.GraphDesc(**chain_of_two(nodes=[tanh(), after]))
    spoil(after)
    message = refused(lambda: device.compile_graph(graph))
    assert message.startswith("GraphDesc.nodes[1] is an Operator whose desc") and expected in message


def test_an_operator_whose_desc_was_tampered_with_is_checked_naming_the_node(device):
    op = device.create_operator(tanh())
    graph = dml.GraphDesc(**one_node(op))
    broken = tanh()
    object.__setattr__(broken, "input_tensor", "eight floats")
    op.desc = broken
    message = refused(lambda: device.compile_graph(graph))
    assert message.startswith("GraphDesc.nodes[0]: ") and "input_tensor must be a BufferTensorDesc" in message


class RaisingEdge(dml.GraphInputEdge):
    """An edge whose to_node cannot be read."""

    def __getattribute__(self, name):
        if name == "to_node":
            raise RuntimeError("no node today")
        return object.__getattribute__(self, name)


class HostileIndex:
    def __index__(self):
        raise RuntimeError("not today")


HUGE = 10**5000  # str() of it raises ValueError


@pytest.mark.parametrize("arguments, words", [
    (chain_of_two(input_edges=[RaisingEdge(0, 0, 0)]),
     "GraphDesc.input_edges[0].to_node could not be read: RuntimeError('no node today')"),
    (chain_of_two(input_edges=[dml.GraphInputEdge(HUGE, 0, 0)]),
     "GraphDesc.input_edges[0].graph_input_index <a 16610-bit integer> is out of range: the graph has 1 inputs"),
    (chain_of_two(intermediate_edges=[dml.GraphIntermediateEdge(0, 0, -HUGE, 0)]),
     "GraphDesc.intermediate_edges[0].to_node <a negative 16610-bit integer> is out of range"),
    (chain_of_two(output_edges=[dml.GraphOutputEdge(1, HostileIndex(), 0)]),
     "GraphDesc.output_edges[0].from_node_output_index"),
    (chain_of_two(input_count=HUGE), "graph input 1 has no edge"),
    (chain_of_two(output_count=HUGE), "graph output 1 has no edge"),
])
def test_hostile_edges_and_counts_are_refused_naming_the_field(arguments, words):
    assert words in refused(lambda: dml.GraphDesc(**arguments))


def test_hostile_flags_are_refused(device):
    assert "flags <a 16610-bit integer> is not a combination" in refused(
        lambda: device.compile_graph(dml.GraphDesc(**chain_of_two()), flags=HUGE))


def test_graph_values_changed_behind_the_builder_are_refused(device):
    builder = dml.GraphBuilder(device)
    x = builder.input(F32)
    y = dml.graph.tanh(x)
    with pytest.raises(AttributeError):  # frozen: plain assignment is refused at once
        y.node = 7
    object.__setattr__(y, "node", HUGE)
    assert "outputs[0] was changed after this GraphBuilder made it (node <a 16610-bit integer>" in refused(
        lambda: builder.graph_desc([y]))
    object.__setattr__(x, "desc", "eight floats")
    assert "x was changed after this GraphBuilder made it" in refused(lambda: dml.graph.tanh(x))


def test_builder_add_and_chain_refuse_what_is_not_a_node(device):
    builder = dml.GraphBuilder(device)
    x = builder.input(F32)
    assert "desc must be an operator desc, not str" in refused(lambda: builder.add("tanh", [x]))
    assert "sources must be a list of 1 GraphValues, one per input of ACTIVATION_TANH" in refused(
        lambda: builder.add(tanh(), [x, x]))
    assert "steps[0] ('nope', {}) must be a pair" in refused(lambda: dml.graph.chain(x, [("nope", {})]))
    assert "steps[1]" in refused(lambda: dml.graph.chain(x, [("tanh", {}), ("tanh",)]))
    assert "steps must be a list" in refused(lambda: dml.graph.chain(x, 5))
    (y,) = builder.add(tanh(), [x])  # the desc is copied, the value usable
    assert builder.graph_desc([y]).nodes == (tanh(),)


# --- Temporaries over several buffer segments --------------------------------------------

def graph_over_segments(device):
    """Rows of 3 x 250 floats (3,000 bytes, one segment each) through LINEAR, SOFTMAX, TANH,
    SOFTMAX: three intermediates in the temporary resource, more than one 4,096-byte segment
    together, each read by a kernel that binds it whole. Beside it, an ELU of 16,000 bytes
    read by two kernels: an intermediate of four segments, read by packed kernels in windows."""
    builder = dml.GraphBuilder(device)
    rows = builder.input(dml.BufferTensorDesc(T.FLOAT32, (3, 250)))
    z = builder.input(dml.BufferTensorDesc(T.FLOAT32, (4, 1000)))
    y = dml.graph.softmax(dml.graph.tanh(dml.graph.softmax(dml.graph.linear(rows, alpha=0.5, beta=0.25))))
    w = dml.graph.elu(z)
    return builder.build([y, dml.graph.tanh(w), dml.graph.relu_grad(z, w)])


def run(device, compiled, arrays, temporary_offset=0):
    inputs = []
    for array in arrays:
        inputs.append(device.create_buffer(array.nbytes))
        inputs[-1].write(array)
    outputs = [device.create_buffer(desc.total_tensor_size_in_bytes) for _, desc in compiled.output_tensors]
    size = compiled.binding_properties.temporary_resource_size
    temporary = dml.BufferBinding(device.create_buffer(temporary_offset + size), temporary_offset, size)
    device.execute(device.create_binding_table(compiled, inputs, outputs, temporary))
    return [buffer.read(np.uint32, desc.element_count) for buffer, (_, desc) in zip(outputs, compiled.output_tensors)]


def test_temporaries_over_several_segments_bind_and_give_the_same_bits(device):
    rng = np.random.default_rng(7)
    arrays = [(rng.standard_normal(shape) * 3).astype(np.float32) for shape in ((3, 250), (4, 1000))]
    expected = run(device, graph_over_segments(device), arrays)
    with dml.create_device() as small:
        small.segment_size = SEGMENT
        compiled = graph_over_segments(small)
        assert compiled.binding_properties.temporary_resource_size > SEGMENT
        for kernel in compiled.kernels:  # a range that fits in a segment lies inside one
            for tensor in kernel.tensors:
                if tensor.role == "temporary" and tensor.size <= SEGMENT:
                    assert tensor.offset // SEGMENT == (tensor.offset + tensor.size - 1) // SEGMENT, kernel
        got = run(small, compiled, arrays)
        assert all(np.array_equal(a, b) for a, b in zip(got, expected))
        message = refused(lambda: run(small, compiled, arrays, temporary_offset=2048), dml.UnsupportedError)
        assert message.startswith("temporary.offset 2048: ") and f"a multiple of {SEGMENT}" in message


def test_a_reduction_over_more_than_a_segment_is_refused_when_compiled():
    """SOFTMAX binds each tensor whole: an input of 8,000 bytes (the graph's, which the fused
    TANH prologue reads) can never be bound on a device whose segments hold 4,096, and
    compile_graph says so in a graph author's words."""
    with dml.create_device() as small:
        small.segment_size = SEGMENT
        builder = dml.GraphBuilder(small)
        x = builder.input(dml.BufferTensorDesc(T.FLOAT32, (2, 1000)))
        y = dml.graph.softmax(dml.graph.tanh(x))
        message = refused(lambda: builder.build([y]), dml.UnsupportedError)
        assert message.startswith("GraphDesc.nodes[1] (ACTIVATION_SOFTMAX) and the nodes fused with it, [0], binds "
                                  "graph input 0 of 8000 bytes, more than the 4096 bytes one binding of this device "
                                  "reaches")
        assert "keep this node's tensors within 4096 bytes" in message
