"""Hostile input: every case ends in a correct result or a DmlError, never anything else.

Each strategy runs DMLPY_FUZZ_EXAMPLES examples (a small deterministic sample in `make
test`, 2000 in `make fuzz`). Valid cases run on a guarded device, which proves after every
dispatch that no byte outside the outputs' elements changed; buffers are filled with
random canary bytes around and between the bound ranges.
"""

import inspect
import math
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from layout import element_offsets
from reference import (
    REFERENCES,
    REFERENCES_F64,
    REFERENCES_ROWWISE,
    assert_matches_reference,
    assert_rowwise_matches,
    dslope_error_bound,
    prelu_grad,
)
from reference_elementwise import FLOATS, TRANSCENDENTAL, assert_same, assert_within_bound, expected_of
from reference_reduce import assert_reduce_matches

import dmlpy as dml
from dmlpy.base.tensor_desc import packed_strides
from dmlpy.base.types import data_type_info
from dmlpy.kernels.glsl import shader_source
from dmlpy.ops.elementwise import TABLE as ELEMENT_WISE_TABLE
from dmlpy.ops.fields import DataTypeField, EnumField, ScalarUnionField, UIntField
from dmlpy.runtime.shader_compiler import cache_entry_name

EXAMPLES = int(os.environ.get("DMLPY_FUZZ_EXAMPLES", "40"))
fuzz = settings(max_examples=EXAMPLES, deadline=None)
T = dml.TensorDataType
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@pytest.fixture(scope="module")
def guarded():
    with dml.create_device(guarded=True) as device:
        yield device


def outcome(call):
    """Run call(); a DmlError is an accepted outcome (recorded), anything else fails."""
    try:
        return call()
    except dml.DmlError as error:
        event(f"rejected: {type(error).__name__}")
        return None


anything = st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.floats(), st.lists(st.integers(), max_size=2))
huge_ints = st.integers(-(2**70), 2**70)
small_ints = st.integers(-2, 9)
ints = st.one_of(small_ints, huge_ints, st.sampled_from([2**31, 2**32 - 1, 2**32, 2**63, 2**64]))


def mostly(valid, hostile):
    """Valid values seven times in eight, so both outcomes are exercised (one_of would merge
    repeated branches, so the choice is drawn)."""
    return st.integers(0, 7).flatmap(lambda k: hostile if k == 0 else valid)


plausible_sizes = st.lists(st.integers(1, 6), min_size=1, max_size=8)


# FP32 bit patterns that a float strategy rarely draws: both zeros, NaN payloads of either
# sign, subnormals, the extremes of the normal range, infinities.
float_bit_patterns = st.one_of(
    st.sampled_from([0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
                     0x7F800000, 0xFF800000]),
    st.integers(0x7F800001, 0x7FFFFFFF), st.integers(0xFF800001, 0xFFFFFFFF), st.integers(1, 0x007FFFFF),
).map(lambda bits: float(np.uint32(bits).view(np.float32)))


@st.composite
def sizes_and_strides(draw):
    sizes = draw(mostly(plausible_sizes, st.one_of(st.lists(st.one_of(ints, small_ints), max_size=10), anything)))
    valid_strides = st.lists(st.integers(0, 40), min_size=len(sizes), max_size=len(sizes)) \
        if isinstance(sizes, list) else st.none()
    strides = draw(mostly(st.one_of(st.none(), valid_strides), st.one_of(st.lists(ints, max_size=10), anything)))
    return sizes, strides


@fuzz
@given(data_type=mostly(st.sampled_from([T.FLOAT32, T.FLOAT16, T.INT8, T.UINT32, T.BFLOAT16]),
                        st.one_of(st.sampled_from(list(T)), ints, anything)),
       layout=sizes_and_strides(),
       flags=mostly(st.sampled_from([0, 1]), st.one_of(ints, anything)),
       total=mostly(st.none(), st.one_of(ints, anything)),
       alignment=mostly(st.sampled_from([0, 4, 16, 64]), st.one_of(ints, st.sampled_from([1, 2, 3]), anything)))
