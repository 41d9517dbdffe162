"""Operators whose tensors differ in data type: a throwaway comparison declared in one place
through the public schema API (fields a_tensor and b_tensor, FLOAT32/FLOAT16 inputs, a UINT8
output), run end to end and checked bit for bit against NumPy, its data-type rules' messages,
and the front end, graph function and docs entry the layers above derive from it."""

import inspect
import sys
from pathlib import Path

import numpy as np
import pytest
from layout import element_offsets

import dmlpy as dml
from dmlpy.base.types import FeatureLevel
from dmlpy.frontends.graph_builder import builder_function
from dmlpy.frontends.numpy_api import front_end
from dmlpy.ir import expr as e
from dmlpy.kernels.codegen import plan_elementwise
from dmlpy.ops.family import Family, FrontEndShape, KernelKind
from dmlpy.ops.schema import OPERATORS, OperatorDesc, Support, TensorRole, operator, tensor_field

T = dml.TensorDataType
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16}


TEST_FAMILY = Family("test comparisons", KernelKind.ELEMENTWISE, FrontEndShape.BROADCAST, "tests/test_families.py",
                     "a throwaway family")


@operator(
    register=False,  # a test's operator: not one the front ends, graph functions and docs list
    family=TEST_FAMILY,
    dml_name="TEST_LESS_UINT8", name="test_less_uint8", formula="OutputTensor = ATensor < BTensor",
    support=(Support(FeatureLevel.LEVEL_1_0, (T.FLOAT32, T.FLOAT16)),),
    same={"data_type": ("a_tensor", "b_tensor"), "dimension_count": None, "sizes": None},
    shader="elementwise.comp",
    kernel=lambda desc, adapter: plan_elementwise([desc.a_tensor, desc.b_tensor], desc.output_tensor, adapter,
                                                  e.tensor(0) < e.tensor(1)),
)
class LessOperatorDesc(OperatorDesc):
    a_tensor: dml.BufferTensorDesc = tensor_field(TensorRole.INPUT, "ATensor")
    b_tensor: dml.BufferTensorDesc = tensor_field(TensorRole.INPUT, "BTensor")
    output_tensor: dml.BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor", data_types=(T.UINT8,))


