"""MATRIX_MULTIPLY_INTEGER: INT8/UINT8 products less their zero points, exact in INT32 against
NumPy's int64 products (wrapped to 32 bits), with DirectML's rules and their errors."""

import numpy as np
import pytest
from messages import raises

import dmlpy as dml

T = dml.TensorDataType
RNG = np.random.default_rng(57)
TYPES = {np.int8: T.INT8, np.uint8: T.UINT8}


def integers(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def reference(a, b, a_zero=None, b_zero=None):
    """(a - a_zero) @ (b - b_zero) in int64, kept to its low 32 bits as two's complement."""
    a = a.astype(np.int64) - (0 if a_zero is None else a_zero.astype(np.int64))
    b = b.astype(np.int64) - (0 if b_zero is None else b_zero.astype(np.int64))
    return (a @ b).astype(np.int32)


def desc(array, strides=None):
    return dml.BufferTensorDesc(TYPES[array.dtype.type], array.shape, strides)


@pytest.mark.parametrize("a_type, b_type", [(np.int8, np.int8), (np.uint8, np.int8), (np.int8, np.uint8),
                                            (np.uint8, np.uint8)])
def test_every_type_pair_and_zero_point_layout_is_exact(device, a_type, b_type):
    a, b = integers(a_type, (2, 1, 6, 37)), integers(b_type, (2, 1, 37, 5))
    for a_zero, b_zero in [(None, None), (integers(a_type, (6, 1)), integers(b_type, (1, 1))),
                           (integers(a_type, (1, 1)), integers(b_type, (1, 5)))]:
        result = dml.matrix_multiply_integer(a, b, None if a_zero is None else a_zero.reshape(-1),
                                             None if b_zero is None else b_zero.reshape(-1), device=device)
        assert result.dtype == np.int32
        assert np.array_equal(result, reference(a, b, a_zero, b_zero))


def test_extremes_wrap_to_32_bits_as_two_s_complement(device):
    k = 40000  # (-128 - 127)^2 * 40000 passes 2^31
    a, b = np.full((1, k), -128, np.int8), np.full((k, 2), -128, np.int8)
    result = dml.matrix_multiply_integer(a, b, np.int8(127), np.int8(127), device=device)
    assert np.array_equal(result, reference(a, b, np.int8(127), np.int8(127)))
    assert result[0, 0] != 255 * 255 * k  # it did wrap


def test_the_operator_binds_null_zero_points_and_reads_strided_b(device):
    a, b = integers(np.uint8, (3, 8)), integers(np.int8, (8, 4))
    b_transposed = np.ascontiguousarray(b.T)  # B read through strides (1, 8): DirectML's transposed layout
    operator_desc = dml.MatrixMultiplyIntegerOperatorDesc(desc(a), None, dml.BufferTensorDesc(T.INT8, (8, 4), (1, 8)),
                                                          None, dml.BufferTensorDesc(T.INT32, (3, 4)))
    compiled = device.compile_operator(device.create_operator(operator_desc))
    buffers = []
    for array in (a, b_transposed):
        buffers.append(device.create_buffer(32 if array.nbytes <= 32 else -(-array.nbytes // 4) * 4))
        buffers[-1].write(array)
    output = device.create_buffer(48)
    size = compiled.binding_properties.temporary_resource_size
    table = device.create_binding_table(compiled, [buffers[0], None, buffers[1], None], [output],
                                        device.create_buffer(size) if size else None)
    device.execute(table)
    assert np.array_equal(output.read(np.int32, 12).reshape(3, 4), reference(a, b))


def run_desc(device, operator_desc, arrays):
    """Compile and run `operator_desc` with `arrays` (None: an unbound zero point) in its
    input buffers, each as its desc lays it out; the output as int32 in its shape."""
    compiled = device.compile_operator(device.create_operator(operator_desc))
    buffers = []
    for array in arrays:
        if array is None:
            buffers.append(None)
            continue
        size = -(-max(array.nbytes, 16) // 16) * 16
        buffers.append(device.create_buffer(size))
        buffers[-1].write(np.frombuffer(array.tobytes().ljust(size, b"\0"), np.uint8))
    sizes = operator_desc.output_tensor.sizes
    output = device.create_buffer(-(-4 * int(np.prod(sizes)) // 16) * 16)
    size = compiled.binding_properties.temporary_resource_size
    device.execute(device.create_binding_table(compiled, buffers, [output],
                                               device.create_buffer(size) if size else None))
    return output.read(np.int32, int(np.prod(sizes))).reshape(sizes)


def test_one_dimensional_zero_points_are_per_row_and_per_column(device):
    """FEATURE_LEVEL_4_0's AZeroPointTensor and 5_2's BZeroPointTensor of one dimension: (M,) one
    per row of A, (N,) one per column of B, (1,) one for the tensor; strided too; with A, B
    and the output of two or four dimensions."""
    a, b = integers(np.int8, (2, 1, 6, 9)), integers(np.uint8, (2, 1, 9, 4))
    for a_zero, b_zero, a_stride in [(integers(np.int8, (6,)), integers(np.uint8, (4,)), 1),
                                     (integers(np.int8, (1,)), integers(np.uint8, (1,)), 1),
                                     (integers(np.int8, (11,)), None, 2)]:  # A's zero points at every other byte
        a_zeros = a_zero[::a_stride]
        zero_desc = dml.BufferTensorDesc(T.INT8, a_zeros.shape, (a_stride,))
        for rank in (4, 2):
            a_r, b_r = (a, b) if rank == 4 else (a[0, 0], b[0, 0])
            operator_desc = dml.MatrixMultiplyIntegerOperatorDesc(
                desc(a_r), zero_desc, desc(b_r), None if b_zero is None else desc(b_zero),
                dml.BufferTensorDesc(T.INT32, (*a_r.shape[:-1], 4)))
            got = run_desc(device, operator_desc, [a_r, a_zero, b_r, b_zero])
            want = reference(a_r, b_r, a_zeros.reshape(-1, 1), None if b_zero is None else b_zero.reshape(1, -1))
            assert np.array_equal(got, want), (a_zeros.shape, rank)


def test_device_arrays_stay_on_the_device(device):
    a, b = integers(np.int8, (4, 9)), integers(np.int8, (9, 3))
    result = dml.matrix_multiply_integer(dml.asarray(a, device), dml.asarray(b, device), np.int8(-3))
    assert isinstance(result, dml.DeviceArray)
    assert np.array_equal(result.numpy(), reference(a, b, np.int8(-3)))


def test_rules_are_directml_s():
    a, b = dml.BufferTensorDesc(T.INT8, (1, 1, 4, 6)), dml.BufferTensorDesc(T.UINT8, (1, 1, 6, 3))
    out = dml.BufferTensorDesc(T.INT32, (1, 1, 4, 3))
    make = dml.MatrixMultiplyIntegerOperatorDesc
    make(a, dml.BufferTensorDesc(T.INT8, (1, 1, 4, 1)), b, dml.BufferTensorDesc(T.UINT8, (1, 1, 1, 3)), out)
    with raises(dml.InvalidArgumentError, "b_tensor.sizes (1, 1, 5, 3) has K = 5 but a_tensor.sizes (1, 1, 4, 6) has "
                                          "K = 6"):
        make(a, None, dml.BufferTensorDesc(T.UINT8, (1, 1, 5, 3)), None, out)
    with raises(dml.InvalidArgumentError, "output_tensor.sizes (1, 1, 4, 4) must be (1, 1, 4, 3)"):
        make(a, None, b, None, dml.BufferTensorDesc(T.INT32, (1, 1, 4, 4)))
    with raises(dml.InvalidArgumentError, "a_zero_point_tensor.sizes (1, 1, 1, 4): a zero point is one for the tensor"):
        make(a, dml.BufferTensorDesc(T.INT8, (1, 1, 1, 4)), b, None, out)
    with raises(dml.InvalidArgumentError, "b_zero_point_tensor.data_type INT8 != b_tensor.data_type UINT8"):
        make(a, None, b, dml.BufferTensorDesc(T.INT8, (1, 1, 1, 1)), out)
    with raises(dml.InvalidArgumentError, "a_zero_point_tensor.data_type UINT8 != a_tensor.data_type INT8"):
        make(a, dml.BufferTensorDesc(T.UINT8, (1, 1, 1, 1)), b, None, out)
    with raises(dml.InvalidArgumentError, "output_tensor.data_type FLOAT32 is not supported: MATRIX_MULTIPLY_INTEGER's "
                                          "OutputTensor must be INT32"):
        make(a, None, b, None, dml.BufferTensorDesc(T.FLOAT32, (1, 1, 4, 3)))
    with raises(dml.InvalidArgumentError, "a_tensor.data_type FLOAT32 is not supported"):
        make(dml.BufferTensorDesc(T.FLOAT32, (1, 1, 4, 6)), None, b, None, out)
    # zero points of their own dimension counts: 1 (the count itself) to 4
    make(a, dml.BufferTensorDesc(T.INT8, (4,)), b, dml.BufferTensorDesc(T.UINT8, (3,)), out)
    make(a, dml.BufferTensorDesc(T.INT8, (1,)), b, dml.BufferTensorDesc(T.UINT8, (1, 3)), out)
    with raises(dml.InvalidArgumentError, "a_zero_point_tensor.sizes (6,): a zero point is one for the tensor"):
        make(a, dml.BufferTensorDesc(T.INT8, (6,)), b, None, out)
    with raises(dml.InvalidArgumentError, "b_zero_point_tensor.sizes (4,): a zero point is one for the tensor"):
        make(a, None, b, dml.BufferTensorDesc(T.UINT8, (4,)), out)
    with raises(dml.InvalidArgumentError, "a_tensor.dimension_count 1", "2 to 4"):
        make(dml.BufferTensorDesc(T.INT8, (6,)), None, dml.BufferTensorDesc(T.UINT8, (6,)), None,
             dml.BufferTensorDesc(T.INT32, (1,)))
    with raises(dml.InvalidArgumentError, "dimension_count"):
        make(a, None, dml.BufferTensorDesc(T.UINT8, (6, 3)), None, out)


def test_feature_levels_gate_the_operator_and_its_dimension_counts(device_at):
    two_d = dml.MatrixMultiplyIntegerOperatorDesc(dml.BufferTensorDesc(T.INT8, (4, 6)), None,
                                                  dml.BufferTensorDesc(T.INT8, (6, 3)), None,
                                                  dml.BufferTensorDesc(T.INT32, (4, 3)))
    with raises(dml.UnsupportedError, "MATRIX_MULTIPLY_INTEGER needs FEATURE_LEVEL_2_1"):
        device_at(dml.FeatureLevel.LEVEL_2_0).create_operator(two_d)
    with raises(dml.UnsupportedError, "INT8 with 2 dimensions needs FEATURE_LEVEL_4_0"):
        device_at(dml.FeatureLevel.LEVEL_3_1).create_operator(two_d)
    device_at(dml.FeatureLevel.LEVEL_4_0).create_operator(two_d)
    a, b, out = (dml.BufferTensorDesc(t, s) for t, s in ((T.INT8, (1, 1, 4, 6)), (T.INT8, (1, 1, 6, 3)),
                                                          (T.INT32, (1, 1, 4, 3))))
    a_zero_1d = dml.MatrixMultiplyIntegerOperatorDesc(a, dml.BufferTensorDesc(T.INT8, (4,)), b, None, out)
    with raises(dml.UnsupportedError, "INT8 with 1 dimensions needs FEATURE_LEVEL_4_0"):
        device_at(dml.FeatureLevel.LEVEL_3_1).create_operator(a_zero_1d)
    device_at(dml.FeatureLevel.LEVEL_4_0).create_operator(a_zero_1d)
    b_zero_1d = dml.MatrixMultiplyIntegerOperatorDesc(a, None, b, dml.BufferTensorDesc(T.INT8, (3,)), out)
    with raises(dml.UnsupportedError, "b_zero_point_tensor with 1 dimension needs FEATURE_LEVEL_5_2"):
        device_at(dml.FeatureLevel.LEVEL_5_1).create_operator(b_zero_1d)
    device_at(dml.FeatureLevel.LEVEL_5_2).create_operator(b_zero_1d)


def test_front_end_errors_name_the_argument(device):
    a, b = integers(np.int8, (4, 6)), integers(np.int8, (6, 3))
    with raises(dml.InvalidArgumentError, "matrix_multiply_integer: a has dtype float32, which MATRIX_MULTIPLY_INTEGER "
                                          "does not take"):
        dml.matrix_multiply_integer(a.astype(np.float32), b, device=device)
    with raises(dml.InvalidArgumentError, "a_zero_point has shape (3,): a zero point is one value or a 1-D array of 4"):
        dml.matrix_multiply_integer(a, b, np.zeros(3, np.int8), device=device)
    with raises(dml.InvalidArgumentError, "b_zero_point has dtype uint8 but its matrix int8"):
        dml.matrix_multiply_integer(a, b, None, np.uint8(1), device=device)
    with raises(dml.InvalidArgumentError, "a has shape (4, 6) and b (5, 3)"):
        dml.matrix_multiply_integer(a, integers(np.int8, (5, 3)), device=device)