def test_fuzz_tensor_descs(data_type, layout, flags, total, alignment):
    sizes, strides = layout
    desc = outcome(lambda: dml.BufferTensorDesc(data_type, sizes, strides, flags, total, alignment))
    if desc is not None:
        event("accepted")
        assert desc.total_tensor_size_in_bytes >= dml.calc_buffer_tensor_size(desc.data_type, desc.sizes, desc.strides)
        assert 1 <= desc.dimension_count <= 8 and desc.element_count <= 2**32 - 1


@st.composite
def tensors_for(draw, sizes, data_type, output=False):
    """A desc over `sizes` (mostly valid, sometimes hostile) with strides of its own."""
    choice = draw(st.integers(0, 29))
    if choice == 0:
        return draw(st.one_of(st.none(), anything))
    if choice == 1:  # a neighbour's shape or type
        sizes = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
        data_type = draw(st.sampled_from([T.FLOAT32, T.FLOAT16, T.UINT8, T.INT32, T.BFLOAT16, T.FLOAT64]))
    rank = len(sizes)
    order, strides, extent = draw(st.permutations(range(rank))), [0] * rank, 1
    for dim in reversed(order):
        strides[dim] = extent * draw(st.integers(1, 2))
        extent = strides[dim] * sizes[dim] + draw(st.integers(0, 2))
        if draw(st.integers(0, 6 if not output else 30)) == 0:
            strides[dim] = 0  # broadcast (or, for an output, a collision)
    alignment = draw(st.sampled_from([0, 0, data_type_info(data_type).element_size, 16]))
    return draw(st.just(dml.BufferTensorDesc(data_type, sizes, tuple(strides),
                                             guaranteed_base_offset_alignment=alignment)))


@st.composite
def operator_descs(draw):
    schema = draw(st.sampled_from(list(dml.OPERATORS.values())))
    supported = sorted({t for row in schema.support for t in row.data_types})
    data_type = draw(mostly(st.sampled_from(supported), st.sampled_from([T.INT8, T.INT32, T.UINT16, T.FLOAT64])))
    sizes = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    scalars = {}
    for field in schema.axes:  # distinct axes of the tensors' dims, or something hostile
        scalars[field.name] = draw(mostly(
            st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=len(sizes), unique=True).map(tuple),
            st.one_of(st.lists(st.integers(-2, 9), max_size=3).map(tuple), anything)))
    for field in schema.values:  # REDUCE's Function: a member, or something hostile
        if isinstance(field, EnumField):
            scalars[field.name] = draw(mostly(st.sampled_from(list(field.enum_type)), anything))
        elif isinstance(field, UIntField):  # an axis of the tensors' dims, TOP_K's K: mostly a valid one
            scalars[field.name] = draw(mostly(st.integers(field.minimum, max(field.minimum, len(sizes) - 1)),
                                              st.one_of(st.integers(-2, 2**33), anything)))
    fields = {}
    for field in schema.tensors:
        if field.name == "slope_tensor" and draw(st.booleans()):
            broadcast = [draw(st.booleans()) for _ in sizes]
            packed = packed_strides(sizes)
            strides = tuple(0 if b else s for b, s in zip(broadcast, packed))
            fields[field.name] = dml.BufferTensorDesc(data_type, sizes, strides)
        elif field.name == "output_slope_gradient_tensor":
            slope = fields.get("slope_tensor")
            reduced = [isinstance(slope, dml.BufferTensorDesc) and s > 1 and t == 0 and slope.sizes == sizes
                       for s, t in zip(sizes, slope.element_strides if isinstance(slope, dml.BufferTensorDesc)
                                       else sizes)]
            fields[field.name] = draw(tensors_for(tuple(1 if r else s for r, s in zip(reduced, sizes)), data_type))
        else:  # a tensor of a fixed set of types (a comparison's output, IF's condition) mostly of the set
            own = draw(mostly(st.sampled_from(field.data_types), st.just(data_type))) if field.data_types else data_type
            shape = sizes
            if field.role.value == "output" and schema.output_sizes is not None and draw(st.integers(0, 7)):
                try:  # a reduction's output: 1 on the reduced axes
                    shape = schema.output_sizes(fields, scalars).get(field.name, sizes)
                except Exception:  # hostile axes or inputs: the input's shape, to be refused
                    pass
                if not all(1 <= size < 2**32 for size in shape):  # a hostile K (0, 2^32): no desc has it
                    shape = sizes
            if field.role.value == "output" and schema.output_data_type is not None and not field.data_types:
                try:  # REDUCE's ARGMAX and ARGMIN write UINT32
                    own = draw(mostly(st.just(schema.output_data_type(fields, scalars)), st.just(own)))
                except Exception:
                    pass
            fields[field.name] = draw(tensors_for(shape, own, field.role.value == "output"))
    scalar_values = mostly(st.one_of(st.floats(-4, 4), float_bit_patterns),
                           st.one_of(st.floats(), st.integers(-(2**1100), 2**1100), anything))
    scalars.update({s.name: draw(scalar_values) for s in schema.scalars})
    for field in schema.choices:
        scalars[field.name] = draw(mostly(st.sampled_from(field.choices), st.one_of(st.text(max_size=5), anything)))
    for field in schema.values:  # CLIP1's MinMaxDataType and its DML_SCALAR_UNION Min and Max
        if isinstance(field, DataTypeField):
            scalars[field.name] = draw(mostly(st.just(None), st.one_of(st.sampled_from(list(T)), anything)))
        elif isinstance(field, ScalarUnionField):
            scalars[field.name] = draw(mostly(st.integers(-8, 8), st.one_of(st.floats(), st.integers(), anything)))
    return schema, fields, scalars


