"""FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE and ONE_HOT against plain NumPy references (every
data type DirectML lists up to 32 bits, strided outputs, float special values, integer
wrap-around, one-hot on every axis), DirectML's rules and their errors, and feature levels."""

import ml_dtypes
import numpy as np
import pytest
from messages import check_level, raises

import dmlpy as dml

T = dml.TensorDataType
FL = dml.FeatureLevel
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16, T.INT32: np.int32,
         T.INT16: np.int16, T.INT8: np.int8, T.UINT32: np.uint32, T.UINT16: np.uint16, T.UINT8: np.uint8}
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)
INTEGERS = (T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8)
UNSIGNED = {np.int8: np.uint8, np.int16: np.uint16, np.int32: np.uint32}


def run(device, desc, inputs=()):
    """The operator's output as its tensor reads (through its strides)."""
    compiled = device.compile_operator(device.create_operator(desc))
    buffers = []
    for tensor, values in inputs:
        buffers.append(device.create_buffer(tensor=tensor))
        buffers[-1].write(values)
    output = device.create_buffer(tensor=desc.output_tensor)
    device.execute(device.create_binding_table(compiled, inputs=buffers, outputs=[output]))
    return output.read()


def same_bits(actual, expected):
    """Equal bit for bit, except that any NaN equals any NaN."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if actual.dtype.kind == "f" or actual.dtype == ml_dtypes.bfloat16:
        wide_a, wide_e = actual.astype(np.float32), expected.astype(np.float32)
        nan = np.isnan(wide_a)
        assert np.array_equal(nan, np.isnan(wide_e))
        unsigned = {2: np.uint16, 4: np.uint32}[actual.itemsize]
        assert np.array_equal(actual.view(unsigned)[~nan], expected.view(unsigned)[~nan])
    else:
        assert np.array_equal(actual, expected)


# The references: written plainly, element by element, from DirectML's pseudocode.

def constant_reference(shape, value, data_type):
    dtype = NUMPY[data_type]
    if data_type in FLOATS:
        with np.errstate(over="ignore"):
            return np.full(shape, np.float32(value)).astype(dtype)  # the union's Float32 member, rounded once
    bits = np.dtype(dtype).itemsize * 8
    unsigned = UNSIGNED.get(dtype, dtype)
    return np.full(shape, value % 2**bits, np.uint64).astype(unsigned).view(dtype)


def sequence_reference(shape, start, delta, data_type):
    dtype = NUMPY[data_type]
    count = int(np.prod(shape))
    if data_type in FLOATS:
        values = []
        for i in range(count):
            if i == 0:
                values.append(np.float32(start))
            else:
                with np.errstate(invalid="ignore", over="ignore"):
                    product = np.float32(np.float32(i) * np.float32(delta))
                    values.append(np.float32(np.float32(start) + product))
        return np.array(values, np.float32).astype(dtype).reshape(shape)
    bits = np.dtype(dtype).itemsize * 8
    unsigned = UNSIGNED.get(dtype, dtype)
    wrapped = [(start + i * delta) % 2**bits for i in range(count)]
    return np.array(wrapped, np.uint64).astype(unsigned).view(dtype).reshape(shape)


def one_hot_reference(indices, off, on, axis, depth):
    """indices has a size of 1 along axis; the output has depth there."""
    shape = list(indices.shape)
    shape[axis] = depth
    output = np.empty(shape, np.asarray(off).dtype)
    for position in np.ndindex(*shape):
        row = list(position)
        row[axis] = 0
        index = int(indices[tuple(row)])
        if index < 0:
            index += depth
        output[position] = on if index == position[axis] else off
    return output


def output(data_type, sizes, strides=None):
    return dml.BufferTensorDesc(data_type, sizes, strides)


# FILL_VALUE_CONSTANT

@pytest.mark.parametrize("data_type", [*FLOATS, *INTEGERS], ids=lambda t: t.name)
def test_constant_fills_every_data_type(device, data_type):
    value = -2.75 if data_type in FLOATS else -5 if data_type.name.startswith("I") else 200
    desc = dml.FillValueConstantOperatorDesc(output(data_type, (2, 3, 5)), data_type, value)
    same_bits(run(device, desc), constant_reference((2, 3, 5), value, data_type))


@pytest.mark.parametrize("value", [np.inf, -np.inf, -0.0, 0.1, 65519.0, 1e-40, 3e38])
def test_constant_float_special_values_round_once_from_fp32(device, value):
    for data_type in (T.FLOAT32, T.FLOAT16):
        desc = dml.FillValueConstantOperatorDesc(output(data_type, (7,)), data_type, value)
        same_bits(run(device, desc), constant_reference((7,), value, data_type))


def test_constant_integer_members_are_bits_of_the_width(device):
    """-1 is a UINT8's 255, as DirectML's union members share their bits."""
    for data_type, value in ((T.UINT8, -1), (T.UINT32, -2), (T.INT16, 65535), (T.INT32, -2**31)):
        desc = dml.FillValueConstantOperatorDesc(output(data_type, (7,)), data_type, value)
        same_bits(run(device, desc), constant_reference((7,), value, data_type))


def test_constant_strided_output_writes_only_its_elements(device):
    tensor = output(T.UINT8, (2, 3), (8, 2))  # a padded, stepped layout: the gaps stay 0
    desc = dml.FillValueConstantOperatorDesc(tensor, None, 7)
    compiled = device.compile_operator(device.create_operator(desc))
    buffer = device.create_buffer(tensor=tensor)
    device.execute(device.create_binding_table(compiled, inputs=[], outputs=[buffer]))
    raw = buffer.read(np.uint8, 13)
    expected = np.zeros(13, np.uint8)
    expected[[0, 2, 4, 8, 10, 12]] = 7
    assert np.array_equal(raw, expected)


# FILL_VALUE_SEQUENCE

@pytest.mark.parametrize("data_type", FLOATS, ids=lambda t: t.name)
def test_sequence_floats_are_start_plus_index_times_delta_rounded_each_step(device, data_type):
    desc = dml.FillValueSequenceOperatorDesc(output(data_type, (3, 70, 9)), data_type, 1e3 + 0.1, 1 / 3)
    same_bits(run(device, desc), sequence_reference((3, 70, 9), 1e3 + 0.1, 1 / 3, data_type))


@pytest.mark.parametrize("start, delta", [(-0.0, 1.0), (np.inf, -np.inf), (1.0, np.inf), (-0.0, -0.0),
                                          (3e38, 3e38), (1e-45, 1e-45)])
def test_sequence_float_special_values(device, start, delta):
    desc = dml.FillValueSequenceOperatorDesc(output(T.FLOAT32, (6,)), T.FLOAT32, start, delta)
    result = run(device, desc)
    same_bits(result, sequence_reference((6,), start, delta, T.FLOAT32))
    assert result.view(np.uint32)[0] == np.float32(start).view(np.uint32)  # the first element is ValueStart itself


@pytest.mark.parametrize("data_type, start, delta", [
    (T.INT8, 120, 3), (T.INT16, -32000, -1000), (T.INT32, 2**31 - 2, 1), (T.UINT8, 10, -2), (T.UINT16, 65530, 7),
    (T.UINT32, 2**32 - 3, 2**31 + 1)], ids=lambda v: getattr(v, "name", None))
def test_sequence_integers_wrap_around(device, data_type, start, delta):
    desc = dml.FillValueSequenceOperatorDesc(output(data_type, (2, 3, 5)), data_type, start, delta)
    same_bits(run(device, desc), sequence_reference((2, 3, 5), start, delta, data_type))


def test_sequence_follows_sizes_in_row_major_order_whatever_the_strides(device):
    tensor = output(T.INT32, (3, 4), (1, 3))  # column-major storage
    desc = dml.FillValueSequenceOperatorDesc(tensor, T.INT32, 5, -2)
    same_bits(run(device, desc), sequence_reference((3, 4), 5, -2, T.INT32))


def test_directml_examples(device):
    first = dml.FillValueSequenceOperatorDesc(output(T.FLOAT32, (1, 1, 1, 3)), T.FLOAT32, 3, 2)
    assert run(device, first).tolist() == [[[[3, 5, 7]]]]
    second = dml.FillValueSequenceOperatorDesc(output(T.UINT8, (1, 1, 2, 2)), T.UINT8, 10, -2)
    assert run(device, second).tolist() == [[[[10, 8], [6, 4]]]]
    constant = dml.FillValueConstantOperatorDesc(output(T.FLOAT32, (1, 1, 2, 4)), T.FLOAT32, 13.0)
    assert run(device, constant).tolist() == [[[[13.0] * 4] * 2]]


@pytest.mark.parametrize("data_type, start, delta", [
    (T.INT64, 2**63 - 3, 1), (T.INT64, -5, -(2**40) - 3), (T.UINT64, 2**64 - 2, 2**63 + 1)],
    ids=lambda v: getattr(v, "name", None))
def test_sequence_64_bit_integers_wrap_around(device, data_type, start, delta):
    tensor = output(data_type, (2, 3), (1, 2))
    expected = np.array([(start + i * delta) % 2**64 for i in range(6)], np.uint64).reshape(2, 3)
    assert np.array_equal(run(device, dml.FillValueSequenceOperatorDesc(tensor, data_type, start, delta)),
                          expected.view(np.int64 if data_type is T.INT64 else np.uint64))


def test_constant_64_bit_types_keep_every_bit(device):
    for data_type, value, dtype in ((T.FLOAT64, 0.1, np.float64), (T.FLOAT64, 1e300, np.float64),
                                    (T.FLOAT64, -0.0, np.float64), (T.INT64, -(2**62) - 1, np.int64),
                                    (T.UINT64, 2**64 - 1, np.uint64)):
        result = run(device, dml.FillValueConstantOperatorDesc(output(data_type, (3,)), data_type, value))
        assert np.array_equal(result.view(np.uint64), np.full(3, value, dtype).view(np.uint64))


# ONE_HOT

def one_hot_desc(index_type, indices_shape, value_type, values_sizes, axis, depth, output_strides=None):
    sizes = list(indices_shape)
    sizes[axis] = depth
    return dml.OneHotOperatorDesc(dml.BufferTensorDesc(index_type, indices_shape),
                                  dml.BufferTensorDesc(value_type, values_sizes),
                                  output(value_type, tuple(sizes), output_strides), axis)


@pytest.mark.parametrize("axis", range(4))
def test_one_hot_on_every_axis_with_negative_and_out_of_range_indices(device, axis):
    rng = np.random.default_rng(axis)
    shape = [2, 3, 4, 5]
    shape[axis] = 1
    depth = 5
    indices = rng.integers(-7, 8, shape).astype(np.int32)  # -6, -7 and 5..7 are out of range
    values = np.array([-1.5, 2.25], np.float32)
    desc = one_hot_desc(T.INT32, tuple(shape), T.FLOAT32, (1, 1, 1, 2), axis, depth)
    result = run(device, desc, [(desc.indices_tensor, indices), (desc.values_tensor, values)])
    same_bits(result, one_hot_reference(indices, values[0], values[1], axis, depth))


@pytest.mark.parametrize("data_type", [*FLOATS, *INTEGERS], ids=lambda t: t.name)
def test_one_hot_copies_the_values_bits_of_every_data_type(device, data_type):
    dtype = NUMPY[data_type]
    if data_type in FLOATS:
        unsigned = {2: np.uint16, 4: np.uint32}[np.dtype(dtype).itemsize]
        off = np.array([-0.0], dtype)[0]
        on = np.array([0x7E01 if unsigned is np.uint16 else 0x7FC00001], unsigned).view(dtype)[0]  # a NaN payload
    else:
        info = np.iinfo(dtype)
        off, on = dtype(info.max), dtype(info.min)
    indices = np.array([0, 3, 2, 2**32 - 1], np.uint32).reshape(4, 1)  # 2**32 - 1: out of range, not -1
    desc = one_hot_desc(T.UINT32, (4, 1), data_type, (1, 2), 1, 3)
    result = run(device, desc, [(desc.indices_tensor, indices), (desc.values_tensor, np.array([off, on], dtype))])
    expected = one_hot_reference(indices.astype(np.int64), off, on, 1, 3)
    if data_type in FLOATS:
        assert np.array_equal(result.view(unsigned), expected.view(unsigned))  # the NaN's payload kept
    else:
        same_bits(result, expected)


@pytest.mark.parametrize("index_type", [T.INT64, T.UINT64], ids=lambda t: t.name)
def test_one_hot_64_bit_indices(device, index_type):
    dtype = np.int64 if index_type is T.INT64 else np.uint64
    raw = [0, 3, -1, -4, -5, 2**32, -(2**32) + 1, 2**40 + 1] if index_type is T.INT64 else [0, 3, 2**32 + 1, 2**64 - 1]
    indices = np.array([v % 2**64 for v in raw], np.uint64).view(dtype).reshape(-1, 1)
    desc = one_hot_desc(index_type, indices.shape, T.INT16, (2, 1), 1, 4)
    values = np.array([7, -9], np.int16)
    result = run(device, desc, [(desc.indices_tensor, indices), (desc.values_tensor, values)])
    reference_indices = np.array(raw, object).reshape(-1, 1) if index_type is T.INT64 else \
        np.array([v if v < 2**63 else 99 for v in raw], object).reshape(-1, 1)
    same_bits(result, one_hot_reference(reference_indices, values[0], values[1], 1, 4))


@pytest.mark.parametrize("value_type", [T.FLOAT64, T.INT64, T.UINT64], ids=lambda t: t.name)
def test_one_hot_copies_64_bit_values_word_for_word(device, value_type):
    """FEATURE_LEVEL_4_1's FLOAT64, INT64 and UINT64 values: both words of off and on copied
    as they are (a FLOAT64 NaN's payload, each integer type's ends), with 32- and 64-bit
    indices, into packed and strided outputs."""
    dtype = {T.FLOAT64: np.float64, T.INT64: np.int64, T.UINT64: np.uint64}[value_type]
    if value_type is T.FLOAT64:
        off = dtype(-0.0)
        on = np.array([0x7FF0000000000001 | 1 << 40], np.uint64).view(dtype)[0]  # a signalling NaN's payload
    else:
        info = np.iinfo(dtype)
        off, on = dtype(info.max), dtype(info.min)
    values = np.array([off, on], dtype)
    for index_type, index_dtype in ((T.UINT32, np.uint32), (T.INT64, np.int64)):
        indices = np.array([0, 3, 2, 1, 5], index_dtype).reshape(5, 1)
        for strides in (None, (1, 5)):
            desc = one_hot_desc(index_type, (5, 1), value_type, (1, 2), 1, 4, output_strides=strides)
            result = run(device, desc, [(desc.indices_tensor, indices), (desc.values_tensor, values)])
            expected = one_hot_reference(indices.astype(np.int64), off, on, 1, 4)
            assert np.array_equal(result.view(np.uint64), expected.view(np.uint64)), (index_type, strides)
    got = dml.one_hot(np.array([2, -1]), 3, values, device=device)
    assert got.dtype == dtype and np.array_equal(got.view(np.uint64), np.array([[off, off, on], [off, off, on]],
                                                                                dtype).view(np.uint64))


def test_one_hot_reads_on_along_the_fastest_changing_dimension_of_size_above_one(device):
    """DirectML's example 3: ValuesTensor {1,1,3,1}: off 4, on 2 (9 unused); and a strided output."""
    indices = np.array([0, 3, 2], np.uint32).reshape(1, 1, 3, 1)
    desc = one_hot_desc(T.UINT32, (1, 1, 3, 1), T.FLOAT32, (1, 1, 3, 1), 3, 4, output_strides=(0, 0, 1, 3))
    result = run(device, desc, [(desc.indices_tensor, indices), (desc.values_tensor, np.array([4, 2, 9], np.float32))])
    assert result.tolist() == [[[[2, 4, 4, 4], [4, 4, 4, 2], [4, 4, 2, 4]]]]


