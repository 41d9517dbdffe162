"""BufferTensorDesc and calc_buffer_tensor_size: DirectML's rules, each with its error."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dmlpy as dml

T = dml.TensorDataType
ELEMENT_SIZE = {T.FLOAT32: 4, T.FLOAT16: 2, T.UINT32: 4, T.UINT16: 2, T.UINT8: 1, T.INT32: 4, T.INT16: 2,
                T.INT8: 1, T.FLOAT64: 8, T.UINT64: 8, T.INT64: 8, T.UINT4: 1, T.INT4: 1, T.BFLOAT16: 2}


def test_enumerations_carry_directml_values():
    assert [T[n].value for n in ("FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8", "INT32", "INT16", "INT8",
                                 "FLOAT64", "UINT64", "INT64")] == list(range(1, 12))
    levels = dml.FeatureLevel
    assert levels.LEVEL_1_0 == 0x1000 and levels.LEVEL_3_0 == 0x3000 and levels.LEVEL_5_1 == 0x5100
    assert levels.LEVEL_6_4 == 0x6400 and sorted(levels) == list(levels)
    assert dml.TensorFlags.OWNED_BY_DML == 1
    assert (dml.ExecutionFlags.ALLOW_HALF_PRECISION_COMPUTATION, dml.ExecutionFlags.DISABLE_META_COMMANDS,
            dml.ExecutionFlags.DESCRIPTORS_VOLATILE) == (1, 2, 4)


@pytest.mark.parametrize("data_type, sizes, strides, expected", [
    (T.FLOAT32, (2, 3, 4), None, 96),
    (T.FLOAT16, (3,), None, 8),  # 6 bytes round up to 8
    (T.INT8, (1,), None, 4),
    (T.FLOAT32, (2, 3), (4, 1), 28),  # last element at 1*4 + 2*1 = 6
    (T.FLOAT16, (5,), (0,), 4),  # broadcast: one element
    (T.UINT8, (2, 2), (1, 2), 4),
    (T.FLOAT64, (3,), None, 24),
])
def test_calc_buffer_tensor_size_examples(data_type, sizes, strides, expected):
    assert dml.calc_buffer_tensor_size(data_type, sizes, strides) == expected


@given(data_type=st.sampled_from([t for t in T if t != T.UNKNOWN]),
       dims=st.lists(st.tuples(st.integers(1, 15), st.integers(0, 1000)), min_size=1, max_size=8),
       packed=st.booleans())
def test_calc_buffer_tensor_size_is_the_span_rounded_up_to_4(data_type, dims, packed):
    sizes = [s for s, _ in dims]
    strides = None if packed else [t for _, t in dims]
    last = math.prod(sizes) - 1 if packed else sum((s - 1) * t for s, t in dims)
    span = (last + 1) * ELEMENT_SIZE[data_type]
    expected = span + (-span % 4)
    assert dml.calc_buffer_tensor_size(data_type, sizes, strides) == expected
    desc = dml.BufferTensorDesc(data_type, sizes, strides)
    assert desc.total_tensor_size_in_bytes == expected


def test_desc_normalises_and_is_hashable():
    desc = dml.BufferTensorDesc(2, [2, 3])
    assert desc.data_type is T.FLOAT16 and desc.sizes == (2, 3) and desc.strides is None
    assert desc.element_strides == (3, 1)
    assert hash(desc) == hash(dml.BufferTensorDesc(T.FLOAT16, (2, 3)))


@pytest.mark.parametrize("kwargs, field, rule", [
    (dict(sizes=()), "sizes", "DimensionCount must be 1 to 8"),
    (dict(sizes=(1,) * 9), "sizes", "DimensionCount must be 1 to 8"),
    (dict(sizes=(2, 0)), "sizes[1]", "at least 1"),
    (dict(sizes=(2, -1)), "sizes[1]", "out of range"),
    (dict(sizes=(2.0,)), "sizes[0]", "must be an integer"),
    (dict(sizes=(True,)), "sizes[0]", "not a bool"),
    (dict(sizes="23"), "sizes", "sequence of integers"),
    (dict(sizes=(2**32,)), "sizes[0]", "out of range"),
    (dict(sizes=(2**16, 2**16)), "sizes", "at most 4294967295"),
    (dict(sizes=(2, 3), strides=(1,)), "strides", "one stride per dimension"),
    (dict(sizes=(2,), strides=(-1,)), "strides[0]", "is negative: DirectML's strides are unsigned counts of elements"),
    (dict(data_type=T.UNKNOWN), "data_type", "never a valid data type"),
    (dict(data_type=99), "data_type", "not a TensorDataType"),
    (dict(data_type=np.complex64), "data_type", "NumPy's complex64, which no TensorDataType stores: use one of"),
    (dict(data_type="float128"), "data_type", "which no TensorDataType stores"),
    (dict(flags=4), "flags", "not TensorFlags"),
    (dict(total_tensor_size_in_bytes=20), "total_tensor_size_in_bytes", "smaller than the 24 bytes"),
    (dict(total_tensor_size_in_bytes=-4), "total_tensor_size_in_bytes", "out of range"),
    (dict(guaranteed_base_offset_alignment=24), "guaranteed_base_offset_alignment", "power of two"),
    (dict(guaranteed_base_offset_alignment=2), "guaranteed_base_offset_alignment", "at least the element size"),
])
def test_invalid_desc_names_the_field_and_rule(kwargs, field, rule):
    arguments = dict(data_type=T.FLOAT32, sizes=(2, 3)) | kwargs
    with pytest.raises(dml.InvalidArgumentError) as error:
        dml.BufferTensorDesc(**arguments)
    assert f"BufferTensorDesc.{field}" in str(error.value) and rule in str(error.value)
    assert error.value.hresult == 0x80070057 and isinstance(error.value, ValueError)
    assert "0x80070057" in str(error.value)


@pytest.mark.parametrize("dtype, data_type", [
    (np.float16, T.FLOAT16), (np.dtype(np.int8), T.INT8), ("float32", T.FLOAT32), (ml_dtypes.bfloat16, T.BFLOAT16),
    (np.uint64, T.UINT64)])
def test_a_numpy_dtype_names_the_data_type_stored_the_same_way(dtype, data_type):
    desc = dml.BufferTensorDesc(dtype, (2, 3))
    assert desc.data_type is data_type and desc == dml.BufferTensorDesc(data_type, (2, 3))
    assert dml.calc_buffer_tensor_size(dtype, (2, 3)) == desc.total_tensor_size_in_bytes


def test_valid_edges_are_accepted():
    dml.BufferTensorDesc(T.FLOAT32, (1,) * 8)
    dml.BufferTensorDesc(T.FLOAT16, (2, 3), guaranteed_base_offset_alignment=2)
    dml.BufferTensorDesc(T.FLOAT32, (2, 3), total_tensor_size_in_bytes=1024, flags=dml.TensorFlags.OWNED_BY_DML)
    dml.BufferTensorDesc(T.INT8, (2**16, 2**16 - 1))


def test_calc_buffer_tensor_size_rejects_what_the_desc_rejects():
    with pytest.raises(dml.InvalidArgumentError, match="calc_buffer_tensor_size.sizes"):
        dml.calc_buffer_tensor_size(T.FLOAT32, ())