def fill(rng, buffer, element_size, numpy_dtype):
    """Random bits, with finite floats so sums stay comparable: canaries everywhere."""
    raw = rng.integers(0, 256, size=buffer.size_in_bytes, dtype=np.uint8)
    if numpy_dtype is not None and np.issubdtype(numpy_dtype, np.floating) or numpy_dtype == ml_dtypes.bfloat16:
        span = raw[: raw.size // element_size * element_size].view(numpy_dtype)
        span[...] = (rng.standard_normal(span.shape) * 3).astype(numpy_dtype)
    buffer.write(raw)
    return raw


def gather(raw, offset, tensor):
    element = tensor.element_size
    region = raw[offset:offset + tensor.total_tensor_size_in_bytes]
    words = region[: region.size // element * element].view(UNSIGNED[element])
    return words[element_offsets(tensor.sizes, tensor.element_strides)]


def check_result(schema, desc, data, offsets, buffers):
    """Compare the outputs with the reference, from the inputs as they were bound (each read
    as its own data type)."""
    tensors = [getattr(desc, f.name) for f in schema.tensors]
    dtype = data_type_info(tensors[0].data_type).numpy_dtype
    inputs = [gather(data[i], offsets[i], tensors[i]).view(data_type_info(tensors[i].data_type).numpy_dtype)
              for i in range(len(schema.inputs))]
    outputs = [gather(buffers[i].read(np.uint8, buffers[i].size_in_bytes), offsets[i], tensors[i])
               for i in range(len(schema.inputs), len(tensors))]
    CHECKS.get(schema.name, check_elementwise)(desc, inputs, outputs, dtype)


def check_elementwise(desc, inputs, outputs, dtype):
    scalars = {s.name: getattr(desc, s.name) for s in desc.schema.scalars}
    assert_matches_reference(desc.schema.name, outputs[0].view(dtype), inputs, scalars,
                             form=getattr(desc, "approximate", "none"))


def check_prelu_grad(desc, inputs, outputs, dtype):
    x, slope, dy = inputs
    reduced = tuple(a for a, (s, t) in enumerate(zip(desc.slope_tensor.sizes, desc.slope_tensor.element_strides))
                    if s > 1 and t == 0)
    dx, exact, magnitudes = prelu_grad(x, slope, dy, reduced)
    assert np.array_equal(outputs[0], dx.view(outputs[0].dtype))
    got = outputs[1].view(dtype).astype(np.float64)
    count = math.prod(x.shape[a] for a in reduced) if reduced else 1
    assert np.all(np.abs(got - exact) <= dslope_error_bound(magnitudes, count, dtype))


def check_rowwise(desc, inputs, outputs, dtype):
    axes = getattr(desc, "axes", (desc.input_tensor.dimension_count - 1,))
    assert_rowwise_matches(desc.schema.name, outputs[0].view(dtype), inputs, axes,
                           getattr(desc, "use_dst", False))


def check_element_wise_family(desc, inputs, outputs, dtype):
    row = ELEMENT_WISE_ROWS[desc.schema.name]
    output = getattr(desc, desc.schema.outputs[0].name)
    got = outputs[0].view(data_type_info(output.data_type).numpy_dtype)
    data_type = getattr(desc, next(o.field for o in row.operands if not o.data_types)).data_type
    fields = {s.name: getattr(desc, s.name) for s in desc.schema.scalars}
    fields.update({v.name: getattr(desc, v.name) for v in desc.schema.values if isinstance(v, ScalarUnionField)})
    if row.dml_name in TRANSCENDENTAL and data_type in FLOATS:
        assert_within_bound(got, inputs, row.dml_name, data_type, fields)
        return
    fields.update({c.name: getattr(desc, c.name).name for c in row.enums})
    assert_same(got, expected_of(row.dml_name, data_type, inputs, fields, output.data_type))


def check_reduction(desc, inputs, outputs, dtype):
    output = desc.output_tensor
    function = getattr(desc, "function", None) or desc.schema.dml_name  # ARGMIN and ARGMAX: their own
    assert_reduce_matches(outputs[0].view(data_type_info(output.data_type).numpy_dtype), inputs[0], function,
                          desc.axes, getattr(desc, "axis_direction", "INCREASING"))


def check_cumulative(desc, inputs, outputs, dtype):
    """The running value in NumPy: FP32 (or wrapping integers of 32 bits, 64 for 64-bit types)
    walked along the axis, each output rounded to the data type; an exclusive scan shifted by
    one, +0 (or 1) first."""
    product = desc.schema.dml_name == "CUMULATIVE_PRODUCT"
    exclusive = desc.has_exclusive_product if product else desc.has_exclusive_sum
    x = np.moveaxis(inputs[0], desc.axis, -1)
    if desc.axis_direction is dml.AxisDirection.DECREASING:
        x = x[..., ::-1]
    wide = np.float32 if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16 else \
        np.uint64 if x.dtype.itemsize == 8 else np.uint32
    running = (np.cumprod if product else np.cumsum)(x.astype(wide), axis=-1, dtype=wide)
    if exclusive:
        first = np.full(running.shape[:-1] + (1,), 1 if product else 0, wide)
        running = np.concatenate([first, running[..., :-1]], axis=-1)
    if desc.axis_direction is dml.AxisDirection.DECREASING:
        running = running[..., ::-1]
    expected = np.moveaxis(running.astype(dtype), -1, desc.axis)
    assert np.array_equal(outputs[0], np.ascontiguousarray(expected).view(outputs[0].dtype))


def check_top_k(desc, inputs, outputs, dtype):
    """A stable sort of each row: NaN above every number, -0 equal to +0, ties by index;
    integers compared as themselves (64-bit ones do not all fit a float64)."""
    x = np.moveaxis(inputs[0], desc.axis, -1)
    if x.dtype.kind in "iu":
        values, nan, descending = x, np.zeros(x.shape, bool), np.invert  # ~v reverses the order, no overflow
    else:
        values = x.astype(np.float64)
        nan = np.isnan(values)
        values, descending = np.where(nan, 0.0, values) + 0.0, np.negative  # -0 and +0 alike
    smallest = getattr(desc, "axis_direction", dml.AxisDirection.DECREASING) is dml.AxisDirection.INCREASING
    index = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    rows = [np.lexsort((i, v, n) if smallest else (i, descending(v), ~n)) for i, v, n in
            zip(index.reshape(-1, x.shape[-1]), values.reshape(-1, x.shape[-1]), nan.reshape(-1, x.shape[-1]))]
    order = np.array(rows, np.int64).reshape(x.shape)[..., :desc.k]
    raw = np.ascontiguousarray(x).view(outputs[0].dtype)
    expected_values = np.moveaxis(np.take_along_axis(raw, order, -1), -1, desc.axis)
    assert np.array_equal(outputs[0], expected_values)
    assert np.array_equal(outputs[1], np.moveaxis(order, -1, desc.axis).astype(np.uint32))


def check_bounds_only(desc, inputs, outputs, dtype):
    """Operators whose values their own tests check against their references (test_gemm.py,
    test_matrix_multiply_integer.py, test_generation.py, test_adam_optimizer.py,
    test_random_generator.py): here the guarded device's canaries (checked by `execute`) prove
    that a desc the device accepts touches nothing outside its bound tensors."""


# Operators with more than one output, or a reference of their own.
ELEMENT_WISE_ROWS = {row.name: row for row in ELEMENT_WISE_TABLE}
CHECKS = {"prelu_grad": check_prelu_grad, **{name: check_rowwise for name in REFERENCES_ROWWISE},
          **{name: check_element_wise_family for name in ELEMENT_WISE_ROWS},
          **{name: check_reduction for name in ("reduce", "argmin", "argmax")},
          **{name: check_cumulative for name in ("cumulative_summation", "cumulative_product")},
          **{name: check_top_k for name in ("top_k", "top_k1")},
          **{name: check_bounds_only for name in ("gemm", "matrix_multiply_integer", "fill_value_constant",
                                                  "fill_value_sequence", "one_hot", "adam_optimizer",
                                                  "random_generator")}}


@fuzz
@given(case=operator_descs(), seed=st.integers(0, 2**32 - 1))
def test_fuzz_operator_descs_run_correctly_or_are_rejected(guarded, case, seed):
    schema, fields, scalars = case
    desc = outcome(lambda: schema.desc_class(**fields, **scalars))
    compiled = desc and outcome(lambda: guarded.compile_operator(guarded.create_operator(desc)))
    if compiled is None:
        return
    event(f"ran {schema.name}")
    rng = np.random.default_rng(seed)
    tensors = [getattr(desc, f.name) for f in schema.tensors]
    offsets = [(t.guaranteed_base_offset_alignment or 16) * int(rng.integers(0, 3)) for t in tensors]
    buffers = [guarded.create_buffer(o + t.total_tensor_size_in_bytes + int(rng.integers(0, 9)))
               for o, t in zip(offsets, tensors)]
    data = [fill(rng, b, t.element_size, data_type_info(t.data_type).numpy_dtype) for b, t in zip(buffers, tensors)]
    size = compiled.binding_properties.temporary_resource_size
    inputs = len(schema.inputs)
    table = guarded.create_binding_table(
        compiled, inputs=[dml.BufferBinding(b, o) for b, o in zip(buffers[:inputs], offsets)],
        outputs=[dml.BufferBinding(b, o) for b, o in zip(buffers[inputs:], offsets[inputs:])],
        temporary=guarded.create_buffer(size) if size else None)
    guarded.execute(table)  # GuardViolationError (a DmlError, but a bug) fails the test below
    check_result(schema, desc, data, offsets, buffers)


@pytest.fixture(scope="module")
def relu_grad_op(guarded):
    tensor = dml.BufferTensorDesc(T.FLOAT16, (3, 5))
    return guarded.compile_operator(guarded.create_operator(dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)))


@st.composite
def binding_items(draw, pool):
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return draw(anything)
    buffer = draw(st.sampled_from(pool))
    if kind < 10:
        return buffer
    offset = draw(mostly(st.sampled_from([0, 16, 32]), st.one_of(st.sampled_from([8, 2, -16, 48, 2**64]), anything)))
    size = draw(mostly(st.none(), st.one_of(st.sampled_from([0, 16, 29, 30, 32, 64, 2**40]), anything)))
    return dml.BufferBinding(buffer, offset, size)


@fuzz
@given(data=st.data())
def test_fuzz_bindings(guarded, relu_grad_op, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    pool = [guarded.create_buffer(size) for size in (16, 30, 32, 48, 64, 96)]
    for buffer in pool:
        fill(rng, buffer, 2, np.float16)
    if data.draw(st.booleans()):
        pool[data.draw(st.integers(0, len(pool) - 1))].destroy()
    counts = data.draw(mostly(st.just((2, 1)), st.tuples(st.integers(0, 3), st.integers(0, 2))))
    inputs = data.draw(st.lists(binding_items(pool), min_size=counts[0], max_size=counts[0]))
    outputs = data.draw(st.lists(binding_items(pool), min_size=counts[1], max_size=counts[1]))
    table = outcome(lambda: guarded.create_binding_table(relu_grad_op, inputs=inputs, outputs=outputs))
    if table is not None:
        event("bound")
        bound = [(t.buffer, t.offset) for t in (*table.inputs, *table.outputs)]
        contents = [b.read(np.uint8, b.size_in_bytes) for b, _ in bound[:2]]
        guarded.execute(table)
        tensor = relu_grad_op.desc.input_tensor
        x, dy = (gather(c, o, tensor).view(np.float16) for c, (_, o) in zip(contents, bound[:2]))
        out_buffer, out_offset = bound[2]
        result = gather(out_buffer.read(np.uint8, out_buffer.size_in_bytes), out_offset, tensor)
        assert np.array_equal(result, REFERENCES["relu_grad"](x, dy).view(np.uint16))
    for buffer in pool:
        buffer.destroy()


hostile_arrays = st.one_of(
    st.builds(lambda shape, dtype: np.ones(shape, dtype),
              st.lists(st.integers(0, 3), max_size=3).map(tuple),
              st.sampled_from([np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.int32, np.uint8, np.float64,
                               np.bool_, np.complex64, np.uint16])),
    anything, st.just(np.array(["a", "b"])), st.just(np.array([object()])))


@st.composite
def array_pairs(draw):
    """(x, dy, slope): mostly a matching pair of random views and a slope by oneDNN's rules."""
    if draw(st.integers(0, 3)) == 0:
        return draw(hostile_arrays), draw(hostile_arrays), draw(hostile_arrays)
    dtype = draw(st.sampled_from([np.float32, np.float16, ml_dtypes.bfloat16]))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    x, dy = ((rng.standard_normal(shape) * 3).astype(dtype) for _ in range(2))
    if draw(st.booleans()):
        x, dy = x.T, np.ascontiguousarray(dy.T)
    slope = (rng.standard_normal(draw(st.sampled_from([(x.shape[-1],), (1,), x.shape[1:] or (1,)]))) / 4).astype(dtype)
    return x, dy, slope


ELEMENTWISE_FRONT_ENDS = sorted([*REFERENCES, *REFERENCES_F64])


@fuzz
@given(name=st.sampled_from(ELEMENTWISE_FRONT_ENDS), arrays=array_pairs(),
       scalar_values=st.lists(mostly(st.one_of(st.floats(-2, 2), float_bit_patterns), st.one_of(st.floats(), anything)),
                              min_size=2, max_size=2),
       out=mostly(st.none(), hostile_arrays), use_dst=mostly(st.booleans(), anything),
       approximate=mostly(st.sampled_from(["none", "tanh"]), anything))
def test_fuzz_front_ends(device, name, arrays, scalar_values, out, use_dst, approximate):
    """Every element-wise front end of the operator table, with hostile arrays and scalars."""
    schema = dml.OPERATORS[name]
    inputs = list(arrays[:len(schema.inputs)])
    scalars = {s.name: value for s, value in zip(schema.scalars, scalar_values)}
    parameters = inspect.signature(getattr(dml, name)).parameters
    options = {"use_dst": use_dst} if "use_dst" in parameters else {}
    if "approximate" in parameters:
        options["approximate"] = approximate
    result = outcome(lambda: getattr(dml, name)(*inputs, **scalars, **options,
                                                out=out if isinstance(out, np.ndarray) else None, device=device))
    if result is not None:
        arrays = [np.asarray(a, result.dtype) for a in inputs]  # a Python scalar takes the arrays' dtype
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        assert_matches_reference(name, result, [np.broadcast_to(a, shape) for a in arrays], scalars,
                                 use_dst=options.get("use_dst") is True, form=options.get("approximate", "none"))
    event("computed" if result is not None else "rejected")


def slope_over(x, slope, data_format):
    """oneDNN's rules, in their order: per channel, per tensor, or shaped x.shape[1:]."""
    x, slope = np.asarray(x), np.asarray(slope)
    channel_axis = 1 if data_format == "NCX" else x.ndim - 1
    if slope.ndim == 1 and 0 <= channel_axis < x.ndim and slope.shape[0] == x.shape[channel_axis]:
        shape = [1] * x.ndim
        shape[channel_axis] = slope.shape[0]
        return np.broadcast_to(slope.reshape(shape), x.shape)
    return np.broadcast_to(slope if slope.shape == (1,) else slope[None], x.shape)


@fuzz
@given(arrays=array_pairs(), data_format=mostly(st.just("NXC"), st.one_of(st.just("NCX"), anything)))
def test_fuzz_prelu_grad_front_end(device, arrays, data_format):
    x, dy, slope = arrays
    result = outcome(lambda: dml.prelu_grad(x, slope, dy, data_format=data_format, device=device))
    if result is not None:
        assert result[0].shape == np.shape(x) and result[1].shape == np.shape(slope)
        x, dy = (np.asarray(v, result[0].dtype) for v in (x, dy))  # a list of Python numbers takes slope's dtype
        if x.size == 0:  # nothing computed
            return
        expected_dx, _, _ = prelu_grad(x, slope_over(x, slope, data_format), dy, ())
        assert np.array_equal(result[0].view(UNSIGNED[x.itemsize]), expected_dx.view(UNSIGNED[x.itemsize]))
    event("computed" if result is not None else "rejected")


@fuzz
@given(size=st.one_of(huge_ints, anything))
def test_fuzz_buffer_sizes(device, size):
    buffer = outcome(lambda: device.create_buffer(size))
    if buffer is not None:
        assert buffer.read(np.uint8, min(buffer.size_in_bytes, 64)).sum() == 0
        buffer.destroy()


class UncheckedTensorDesc(dml.BufferTensorDesc):
    def __post_init__(self):  # a subclass that skips every rule
        pass


@st.composite
def tampering(draw):
    """What a caller does to a valid desc: change a tensor after create_operator, or pass a
    subclass that never validated its values."""
    how = draw(st.sampled_from(["mutate_after_create", "mutate_before_create", "unchecked_subclass"]))
    attribute = draw(st.sampled_from(["sizes", "strides", "total_tensor_size_in_bytes", "data_type",
                                      "guaranteed_base_offset_alignment"]))
    value = draw(st.one_of(st.lists(st.integers(-4, 5000), min_size=1, max_size=3).map(tuple), ints,
                           st.sampled_from(list(T)), anything))
    return how, attribute, value


@fuzz
@given(case=operator_descs(), tamper=tampering(), seed=st.integers(0, 2**32 - 1))
def test_fuzz_mutated_and_subclassed_descs(guarded, case, tamper, seed):
    """The operator runs the desc as it was validated, or the tampered desc is refused;
    the guarded device proves nothing outside the bound outputs changed either way."""
    schema, fields, scalars = case
    desc = outcome(lambda: schema.desc_class(**fields, **scalars))
    if desc is None:
        return
    how, attribute, value = tamper
    victim_field = schema.tensors[seed % len(schema.tensors)].name
    victim = getattr(desc, victim_field)
    if victim is None:  # a fusable activation with every tensor None: only a nested form, never bound
        with pytest.raises(dml.DmlError, match="None"):
            guarded.create_operator(desc)
        return
    if how == "unchecked_subclass":
        values = {name: getattr(victim, name) for name in ("data_type", "sizes", "strides", "flags",
                                                           "total_tensor_size_in_bytes",
                                                           "guaranteed_base_offset_alignment")}
        values[attribute] = value
        object.__setattr__(desc, victim_field, UncheckedTensorDesc(**values))
    elif how == "mutate_before_create":
        object.__setattr__(victim, attribute, value)
    op = outcome(lambda: guarded.create_operator(desc))
    if op is None:
        return
    if how == "mutate_after_create":
        object.__setattr__(victim, attribute, value)
    compiled = outcome(lambda: guarded.compile_operator(op))
    if compiled is None:
        return
    event(f"ran after {how}")
    own = compiled.desc  # the device's copy: what was validated
    rng = np.random.default_rng(seed)
    tensors = [getattr(own, f.name) for f in schema.tensors]
    if max(t.total_tensor_size_in_bytes for t in tensors) > 1 << 20:
        event("validated; too large to run here")
        return
    buffers = [guarded.create_buffer(t.total_tensor_size_in_bytes + 64) for t in tensors]
    data = [fill(rng, b, t.element_size, data_type_info(t.data_type).numpy_dtype) for b, t in zip(buffers, tensors)]
    size = compiled.binding_properties.temporary_resource_size
    inputs = len(schema.inputs)
    table = guarded.create_binding_table(compiled, inputs=buffers[:inputs], outputs=buffers[inputs:],
                                         temporary=guarded.create_buffer(size) if size else None)
    guarded.execute(table)
    check_result(schema, own, data, [0] * len(tensors), buffers)


@fuzz
@given(damage=st.sampled_from(["random_bytes", "flip", "truncate", "fifo", "symlink", "empty",
                               "valid_header_zero_body"]), seed=st.integers(0, 2**32 - 1))
def test_fuzz_planted_cache_entries(tmp_path_factory, damage, seed):
    """Whatever damage lies in the cache under a shader's key, the operator compiles and is
    right. (SPIR-V that is valid but different, under a recomputed digest, can only come from
    the cache's owner, who could as well edit dmlpy: see docs/ownership.md.)"""
    import hashlib

    directory = tmp_path_factory.mktemp("cache")
    previous = os.environ.get("DMLPY_CACHE_DIR")
    os.environ["DMLPY_CACHE_DIR"] = str(directory)
    try:
        rng = np.random.default_rng(seed)
        tensor = dml.BufferTensorDesc(T.FLOAT32, (int(rng.integers(1, 9)), 3), (1, 16))
        desc = dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)

        def run():
            with dml.create_device() as device:
                compiled = device.compile_operator(device.create_operator(desc))
                buffers = [device.create_buffer(tensor.total_tensor_size_in_bytes) for _ in range(3)]
                x = rng.standard_normal(tensor.total_tensor_size_in_bytes // 4).astype(np.float32)
                buffers[0].write(x)
                buffers[1].write(np.ones_like(x))
                device.execute(device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:]))
                got = gather(buffers[2].read(np.uint8, tensor.total_tensor_size_in_bytes), 0, tensor)
                expected = REFERENCES["relu_grad"](gather(x.view(np.uint8), 0, tensor).view(np.float32),
                                     np.ones(tensor.sizes, np.float32))
                assert np.array_equal(got, expected.view(np.uint32))

        run()
        probe = cache_entry_name(shader_source("denormal_probe.comp", {}))  # a device caches its probe too
        (entry,) = [e for e in directory.glob("*.spv") if e.name != probe]
        blob = entry.read_bytes()
        entry.unlink()
        if damage == "random_bytes":
            entry.write_bytes(rng.integers(0, 256, int(rng.integers(0, 4096)), dtype=np.uint8).tobytes())
        elif damage == "flip":  # storage damage: the digest no longer matches
            damaged = bytearray(blob)
            damaged[int(rng.integers(0, len(damaged)))] ^= 1 << int(rng.integers(0, 8))
            entry.write_bytes(bytes(damaged))
        elif damage == "valid_header_zero_body":  # a digest that matches SPIR-V no driver should see
            spirv = blob[32:52] + bytes(len(blob) - 52)
            entry.write_bytes(hashlib.sha256(spirv).digest() + spirv)
        elif damage == "truncate":
            entry.write_bytes(blob[:int(rng.integers(0, len(blob)))])
        elif damage == "fifo":
            os.mkfifo(entry)
        elif damage == "symlink":
            entry.symlink_to("/dev/zero")
        else:
            entry.write_bytes(b"")
        run()
        event(damage)
    finally:
        if previous is None:
            del os.environ["DMLPY_CACHE_DIR"]
        else:
            os.environ["DMLPY_CACHE_DIR"] = previous