# Front ends

def test_front_ends(device):
    same_bits(dml.fill_value_constant((2, 3), -1, np.uint16, device=device), np.full((2, 3), 65535, np.uint16))
    same_bits(dml.fill_value_sequence(5, 0.5, 0.25, np.float32, device=device),
              np.array([0.5, 0.75, 1.0, 1.25, 1.5], np.float32))
    assert dml.fill_value_constant((), 3.5, np.float32, device=device).shape == ()
    assert dml.fill_value_sequence((0, 4), 1, 1, np.int8, device=device).shape == (0, 4)
    tf_example = dml.one_hot([0, 2, -1, 1], 3, (0.0, 5.0), device=device)  # TensorFlow's own example
    assert tf_example.dtype == np.float32
    assert tf_example.tolist() == [[5, 0, 0], [0, 0, 5], [0, 0, 5], [0, 5, 0]]  # -1 is the last, as DirectML's
    by_rows = dml.one_hot(np.array([[0, 2], [1, 7]]), 3, np.array([3, 9], np.int8), axis=0, device=device)
    assert by_rows.dtype == np.int8
    same_bits(by_rows, one_hot_reference(np.array([[[0, 2], [1, 7]]]), np.int8(3), np.int8(9), 0, 3))


def test_front_end_errors(device):
    with raises(dml.InvalidArgumentError, "depth 0", "at least 1"):
        dml.one_hot([0], 0, device=device)
    with raises(dml.InvalidArgumentError, "axis 2", "[-2, 1]"):
        dml.one_hot([0], 3, axis=2, device=device)
    with raises(dml.InvalidArgumentError, "values", "two values"):
        dml.one_hot([0], 3, (0, 1, 2), device=device)
    with raises(dml.InvalidArgumentError, "indices", "int32, uint32, int64 or uint64"):
        dml.one_hot([0.5], 3, device=device)
    with raises(dml.InvalidArgumentError, "shape", "non-negative"):
        dml.fill_value_constant((2, -1), 0, np.float32, device=device)
    with raises(dml.InvalidArgumentError, "value 1.5", "not a value of INT8"):
        dml.fill_value_constant((2,), 1.5, np.int8, device=device)