def special_values(dtype, count: int, rng) -> np.ndarray:
    """NaN, signed zeros, infinities, subnormals, extremes and random numbers, in random order."""
    info = np.finfo(dtype)
    specials = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, info.max, -info.max,
                         info.smallest_subnormal, -info.smallest_subnormal, info.tiny], dtype=dtype)
    values = np.concatenate([np.resize(specials, count // 2), (rng.standard_normal(count) * 3).astype(dtype)])[:count]
    return rng.permutation(values)


def run_less(device, data_type, sizes, a_strides=None, b_strides=None, output_strides=None, seed=0):
    """Run a < b; returns the plan's path and the output buffer's bytes, actual and expected
    (the initial random bytes with only the output's elements replaced)."""
    rng = np.random.default_rng(seed)
    dtype = NUMPY[data_type]
    descs = {"a": dml.BufferTensorDesc(data_type, sizes, a_strides),
             "b": dml.BufferTensorDesc(data_type, sizes, b_strides),
             "output": dml.BufferTensorDesc(T.UINT8, sizes, output_strides)}
    count = int(np.prod(sizes))
    a = special_values(dtype, count, rng).reshape(sizes)
    b = np.where(rng.random(sizes) < 0.3, a, special_values(dtype, count, rng).reshape(sizes)).astype(dtype)
    buffers, inputs = {}, {}
    for name, values in (("a", a), ("b", b)):
        desc = descs[name]
        backing = np.zeros(desc.total_tensor_size_in_bytes // dtype().itemsize + 1, dtype)
        offsets = element_offsets(desc.sizes, desc.element_strides)
        backing[offsets] = values
        inputs[name] = backing[offsets]  # a broadcast element holds the last value written to it
        buffers[name] = device.create_buffer(backing.nbytes)
        buffers[name].write(backing.view(np.uint8))
    output = descs["output"]
    initial = rng.integers(0, 256, output.total_tensor_size_in_bytes + 16, dtype=np.uint8)
    buffers["output"] = device.create_buffer(initial.size)
    buffers["output"].write(initial)
    expected = initial.copy()
    expected[element_offsets(output.sizes, output.element_strides)] = (inputs["a"] < inputs["b"]).astype(np.uint8)

    compiled = device.compile_operator(device.create_operator(LessOperatorDesc(descs["a"], descs["b"], output)))
    table = device.create_binding_table(compiled, inputs=[buffers["a"], buffers["b"]], outputs=[buffers["output"]])
    device.execute(table)
    actual = buffers["output"].read(np.uint8, initial.size)
    for buffer in buffers.values():
        buffer.destroy()
    return compiled.plan.path, actual, expected


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16])
@pytest.mark.parametrize("sizes, a_strides, b_strides, output_strides, path", [
    ((7,), None, None, None, "mixed"),  # the elements differ in width: fewer than an item, all tail
    ((1000,), None, None, None, "mixed"),  # 62 items of 16 and a tail of 8
    ((1000,), (2,), (3,), None, "strided"),  # strided inputs
    ((8, 125), None, (0, 1), None, "strided"),  # b broadcast along rows
    ((8, 125), None, None, (1, 8), "strided"),  # a transposed output
    ((3, 7), (0, 0), None, (14, 2), "strided"),  # a scalar a, an output with holes
    ((1000,), (0,), None, None, "mixed"),  # a scalar a (x < 0's), read once: items and a tail
    ((7,), None, (0,), None, "mixed"),  # a scalar b, fewer than an item
    ((8, 125), None, (0, 0), None, "mixed"),  # a scalar b over 2-D
])
def test_less_writes_uint8(device, data_type, sizes, a_strides, b_strides, output_strides, path):
    taken, actual, expected = run_less(device, data_type, sizes, a_strides, b_strides, output_strides)
    assert taken == path
    assert np.array_equal(actual, expected), np.flatnonzero(actual != expected)[:10]


def test_not_registered():
    assert "test_less_uint8" not in OPERATORS


def test_output_must_be_uint8():
    tensor = dml.BufferTensorDesc(T.FLOAT32, (4,))
    with pytest.raises(dml.InvalidArgumentError,
                       match=r"LessOperatorDesc\.output_tensor\.data_type FLOAT32 is not supported: "
                             r"TEST_LESS_UINT8's OutputTensor must be UINT8") as raised:
        LessOperatorDesc(tensor, tensor, tensor)
    assert raised.value.field == "data_type"


def test_inputs_must_match():
    with pytest.raises(dml.InvalidArgumentError,
                       match=r"LessOperatorDesc\.b_tensor\.data_type \S+ != a_tensor\.data_type \S+: "
                             r"ATensor and BTensor must have the same DataType"):
        LessOperatorDesc(dml.BufferTensorDesc(T.FLOAT32, (4,)), dml.BufferTensorDesc(T.FLOAT16, (4,)),
                         dml.BufferTensorDesc(T.UINT8, (4,)))


def test_inputs_from_the_support_rows():
    tensor = dml.BufferTensorDesc(T.INT8, (4,))
    with pytest.raises(dml.InvalidArgumentError,
                       match=r"LessOperatorDesc\.a_tensor\.data_type INT8 is not supported: TEST_LESS_UINT8 accepts "
                             r"FLOAT32 and FLOAT16 from"):
        LessOperatorDesc(tensor, tensor, dml.BufferTensorDesc(T.UINT8, (4,)))


def test_describes_each_tensor():
    schema = LessOperatorDesc.schema
    a, b, output = schema.tensors
    assert schema.describe_tensor_data_types(output) == "UINT8"
    assert schema.describe_tensor_data_types(a).endswith("(the same as BTensor)")
    assert schema.describe_data_types().startswith("FLOAT32 and FLOAT16 from FEATURE_LEVEL_")


@operator(
    register=False,
    dml_name="TEST_HALVE", name="test_halve", formula="OutputTensor = InputTensor * 0.5",
    support=(Support(FeatureLevel.LEVEL_1_0, (T.INT8, T.INT16, T.FLOAT16)),),
    same={"dimension_count": None, "sizes": None},
    shader="elementwise.comp",
    kernel=lambda desc, adapter: plan_elementwise([desc.input_tensor], desc.output_tensor, adapter,
                                                  e.tensor(0) * 0.5),
)
class HalveOperatorDesc(OperatorDesc):
    input_tensor: dml.BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor")
    output_tensor: dml.BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor",
                                                       data_types=(T.FLOAT32, T.FLOAT16))


@pytest.mark.parametrize("input_type, output_type, count, path", [
    (T.INT8, T.FLOAT32, 1003, "mixed"),  # wider output: each tensor by its own width
    (T.INT8, T.FLOAT16, 99, "mixed"),
    (T.FLOAT16, T.FLOAT32, 37, "mixed"),
    (T.INT16, T.FLOAT16, 1000, "packed"),  # one width, two types: the packed path still
])
def test_input_decoded_by_its_type_output_encoded_by_its_own(device, input_type, output_type, count, path):
    numpy_in = {T.INT8: np.int8, T.INT16: np.int16, T.FLOAT16: np.float16}[input_type]
    numpy_out = {T.FLOAT32: np.float32, T.FLOAT16: np.float16}[output_type]
    rng = np.random.default_rng(1)
    values = rng.integers(-60_000, 60_000, count)  # integers wrap to their type; FP16 rounds
    x = (values * 1.01).astype(numpy_in) if input_type == T.FLOAT16 else values.astype(numpy_in)
    output = dml.BufferTensorDesc(output_type, (count,))
    compiled = device.compile_operator(device.create_operator(
        HalveOperatorDesc(dml.BufferTensorDesc(input_type, (count,)), output)))
    source, result = device.create_buffer(x.nbytes + 4), device.create_buffer(output.total_tensor_size_in_bytes)
    source.write(x.view(np.uint8))
    device.execute(device.create_binding_table(compiled, inputs=[source], outputs=[result]))
    actual = result.read(np.uint8, count * np.dtype(numpy_out).itemsize)
    expected = (x.astype(np.float32) * np.float32(0.5)).astype(numpy_out)  # exact in FP32, rounded once
    assert compiled.plan.path == path
    assert np.array_equal(actual, expected.view(np.uint8))
    source.destroy()
    result.destroy()


sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import gen_docs  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_front_end_derived_from_the_declaration_gives_uint8(device, dtype):
    less = front_end(LessOperatorDesc.schema)
    assert list(inspect.signature(less).parameters) == ["a", "b", "out", "device"]
    rng = np.random.default_rng(3)
    a = special_values(dtype, 300, rng).reshape(3, 100)
    b = np.where(rng.random((3, 100)) < 0.3, a, special_values(dtype, 300, rng).reshape(3, 100)).astype(dtype)
    expected = (a < b).astype(np.uint8)
    got = less(a, b, device=device)  # the fast path: C-contiguous, one shape
    assert got.dtype == np.uint8 and np.array_equal(got, expected)
    got = less(a.T.copy().T, b[:, ::-1][:, ::-1], device=device)  # the general path
    assert got.dtype == np.uint8 and np.array_equal(got, expected)
    row = b[1]
    assert np.array_equal(less(a, row, device=device), (a < row).astype(np.uint8))  # NumPy's broadcasting
    out = np.full((3, 100), 7, np.uint8)
    assert less(a, b, out=out, device=device) is out and np.array_equal(out, expected)
    with pytest.raises(dml.InvalidArgumentError, match=r"out has shape \(3, 100\) and dtype float32; the result has "
                                                         r"\(3, 100\) and uint8"):
        less(a, b, out=np.empty((3, 100), np.float32), device=device)
    resident = less(dml.asarray(a, device=device), dml.asarray(b, device=device))
    assert isinstance(resident, dml.DeviceArray) and resident.dtype == np.uint8
    assert np.array_equal(resident.numpy(), expected)


def test_the_graph_function_derived_from_the_declaration_gives_uint8(device):
    less = builder_function(LessOperatorDesc.schema)
    builder = dml.GraphBuilder(device)
    a = builder.input(dml.BufferTensorDesc(T.FLOAT32, (64,)))
    b = builder.input(dml.BufferTensorDesc(T.FLOAT32, (64,)))
    node = less(a, b)
    assert node.desc == dml.BufferTensorDesc(T.UINT8, (64,))
    compiled = builder.build([node])
    x, y = np.linspace(-2, 2, 64, dtype=np.float32), np.zeros(64, np.float32)
    buffers = [device.create_buffer(256), device.create_buffer(256), device.create_buffer(64)]
    buffers[0].write(x)
    buffers[1].write(y)
    device.execute(device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:]))
    assert np.array_equal(buffers[2].read(np.uint8, 64), (x < y).astype(np.uint8))


def test_the_docs_entry_derived_from_the_declaration():
    text = "\n".join(gen_docs.entry(LessOperatorDesc.schema))
    assert text.startswith("## TEST_LESS_UINT8 (`test_less_uint8`, DirectML)")
    assert "`LessOperatorDesc`, family `test comparisons`, shader `shaders/elementwise.comp`" in text
    assert "| `a_tensor` | ATensor | input |" in text
    assert "| `output_tensor` | OutputTensor | output, UINT8 |" in text
    assert "- ATensor and BTensor must have the same DataType." in text