# Rules and their errors

def test_fill_rules():
    out = output(T.FLOAT32, (2, 3))
    with raises(dml.InvalidArgumentError, "value_data_type FLOAT16 != output_tensor.data_type FLOAT32",
                "ValueDataType must match OutputTensor.DataType"):
        dml.FillValueConstantOperatorDesc(out, T.FLOAT16, 1.0)
    with raises(dml.InvalidArgumentError, "value_data_type", "DML_TENSOR_DATA_TYPE"):
        dml.FillValueSequenceOperatorDesc(out, 3, 1.0, 1.0)
    assert dml.FillValueConstantOperatorDesc(out, "FLOAT32", 1.0).value_data_type is T.FLOAT32
    with raises(dml.InvalidArgumentError, "value is NaN", "Value must be a number"):
        dml.FillValueConstantOperatorDesc(out, T.FLOAT32, float("nan"))
    with raises(dml.InvalidArgumentError, "value_delta True", "must be a number (ValueDelta)"):
        dml.FillValueSequenceOperatorDesc(out, T.FLOAT32, 1.0, True)
    with raises(dml.InvalidArgumentError, "value 1e+39", "beyond FP32's range"):
        dml.FillValueConstantOperatorDesc(out, T.FLOAT32, 1e39)
    assert dml.FillValueConstantOperatorDesc(output(T.FLOAT64, (2,)), None, 1e39).value == 1e39
    assert dml.FillValueSequenceOperatorDesc(out).value_delta == 1  # dmlpy's defaults: the output's type, 0, 1
    for data_type, value in ((T.INT8, 256), (T.INT8, -129), (T.UINT32, 2**32), (T.INT16, 1.0)):
        with raises(dml.InvalidArgumentError, f"value_start {value!r} is not a value of {data_type.name}",
                    "ValueStart is read as ValueDataType"):
            dml.FillValueSequenceOperatorDesc(output(data_type, (2,)), data_type, value, 1)
    with raises(dml.InvalidArgumentError, "output_tensor.strides", "must not write any element twice"):
        dml.FillValueConstantOperatorDesc(output(T.FLOAT32, (2, 3), (0, 1)), T.FLOAT32, 1.0)
    with raises(dml.InvalidArgumentError, "INT4 is not supported", "FILL_VALUE_SEQUENCE accepts"):
        dml.FillValueSequenceOperatorDesc(output(T.INT4, (4,)), T.INT4, 1, 1)


def test_one_hot_rules():
    indices, values = dml.BufferTensorDesc(T.UINT32, (2, 1)), dml.BufferTensorDesc(T.FLOAT32, (1, 2))
    out = output(T.FLOAT32, (2, 4))
    with raises(dml.InvalidArgumentError, "axis 2", "Axis must be less than the DimensionCount of the IndicesTensor"):
        dml.OneHotOperatorDesc(indices, values, out, 2)
    with raises(dml.InvalidArgumentError, "axis -1", "Axis"):
        dml.OneHotOperatorDesc(indices, values, out, -1)
    with raises(dml.InvalidArgumentError, "indices_tensor.sizes (2, 1) must be (1, 4)", "whose size must be 1"):
        dml.OneHotOperatorDesc(indices, values, out, 0)
    with raises(dml.InvalidArgumentError, "values_tensor.sizes (1, 1)", "at least two elements"):
        dml.OneHotOperatorDesc(indices, dml.BufferTensorDesc(T.FLOAT32, (1, 1)), out, 1)
    with raises(dml.InvalidArgumentError, "output_tensor.data_type FLOAT16 != values_tensor.data_type FLOAT32",
                "ValuesTensor and OutputTensor must have the same DataType"):
        dml.OneHotOperatorDesc(indices, values, output(T.FLOAT16, (2, 4)), 1)
    with raises(dml.InvalidArgumentError, "values_tensor.dimension_count 1", "same DimensionCount"):
        dml.OneHotOperatorDesc(indices, dml.BufferTensorDesc(T.FLOAT32, (2,)), out, 1)
    with raises(dml.InvalidArgumentError, "indices_tensor.data_type FLOAT32", "IndicesTensor must be"):
        dml.OneHotOperatorDesc(dml.BufferTensorDesc(T.FLOAT32, (2, 1)), values, out, 1)
    with raises(dml.InvalidArgumentError, "indices_tensor.data_type INT16", "IndicesTensor must be"):
        dml.OneHotOperatorDesc(dml.BufferTensorDesc(T.INT16, (2, 1)), values, out, 1)


# Feature levels and what dmlpy's kernels refuse

def test_feature_levels(device_at):
    four = output(T.FLOAT32, (1, 1, 2, 3))
    fill_4d = dml.FillValueConstantOperatorDesc(four, T.FLOAT32, 1.0)
    fill_2d = dml.FillValueSequenceOperatorDesc(output(T.INT8, (2, 3)), T.INT8, 1, 1)
    check_level(device_at, FL.LEVEL_2_0, fill_4d, False, "FILL_VALUE_CONSTANT needs FEATURE_LEVEL_2_1")
    check_level(device_at, FL.LEVEL_2_1, fill_4d, True)
    check_level(device_at, FL.LEVEL_3_1, fill_2d, False, "INT8 with 2 dimensions needs FEATURE_LEVEL_4_0")
    check_level(device_at, FL.LEVEL_4_0, fill_2d, True)
    float64 = dml.FillValueConstantOperatorDesc(output(T.FLOAT64, (2,)), T.FLOAT64, 1.0)
    check_level(device_at, FL.LEVEL_4_0, float64, False, "FLOAT64 with 1 dimensions needs FEATURE_LEVEL_4_1")
    int64 = dml.FillValueSequenceOperatorDesc(output(T.INT64, (2,)), T.INT64, 1, 1)
    check_level(device_at, FL.LEVEL_4_1, int64, False, "INT64 with 1 dimensions needs FEATURE_LEVEL_5_0")
    check_level(device_at, FL.LEVEL_4_1, float64, True)
    check_level(device_at, FL.LEVEL_5_0, int64, True)

    values = dml.BufferTensorDesc(T.FLOAT16, (1, 1, 1, 2))
    one_hot = dml.OneHotOperatorDesc(dml.BufferTensorDesc(T.UINT32, (1, 1, 3, 1)), values,
                                     output(T.FLOAT16, (1, 1, 3, 4)), 3)
    check_level(device_at, FL.LEVEL_1_0, one_hot, False, "ONE_HOT needs FEATURE_LEVEL_2_0")
    check_level(device_at, FL.LEVEL_2_0, one_hot, True)
    signed = dml.OneHotOperatorDesc(dml.BufferTensorDesc(T.INT32, (1, 1, 3, 1)), values,
                                    output(T.FLOAT16, (1, 1, 3, 4)), 3)
    check_level(device_at, FL.LEVEL_2_1, signed, False, "INT32 needs FEATURE_LEVEL_3_0", "UINT32 before it")
    check_level(device_at, FL.LEVEL_3_0, signed, True)
    int8 = dml.OneHotOperatorDesc(dml.BufferTensorDesc(T.UINT32, (1, 1, 3, 1)),
                                  dml.BufferTensorDesc(T.INT8, (1, 1, 1, 2)), output(T.INT8, (1, 1, 3, 4)), 3)
    check_level(device_at, FL.LEVEL_2_0, int8, False, "INT8 with 4 dimensions needs FEATURE_LEVEL_2_1")
    check_level(device_at, FL.LEVEL_2_1, int8, True)
    two_d = dml.OneHotOperatorDesc(dml.BufferTensorDesc(T.UINT32, (3, 1)), dml.BufferTensorDesc(T.FLOAT32, (1, 2)),
                                   output(T.FLOAT32, (3, 4)), 1)
    check_level(device_at, FL.LEVEL_2_1, two_d, False, "2 dimensions needs FEATURE_LEVEL_3_0")
    check_level(device_at, FL.LEVEL_3_0, two_d, True)
    int64_indices = dml.OneHotOperatorDesc(dml.BufferTensorDesc(T.INT64, (3, 1)),
                                           dml.BufferTensorDesc(T.FLOAT32, (1, 2)), output(T.FLOAT32, (3, 4)), 1)
    check_level(device_at, FL.LEVEL_2_1, int64_indices, False, "INT64 needs FEATURE_LEVEL_3_0")
    check_level(device_at, FL.LEVEL_3_0, int64_indices, True)
    for value_type in (T.FLOAT64, T.INT64, T.UINT64):  # FEATURE_LEVEL_4_1's
        wide = dml.OneHotOperatorDesc(dml.BufferTensorDesc(T.UINT32, (3, 1)), dml.BufferTensorDesc(value_type, (1, 2)),
                                      output(value_type, (3, 4)), 1)
        check_level(device_at, FL.LEVEL_4_0, wide, False, value_type.name, "FEATURE_LEVEL_4_1")
        check_level(device_at, FL.LEVEL_4_1, wide, True)


def test_bfloat16_is_a_dmlpy_extension():
    with dml.create_device(strict_directml=True) as strict:
        with raises(dml.UnsupportedError, "BFLOAT16 is a dmlpy extension", "strict_directml=True"):
            strict.create_operator(dml.FillValueConstantOperatorDesc(output(T.BFLOAT16, (2,)), T.BFLOAT16, 1.0))


def test_one_hot_in_a_graph_takes_its_depth(device):
    """dmlpy.graph.one_hot sizes its output from `depth` along the axis (DirectML takes it from
    OutputTensor's sizes, which a graph function makes), with the front end's values."""
    builder = dml.GraphBuilder(device)
    indices = builder.input(dml.BufferTensorDesc(T.INT32, (1, 1, 5, 1)))
    values = builder.input(dml.BufferTensorDesc(T.FLOAT32, (1, 1, 1, 2)))
    hot = dml.graph.one_hot(indices, values, axis=3, depth=4)
    assert hot.desc.sizes == (1, 1, 5, 4)
    compiled = builder.build([hot])
    labels, pair = np.array([0, 3, -1, 4, 2], np.int32), np.array([0.5, 2.0], np.float32)
    buffers = [device.create_buffer(tensor=t) for _, t in compiled.input_tensors]
    buffers[0].write(labels)
    buffers[1].write(pair)
    output = device.create_buffer(tensor=hot.desc)
    device.execute(device.create_binding_table(compiled, inputs=buffers, outputs=[output]))
    expected = dml.one_hot(labels.reshape(5, 1), 4, values=pair, axis=-1, device=device).reshape(1, 1, 5, 4)
    assert np.array_equal(output.read().reshape(1, 1, 5, 4), expected)
    with raises(dml.InvalidArgumentError, "depth 0", "size along the axis"):
        dml.graph.one_hot(indices, values, axis=3, depth=0)
    with raises(dml.InvalidArgumentError, "depth"):
        dml.graph.one_hot(indices, values, axis=3)
