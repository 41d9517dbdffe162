"""REDUCE, ARGMIN and ARGMAX against the independent NumPy reference in reference_reduce.py:
every function and data type over several shapes and axes (rows spanning several chunks,
whole-tensor reductions), strided and broadcast inputs through descs, special values, ties,
integer wrap-around, the NumPy-style front ends against NumPy itself, and every rule a desc
or a front end enforces (axes, output sizes and data types, data types per function, feature
levels, strict_directml, 64-bit indices)."""

from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np
import pytest
from changed_profile import cpu_profile
from hypothesis import given, settings
from hypothesis import strategies as st
from layout import element_offsets
from messages import check_level, raises
from reference_reduce import (
    assert_reduce_matches,
    assert_same_bits,
    reduce_reference,
    reduced_shape,
)

import dmlpy as dml

T = dml.TensorDataType
FL = dml.FeatureLevel
F = dml.ReduceFunction
NUMPY_WIDE = {T.INT64: np.int64, T.UINT64: np.uint64}
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16, T.INT32: np.int32,
         T.INT16: np.int16, T.INT8: np.int8, T.UINT32: np.uint32, T.UINT16: np.uint16, T.UINT8: np.uint8,
         **NUMPY_WIDE}
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)
INTEGERS = (T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8)
ARG = (F.ARGMAX, F.ARGMIN)
FLOAT_ONLY = (F.AVERAGE, F.L2, F.LOG_SUM, F.LOG_SUM_EXP)
# DirectML takes INT64 and UINT64 for these (ARGMIN and ARGMAX from FEATURE_LEVEL_4_1, the rest from
# 5_0).
TAKES_64_BITS = (*ARG, F.MAX, F.MIN, F.SUM, F.MULTIPLY, F.L1, F.SUM_SQUARE)
# The data types each function computes (DirectML's, with BFLOAT16 wherever FLOAT16 is; L1's and
# SUM_SQUARE's 32-bit integers from FEATURE_LEVEL_5_0).
TYPES = {**{f: FLOATS + INTEGERS for f in (*ARG, F.MAX, F.MIN)}, **{f: FLOATS for f in FLOAT_ONLY},
         **{f: FLOATS + (T.INT32, T.UINT32) for f in (F.SUM, F.MULTIPLY, F.L1, F.SUM_SQUARE)}}
TYPES = {f: types + (tuple(NUMPY_WIDE) if f in TAKES_64_BITS else ()) for f, types in TYPES.items()}
SHAPES = [((37,), (0,)), ((5, 6, 7), (0,)), ((5, 6, 7), (1,)), ((5, 6, 7), (2,)), ((5, 6, 7), (0, 2)),
          ((5, 6, 7), (0, 1, 2))]


def values_for(function, data_type, shape, rng, long_rows=False):
    """Inputs that keep each function's result informative: products of values near 1,
    positive sums for LOG_SUM, the whole range of each integer type."""
    dtype = NUMPY[data_type]
    if data_type in INTEGERS or data_type in NUMPY_WIDE:
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
    if function is F.MULTIPLY:
        spread = 0.01 if long_rows else 0.75
        magnitude = rng.uniform(1 - spread, 1 + spread, shape)
        return (magnitude * rng.choice([-1.0, 1.0], shape)).astype(np.float32).astype(dtype)
    scale = 4.0 if data_type is T.FLOAT32 else 1.0
    values = rng.standard_normal(shape) * scale
    if function is F.LOG_SUM:
        values = np.abs(values)
    return values.astype(np.float32).astype(dtype)


def cases():
    """Every function and data type: FP32 over four of the shapes, the other types over one
    each, rotating, so that every shape meets every function and many types without the
    whole product (each shape is a shader to compile)."""
    for function, types in TYPES.items():
        for k, data_type in enumerate(types):
            picks = [SHAPES[(function.value + j) % 6] for j in range(4)] if data_type is T.FLOAT32 \
                else [SHAPES[(k + function.value) % 6]]
            yield pytest.param(function, data_type, picks, id=f"{function.name}-{data_type.name}")


# --- Running descs ---------------------------------------------------------------------------------


def run_desc(device, desc, storage: np.ndarray) -> np.ndarray:
    """Compile and run `desc` with its input buffer holding `storage` (its elements as laid out
    by the input's strides); the output's elements, in its shape."""
    compiled = device.compile_operator(device.create_operator(desc))
    source = device.create_buffer(tensor=desc.input_tensor)
    source.write(np.ascontiguousarray(storage))
    result = device.create_buffer(tensor=desc.output_tensor)
    size = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(size) if size else None
    device.execute(device.create_binding_table(compiled, inputs=[source], outputs=[result], temporary=temporary))
    return np.asarray(result.read()).reshape(desc.output_tensor.sizes)


def reduce_desc(function, data_type, sizes, axes, output_type=None, strides=None, output_sizes=None):
    if output_type is None:
        output_type = T.UINT32 if F[getattr(function, "name", function)] in ARG else data_type
    return dml.ReduceOperatorDesc(dml.BufferTensorDesc(data_type, sizes, strides),
                                  dml.BufferTensorDesc(output_type, output_sizes or reduced_shape(sizes, axes)),
                                  function, axes)


def storage_for(desc_tensor, values_of):
    """Random storage for a (possibly strided) tensor and the logical elements it holds."""
    count = -(-desc_tensor.total_tensor_size_in_bytes // desc_tensor.element_size)
    storage = values_of(count)
    return storage, storage[element_offsets(desc_tensor.sizes, desc_tensor.element_strides)]


# --- Every function and data type against the reference ------------------------------------------


@pytest.mark.parametrize("function, data_type, shapes", list(cases()))
def test_every_function_and_type_matches_the_reference(device, function, data_type, shapes):
    rng = np.random.default_rng(function.value * 64 + data_type.value)
    for shape, axes in shapes:
        x = values_for(function, data_type, shape, rng)
        got = dml.reduce(x, function, axes, device=device)
        assert got.dtype == (np.uint32 if function in ARG else x.dtype)
        assert_reduce_matches(got, x, function, axes)


LONG = [((3, 10000), (1,)), ((70000, 2), (0,)), ((64, 70, 67), (0, 1, 2))]
LONG_CASES = [*((f, T.FLOAT32) for f in F), (F.SUM, T.FLOAT16), (F.AVERAGE, T.FLOAT16), (F.MAX, T.FLOAT16),
              (F.ARGMAX, T.FLOAT16), (F.SUM, T.BFLOAT16), (F.L2, T.BFLOAT16), (F.SUM, T.INT32),
              (F.MULTIPLY, T.INT32), (F.MIN, T.INT32), (F.ARGMAX, T.INT32), (F.SUM, T.UINT32), (F.ARGMIN, T.UINT8),
              (F.MAX, T.INT16), (F.SUM, T.INT64), (F.MULTIPLY, T.UINT64), (F.ARGMAX, T.UINT64), (F.MIN, T.INT64),
              (F.SUM_SQUARE, T.UINT64), (F.ARGMIN, T.INT64)]


@pytest.mark.parametrize("k, function, data_type", [(k, f, t) for k, (f, t) in enumerate(LONG_CASES)],
                         ids=[f"{f.name}-{t.name}" for f, t in LONG_CASES])
def test_rows_spanning_several_chunks_and_whole_tensor_reductions(device, k, function, data_type):
    """Rows of 10,000 and 70,000 elements (several chunks of 4,096, the second over a strided
    axis) and a whole-tensor reduction of 300,160 elements: the same tree, bit for bit. SUM
    and ARGMAX of FP32 take all three, the others one each, in turn."""
    rng = np.random.default_rng(function.value * 16 + data_type.value)
    every = data_type is T.FLOAT32 and function in (F.SUM, F.ARGMAX)
    for shape, axes in LONG if every else [LONG[k % 3]]:
        x = values_for(function, data_type, shape, rng, long_rows=True)
        assert_reduce_matches(dml.reduce(x, function, axes, device=device), x, function, axes)


def test_descs_of_every_function_in_four_and_other_dimension_counts(device):
    rng = np.random.default_rng(7)
    layouts = (((2, 3, 4, 5), (1, 3)), ((1, 1, 3, 300), (3,)), ((2, 1, 2, 3, 1, 2, 2, 3), (0, 3, 6)))
    for function in F:
        for sizes, axes in (layouts[function.value % 3], layouts[(function.value + 1) % 3]):
            desc = reduce_desc(function, T.FLOAT32, sizes, axes)
            x = values_for(function, T.FLOAT32, sizes, rng)
            assert_reduce_matches(run_desc(device, desc, x), x, function, axes)
    assert reduce_desc("SUM_SQUARE", T.FLOAT32, (2, 3), [1]).function is F.SUM_SQUARE  # a name, a list
    assert reduce_desc("SUM_SQUARE", T.FLOAT32, (2, 3), [1]).axes == (1,)


@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
@pytest.mark.parametrize("cls, function", [(dml.ArgMaxOperatorDesc, "ARGMAX"), (dml.ArgMinOperatorDesc, "ARGMIN")])
def test_argmin_and_argmax_descs_in_both_directions(device, cls, function, direction):
    rng = np.random.default_rng(len(function) + len(direction))
    for k, (data_type, output_type) in enumerate([(T.FLOAT32, T.UINT32), (T.FLOAT16, T.INT32), (T.INT8, T.UINT32),
                                                  (T.UINT16, T.INT32), (T.BFLOAT16, T.UINT32)]):
        sizes, axes = [((40, 30), (0,)), ((6, 5, 7), (0, 2)), ((3, 700), (1,)), ((9, 2, 8), (1,)),
                       ((5, 6), (0, 1))][k]
        x = values_for(F[function], data_type, sizes, rng)
        if data_type in FLOATS:  # ties: few distinct values
            x = np.round(x.astype(np.float32) * 2).astype(NUMPY[data_type])
        output = dml.BufferTensorDesc(output_type, reduced_shape(sizes, axes))
        desc = cls(dml.BufferTensorDesc(data_type, sizes), output, axes, axis_direction=direction)
        assert desc.axis_direction is dml.AxisDirection[direction]
        got = run_desc(device, desc, x)
        assert got.dtype == NUMPY[output_type]
        assert_reduce_matches(got, x, function, axes, direction)
    tensor = dml.BufferTensorDesc(T.FLOAT32, (2, 3))
    assert cls(tensor, dml.BufferTensorDesc(T.UINT32, (2, 1)), (1,)).axis_direction is dml.AxisDirection.INCREASING


@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
@pytest.mark.parametrize("cls, function", [(dml.ArgMaxOperatorDesc, "ARGMAX"), (dml.ArgMinOperatorDesc, "ARGMIN")])
def test_an_extreme_tied_across_chunks_is_found_in_the_directions_order(device, cls, function, direction):
    """Rows of 9,000 span three chunks of the one-pass search: the tied extremes (and NaNs) lie
    in different chunks, at chunk edges, and the integer extremes whose rank is the lowest
    (INT32's minimum for ARGMAX, UINT32's maximum for ARGMIN; -inf, +inf) fill whole rows."""
    length = 9000
    for data_type, dtype in ((T.FLOAT32, np.float32), (T.INT32, np.int32), (T.UINT32, np.uint32)):
        rng = np.random.default_rng(len(function) * 10 + len(direction))
        x = rng.integers(-3, 4, (8, length)).astype(dtype) if data_type is not T.UINT32 \
            else rng.integers(0, 7, (8, length)).astype(dtype)
        peak = dtype(3 if function == "ARGMAX" else (-3 if data_type is not T.UINT32 else 0))
        x[0] = dtype(1)
        x[0, [5, 4095, 4096, 8191, 8192, 8999]] = peak  # every chunk edge
        x[1] = dtype(1)
        x[1, [0, length - 1]] = peak  # the row's two ends only
        info = np.finfo(dtype) if data_type is T.FLOAT32 else np.iinfo(dtype)
        lowest, above = (info.min, info.min + 1) if data_type is not T.FLOAT32 else (-np.inf, info.min)
        if function == "ARGMIN":
            lowest, above = (info.max, info.max - 1) if data_type is not T.FLOAT32 else (np.inf, info.max)
        x[2] = dtype(lowest)  # every element ties, at the lowest rank there is
        x[3] = dtype(lowest)
        x[3, 6000] = dtype(above)
        if data_type is T.FLOAT32:
            x[4, [100, 4100, 8500]] = np.nan  # the first (last) NaN, whatever follows
            x[5] = -0.0
            x[5, [17, 5000]] = 0.0  # -0 ties with +0: the first (last) zero of the row
            x[6, 8999] = np.nan
        output = dml.BufferTensorDesc(T.UINT32, (8, 1))
        desc = cls(dml.BufferTensorDesc(data_type, (8, length)), output, (1,), axis_direction=direction)
        got = run_desc(device, desc, x)
        assert_reduce_matches(got, x, function, (1,), direction)


# --- Strided and broadcast inputs --------------------------------------------------------------


@pytest.mark.parametrize("function", [F.SUM, F.MAX, F.ARGMIN, F.MULTIPLY, F.LOG_SUM_EXP, F.AVERAGE])
def test_strided_and_broadcast_inputs(device, function):
    rng = np.random.default_rng(function.value)
    layouts = [((4, 5, 6), (1, 4, 20), (0, 2)),       # transposed
               ((3, 4, 5), (40, 10, 2), (1,)),        # gaps between elements
               ((3, 7, 5), (5, 0, 1), (1,)),          # a broadcast (zero-stride) reduced axis
               ((6, 4, 3), (0, 3, 1), (0, 2)),        # broadcast over a reduced axis among others
               ((2, 3000), (0, 1), (0, 1)),           # a broadcast row, reduced whole
               ((4000, 3), (3, 1), (0,))]              # a long strided row
    every = function in (F.SUM, F.ARGMIN)
    for sizes, strides, axes in layouts if every else layouts[function.value % 2::2]:
        desc = reduce_desc(function, T.FLOAT32, sizes, axes, strides=strides)
        storage, x = storage_for(desc.input_tensor, lambda n: values_for(function, T.FLOAT32, (n,), rng))
        assert_reduce_matches(run_desc(device, desc, storage), x, function, axes)
    if function is not F.SUM:
        return
    # An integer type, and an FP16 argmax over a broadcast axis (every element ties).
    desc = reduce_desc(F.SUM, T.INT32, (3, 50, 4), (1,), strides=(200, 0, 1))
    storage, x = storage_for(desc.input_tensor, lambda n: values_for(F.SUM, T.INT32, (n,), rng))
    assert_reduce_matches(run_desc(device, desc, storage), x, F.SUM, (1,))
    desc = dml.ArgMaxOperatorDesc(dml.BufferTensorDesc(T.FLOAT16, (3, 9), (1, 0)),
                                  dml.BufferTensorDesc(T.UINT32, (3, 1)), (1,), axis_direction="DECREASING")
    storage = np.array([1.0, -0.0, np.nan], np.float16)
    assert np.array_equal(run_desc(device, desc, storage), np.full((3, 1), 8, np.uint32))


BLOCK_CASES = [*((f, T.FLOAT32) for f in (F.SUM, F.MULTIPLY, F.MAX, F.ARGMAX, F.ARGMIN, F.SUM_SQUARE, F.L1)),
               *((F.MAX, t) for t in (T.FLOAT16, T.BFLOAT16, T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16,
                                      T.UINT8)),
               (F.ARGMIN, T.INT8), (F.ARGMIN, T.UINT16), (F.ARGMAX, T.FLOAT16), (F.SUM, T.FLOAT16),
               (F.SUM, T.BFLOAT16), (F.SUM, T.INT32)]


def with_specials_and_ties(dense, function, data_type, rng):
    """`dense` with a twentieth of its floats made NaN, infinities, zeros or one, and for an
    index of an extreme, values from a few (many ties)."""
    if data_type in FLOATS:
        flat = dense.reshape(-1)
        picks = rng.integers(0, flat.size, flat.size // 20)
        flat[picks] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0], np.float32)[
            rng.integers(0, 6, picks.size)].astype(NUMPY[data_type])
    if function in ARG:
        return (dense % 3).astype(dense.dtype) if data_type not in FLOATS else np.round(dense).astype(dense.dtype)
    return dense


@pytest.mark.parametrize("function, data_type", BLOCK_CASES, ids=[f"{f.name}-{t.name}" for f, t in BLOCK_CASES])
def test_rows_in_whole_blocks_of_eight_give_the_bits_of_any_other_layout(device, function, data_type):
    """Rows whose elements lie in aligned runs of eight are read a block at a time (16-byte
    vectors, or words of 8-bit elements), packed or with gaps between rows; rows whose pitch
    is no multiple of a load are read element by element. Both give the reference's bits,
    with ties, NaNs and other specials inside the blocks."""
    rng = np.random.default_rng(function.value * 32 + data_type.value)
    for sizes, axes, pitch in (((5, 48), (1,), 48), ((5, 48), (1,), 49), ((3, 2, 64), (1, 2), 136)):
        dense = with_specials_and_ties(values_for(function, data_type, sizes, rng), function, data_type, rng)
        strides = (pitch, *(math.prod(sizes[d + 1:]) for d in range(1, len(sizes))))
        storage = np.zeros(pitch * (sizes[0] - 1) + math.prod(sizes[1:]), NUMPY[data_type])
        storage[element_offsets(sizes, strides)] = dense
        assert_reduce_matches(run_desc(device, reduce_desc(function, data_type, sizes, axes, strides=strides), storage),
                              dense, function, axes, what=f"{function.name} {data_type.name} {sizes} pitch {pitch}")


COLUMN_CASES = [*((f, T.FLOAT32) for f in (F.SUM, F.MULTIPLY, F.MAX, F.ARGMAX, F.ARGMIN, F.LOG_SUM_EXP, F.L2,
                                            F.AVERAGE)),
                (F.SUM, T.FLOAT16), (F.MAX, T.BFLOAT16), (F.ARGMAX, T.FLOAT16), (F.SUM, T.INT32), (F.MIN, T.UINT16),
                (F.ARGMIN, T.INT16), (F.MULTIPLY, T.UINT32)]


@pytest.mark.parametrize("function, data_type", COLUMN_CASES, ids=[f"{f.name}-{t.name}" for f, t in COLUMN_CASES])
def test_columns_of_adjacent_rows_give_the_bits_of_any_other_layout(device, function, data_type):
    """A reduction over leading axes (a column sum) whose kept rows are adjacent in memory may
    read one reduced index of several rows in one or two vectors, each row keeping its own
    tree: packed, with a pitch, spanning chunks, with rows that are not whole vectors, and
    with ties, NaNs and other specials among the elements. The bits are the reference's."""
    rng = np.random.default_rng(function.value * 32 + data_type.value)
    layouts = (((40, 16), (0,), (16, 1)), ((9, 20), (0,), (24, 1)), ((700, 8), (0,), (8, 1)),
               ((3, 37, 12), (0, 1), (480, 12, 1)), ((9, 10), (0,), (10, 1)))
    for sizes, axes, strides in layouts:
        dense = with_specials_and_ties(values_for(function, data_type, sizes, rng, long_rows=sizes[0] > 100),
                                       function, data_type, rng)
        storage = np.zeros(sum((n - 1) * s for n, s in zip(sizes, strides)) + 1, NUMPY[data_type])
        storage[element_offsets(sizes, strides)] = dense
        assert_reduce_matches(run_desc(device, reduce_desc(function, data_type, sizes, axes, strides=strides), storage),
                              dense, function, axes, what=f"{function.name} {data_type.name} {sizes} {strides}")
        if function is F.ARGMAX and data_type is T.FLOAT32:  # 64-bit indices: two words a row
            wide = run_desc(device, reduce_desc(function, data_type, sizes, axes, T.INT64, strides), storage)
            assert_reduce_matches(wide.astype(np.uint32), dense, function, axes)


def test_a_column_view_starting_inside_a_vector(device):
    """Columns 1 to 8 of a device array of rows of 20: their strides are whole vectors but
    their first element lies 4 bytes into one (the view's desc guarantees no more alignment),
    so each element is read on its own. The reference's bits."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 20)).astype(np.float32)
    view = dml.asarray(x, device=device)[:, 1:9]
    for function in (F.SUM, F.ARGMAX, F.MAX):
        assert_reduce_matches(np.asarray(dml.reduce(view, function, (0,))), x[:, 1:9], function, (0,))


# Column reductions a CPU device's workgroups walk in lockstep (every invocation walks as far:
# whole chunks, no invocation past the last), and one it may not: chunks of different lengths.
LOCKSTEP_LAYOUTS = [((64, 4096), (0,), True), ((8192, 256), (0,), True), ((3, 33, 4, 256), (0, 1), True),
                    ((4100, 256), (0,), False)]


@pytest.mark.parametrize("function, data_type", [(F.SUM, T.FLOAT32), (F.MAX, T.FLOAT16), (F.ARGMIN, T.FLOAT32),
                                                 (F.SUM, T.INT32)])
def test_columns_walked_in_lockstep_give_the_reference_bits(device, function, data_type):
    """On a CPU device a column reduction whose workgroups hold adjacent groups of rows of
    one chunk meets at a barrier every few elements, so that the workgroup reads each row's
    span together: in one chunk, across chunks, over two leading axes with a last block
    shorter than eight. Not where the chunks differ in length (an invocation would miss a
    barrier). The plan says which; the bits are the reference's either way."""
    rng = np.random.default_rng(function.value * 32 + data_type.value)
    cpu = device.adapter.adapter_type == dml.AdapterType.CPU
    for sizes, axes, eligible in LOCKSTEP_LAYOUTS:
        x = values_for(function, data_type, sizes, rng)
        if function in ARG:
            x = with_specials_and_ties(x, function, data_type, rng)
        desc = reduce_desc(function, data_type, sizes, axes)
        reason = device.compile_operator(device.create_operator(desc)).plan.reason
        assert ("in lockstep" in reason) == (eligible and cpu), (sizes, reason)
        assert_reduce_matches(run_desc(device, desc, x), x, function, axes, what=f"{sizes} over {axes}")


def test_a_device_that_may_sum_a_chunk_again_walks_it_out_of_lockstep(tmp_path):
    """On a CPU device that flushes subnormals, a floating sum's chunk is summed again exactly
    where a term was not plain, by the invocations that met one: those would meet barriers
    the others do not, so such a sum is not walked in lockstep; a maximum still is. Subnormal
    terms in some columns take the second walk; the bits are the reference's."""
    flushing = cpu_profile(tmp_path, "lavapipe-flushing", denormals="flush")
    x = np.random.default_rng(3).standard_normal((64, 4096)).astype(np.float32)
    x[5, ::7] = np.float32(1e-40)
    with dml.create_device(profile=flushing) as d:
        for function, walked_in_lockstep in ((F.SUM, False), (F.MAX, True)):
            desc = reduce_desc(function, T.FLOAT32, x.shape, (0,))
            reason = d.compile_operator(d.create_operator(desc)).plan.reason
            assert ("in lockstep" in reason) == walked_in_lockstep, reason
            assert_reduce_matches(run_desc(d, desc, x), x, function, (0,))


@pytest.mark.parametrize("function", [F.SUM, F.MULTIPLY, F.MAX, F.ARGMAX, F.L2, F.LOG_SUM_EXP])
def test_a_gpu_cuts_rows_into_more_chunks_with_the_same_bits(function):
    """On a GPU a reduction of 2^20 elements or more cuts its rows into chunks of as few as
    128 elements until the partial stage has 2^17 invocations: rows of 2048 in 16 whole
    chunks, rows of 1000 in 8 with a short last one, every chunk an aligned subtree of the
    row's tree; a smaller one keeps its rows whole. The plan says so; the bits are the
    reference's (which a CPU device gives in one chunk a row), ties and NaNs across chunks
    included."""
    rng = np.random.default_rng(function.value)
    with dml.create_device(profile="nvidia-h100") as gpu:
        for sizes, chunks in (((512, 2048), 16), ((1100, 1000), 8), ((500, 2048), 1)):
            x = values_for(function, T.FLOAT32, sizes, rng, long_rows=True)
            if function in ARG:
                x = with_specials_and_ties(x, function, T.FLOAT32, rng)
            desc = reduce_desc(function, T.FLOAT32, sizes, (1,))
            reason = gpu.compile_operator(gpu.create_operator(desc)).plan.reason
            assert f"{chunks} chunk(s) of at most {128 if chunks > 1 else 2048} a row" in reason, reason
            assert_reduce_matches(run_desc(gpu, desc, x), x, function, (1,), what=f"{sizes}")


# --- Special values ------------------------------------------------------------------------------


SPECIAL_ROWS = [[np.nan, 1.0, 2.0], [1.0, 2.0, np.nan], [np.inf, -np.inf, 1.0], [np.inf, 1.0, 2.0],
                [-np.inf, -1.0, -np.inf], [-0.0, -0.0, -0.0], [-0.0, 0.0, -0.0], [0.0, -0.0, 0.0],
                [3e38, 3e38, -1.0], [-3e38, -3e38, 1.0], [1e-45, 2.8e-45, -1e-45], [1e-20, 1e-20, 1.0],
                [1e-30, 1e-30, 1e30], [-1.0, 0.5, 0.25], [0.0, 0.0, 0.0], [3e19, 4e19, 0.0], [1e30, 1e30, 1e30],
                [-1e30, -1e30, -1e30], [-np.inf, -np.inf, -np.inf], [-np.inf, 0.0, -np.inf], [np.nan, np.inf, 1.0],
                [np.nan, np.nan, np.inf], [5.0, np.inf, np.inf], [1.17549435e-38, -1.1754942e-38, 1e-45]]


@pytest.mark.parametrize("data_type", FLOATS)
def test_special_values_of_every_function(device, data_type):
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL_ROWS, np.float32).astype(NUMPY[data_type])
    for function in F:
        assert_reduce_matches(dml.reduce(x, function, (1,), device=device), x, function, (1,))


def test_special_values_spelled_out(device):
    """What the reference gives for the rows above, written out for FP32."""
    x = np.array(SPECIAL_ROWS, np.float32)

    def of(function):
        return dml.reduce(x, function, (1,), device=device)[:, 0]

    total, biggest, smallest = of("SUM"), of("MAX"), of("MIN")
    assert np.isnan(total[[0, 1, 2, 20]]).all() and total[3] == np.inf and total[8] == np.inf
    assert total[5].tobytes() == np.float32(-0.0).tobytes() and total[6].tobytes() == np.float32(0.0).tobytes()
    assert total[10].view(np.uint32) == 2  # subnormals are summed exactly, not flushed
    assert np.isnan(biggest[[0, 1, 20, 21]]).all() and np.isnan(smallest[[0, 1, 20, 21]]).all()
    for k in (6, 7):
        assert biggest[k].tobytes() == np.float32(0.0).tobytes()
        assert smallest[k].tobytes() == np.float32(-0.0).tobytes()
    product = of("MULTIPLY")
    assert product[11] == np.float32(1e-20) * np.float32(1e-20) and product[11] != 0  # a subnormal product, kept
    assert of("L2")[15] == np.inf and of("SUM_SQUARE")[10] == 0  # no scaling: 3e19**2 overflows
    log_sum = of("LOG_SUM")
    assert log_sum[14] == -np.inf and np.isnan(log_sum[13]) and log_sum[3] == np.inf and np.isnan(log_sum[2])
    lse = of("LOG_SUM_EXP")
    assert abs(lse[16] / np.float32(1e30) - 1) < 1e-6 and abs(lse[17] / np.float32(-1e30) - 1) < 1e-6  # stable
    assert lse[18] == -np.inf and lse[3] == np.inf and lse[22] == np.inf and np.isnan(lse[20]) and np.isnan(lse[0])
    assert abs(lse[19]) < 1e-6
    assert np.array_equal(of("ARGMAX")[[0, 1, 5, 6, 7, 20, 21, 22]], [0, 2, 0, 0, 0, 0, 0, 1])
    assert np.array_equal(of("ARGMIN")[[0, 1, 4, 6, 7, 20]], [0, 2, 0, 0, 0, 0])
    average = of("AVERAGE")
    assert average[8] == np.inf and average[14] == 0


def test_subnormal_sums_and_products_are_exact_not_flushed(device):
    x = np.full(1000, 1e-45, np.float32)
    assert dml.reduce(x, "SUM", device=device).view(np.uint32)[0] == 1000  # 1000 times the smallest subnormal
    assert dml.reduce(x, "MAX", device=device)[0] == np.float32(1e-45)
    mixed = np.array([1e-38, -9.99e-39, 1e-45, 2e-45], np.float32)
    assert_reduce_matches(dml.reduce(mixed, "SUM", device=device), mixed, "SUM", (0,))
    assert dml.reduce(mixed, "SUM", device=device)[0] != 0
    half = np.array([6e-8, 6e-8, 6e-8, 6e-8], np.float16)  # FP16 subnormals: the result one too
    assert_reduce_matches(dml.reduce(half, "SUM", device=device), half, "SUM", (0,))
    assert dml.reduce(half, "SUM", device=device)[0] == np.float16(4 * np.float32(np.float16(6e-8)))


# Terms at the edges of the range summed with the hardware's adds (zeros and multiples of
# 2^-126 below 2^64, biased exponents 24 to 190) and just outside it.
EDGE_TERMS = np.array([2.0**-103, np.nextafter(np.float32(2.0**-103), 0), 2.0**64,
                       np.nextafter(np.float32(2.0**64), 0), 1e-40, -1e-45, 3e38, np.inf, np.nan, -0.0], np.float32)


@pytest.mark.parametrize("function", [F.SUM, F.AVERAGE, F.SUM_SQUARE, F.L1])
def test_one_term_outside_the_plain_range_makes_its_row_exact(device, function):
    """A row is summed with the hardware's adds while every term is plain, and again with the
    exact add when one is not: a pair of normal terms whose sum is subnormal (a flushing adder
    gives 0), in one block of eight, across blocks and in a chunk's tail, and each edge term
    anywhere, give the documented tree's bits."""
    rng = np.random.default_rng(function.value)
    low, high = np.float32(1.5 * 2.0**-126), np.float32(-(2.0**-126))
    for length in (72, 75, 4104):
        x = np.zeros((len(EDGE_TERMS) + 3, length), np.float32)
        x[:len(EDGE_TERMS)] = rng.standard_normal((len(EDGE_TERMS), length)).astype(np.float32)
        for row, term in enumerate(EDGE_TERMS):
            x[row, rng.integers(0, length)] = term
        for row, (a, b) in enumerate(((8, 9), (7, 8), (length - 2, length - 1)), len(EDGE_TERMS)):
            x[row, a], x[row, b] = low, high  # the rest zeros: the sum is 2^-127, subnormal
        with np.errstate(over="ignore", invalid="ignore"):
            assert_reduce_matches(dml.reduce(x, function, (1,), device=device), x, function, (1,))
    if function is F.SUM:
        assert dml.reduce(x[-3:], function, (1,), device=device).view(np.uint32).tolist() == [[0x400000]] * 3


def test_log_sum_is_within_two_ulp_where_the_total_is_near_one(device):
    """Totals in [0.5, 2] (one element per row: the total is the element), where log's
    result is small and its relative error shows: the contract is 2 FP32 ULP of float64."""
    rng = np.random.default_rng(12)
    x = np.concatenate([rng.uniform(0.5, 2, 4000), 1 + rng.uniform(-2**-10, 2**-10, 4000)]).astype(np.float32)
    x = x[:, None]
    assert_reduce_matches(dml.reduce(x, "LOG_SUM", (1,), device=device), x, "LOG_SUM", (1,))


def test_overflow_of_narrow_types_in_the_final_rounding(device):
    x = np.array([[60000.0, 60000.0, -1.0], [65504.0, 8.0, 0.0], [-60000.0, -60000.0, 0.0]], np.float16)
    got = dml.reduce(x, "SUM", (1,), device=device)[:, 0]
    assert got[0] == np.inf and got[1] == np.float16(65504) and got[2] == -np.inf  # FP32 sum, rounded once
    assert_reduce_matches(dml.reduce(x, "AVERAGE", (1,), device=device), x, "AVERAGE", (1,))
    assert dml.reduce(x, "AVERAGE", (1,), device=device)[0, 0] == np.float16(np.float32(119999) / 3)


def test_integer_sums_and_products_wrap_modulo_2_to_the_32(device):
    i32 = np.array([[2**31 - 1, 1, 0], [-(2**31), -1, 0], [65536, 65536, 1], [-(2**31), -1, 1]], np.int32)
    assert np.array_equal(dml.reduce(i32, "SUM", (1,), device=device)[:, 0], [-(2**31), 2**31 - 1, 131073, -(2**31)])
    assert np.array_equal(dml.reduce(i32[:, :2], "MULTIPLY", (1,), device=device)[:, 0],
                          np.array([2**31 - 1, -(2**31), 0, -(2**31)], np.int64).astype(np.int32))
    u32 = np.array([[2**32 - 1, 2, 0], [2**31, 2**31, 7], [65537, 65537, 1]], np.uint32)
    assert np.array_equal(dml.reduce(u32, "SUM", (1,), device=device)[:, 0], np.array([1, 7, 131075], np.uint32))
    assert np.array_equal(dml.reduce(u32, "MULTIPLY", (1,), device=device)[:, 0],
                          np.array([0, 0, (65537 * 65537) % 2**32], np.uint32))


def test_integer_l1_and_sum_square_wrap_modulo_2_to_the_32(device):
    i32 = np.array([[2**31 - 1, -(2**31), 7], [3, -4, 5], [46341, -65537, 0]], np.int32)
    assert np.array_equal(dml.reduce(i32, "L1", (1,), device=device)[:, 0], [6, 12, 111878])
    squares = [(2**31 - 1) ** 2 + 2**62 + 49, 50, 46341**2 + 65537**2]
    assert np.array_equal(dml.reduce(i32, "SUM_SQUARE", (1,), device=device)[:, 0],
                          np.array([v % 2**32 for v in squares], np.uint64).astype(np.uint32).view(np.int32))
    u32 = np.array([[2**32 - 1, 2**31, 7], [65536, 65537, 1]], np.uint32)
    assert np.array_equal(dml.reduce(u32, "L1", (1,), device=device)[:, 0], np.array([2**31 + 6, 131074], np.uint32))
    assert np.array_equal(dml.reduce(u32, "SUM_SQUARE", (1,), device=device)[:, 0],
                          np.array([(1 + 0 + 49), (131073 + 1) % 2**32], np.uint32))


@pytest.mark.parametrize("data_type", list(NUMPY_WIDE), ids=lambda t: t.name)
def test_64_bit_integers_reduce_exactly(device, data_type):
    """INT64 and UINT64 in 32-bit words: neighbours of 2**53 that an FP64 compare would tie,
    each type's ends, sums and products that wrap modulo 2**64, ties across the chunks of rows
    of 9,000 found in each direction's order, and strided, transposed and broadcast inputs."""
    dtype = NUMPY_WIDE[data_type]
    info = np.iinfo(dtype)
    close = np.array([2**53, 2**53 + 1, 2**53, 2**53 - 1], dtype)
    assert dml.reduce(close, "MAX", device=device)[0] == 2**53 + 1
    assert dml.reduce(close, "ARGMAX", device=device)[0] == 1
    assert dml.reduce(close, "ARGMIN", device=device)[0] == 3
    ends = np.array([info.max, info.min, info.max - 1, info.min + 1], dtype)
    for function in ("MAX", "MIN", "ARGMAX", "ARGMIN", "SUM", "MULTIPLY", "L1", "SUM_SQUARE"):
        assert_reduce_matches(dml.reduce(ends, function, device=device), ends, function, (0,))
    rng = np.random.default_rng(data_type.value)
    ties = rng.integers(0, 4, (4, 9000)).astype(dtype)
    ties[0, [7, 4095, 4096, 8191, 8192, 8999]] = info.max  # the row's extremes on every chunk edge
    ties[1, [7, 4095, 4096, 8191, 8192, 8999]] = info.min
    ties[2] = info.min  # one value throughout: the first (or last) index
    for cls, function in ((dml.ArgMaxOperatorDesc, "ARGMAX"), (dml.ArgMinOperatorDesc, "ARGMIN")):
        for direction, output_type in (("INCREASING", T.INT64), ("DECREASING", T.UINT32)):
            desc = cls(dml.BufferTensorDesc(data_type, ties.shape),
                       dml.BufferTensorDesc(output_type, (4, 1)), (1,), axis_direction=direction)
            assert_reduce_matches(run_desc(device, desc, ties), ties, function, (1,), direction)
    for sizes, strides, axes in (((4, 5, 6), (1, 4, 20), (0, 2)), ((3, 7, 5), (5, 0, 1), (1,)),
                                 ((4000, 3), (3, 1), (0,))):
        desc = reduce_desc(F.SUM, data_type, sizes, axes, strides=strides)
        storage, x = storage_for(desc.input_tensor, lambda n: values_for(F.SUM, data_type, (n,), rng))
        assert_reduce_matches(run_desc(device, desc, storage), x, F.SUM, axes)


def test_integer_extremes_compare_exactly_with_their_signedness(device):
    """Values above 2**24 that a float comparison would tie, and the top bit of each type."""
    close = np.array([16777216, 16777217, 16777216], np.int32)
    assert dml.reduce(close, "MAX", device=device)[0] == 16777217
    assert dml.reduce(close, "ARGMAX", device=device)[0] == 1
    assert dml.reduce(close, "ARGMIN", device=device)[0] == 0
    assert dml.reduce(close[::-1].copy(), "MIN", device=device)[0] == 16777216
    assert dml.argmax(np.array([2**31 - 2, 2**31 - 1, 2**31 - 2], np.int32), device=device) == 1
    assert dml.argmin(np.array([-(2**31) + 1, -(2**31), -(2**31) + 1], np.int32), device=device) == 1
    big = np.array([4294967294, 4294967295, 1], np.uint32)
    assert dml.reduce(big, "ARGMAX", device=device)[0] == 1 and dml.reduce(big, "MAX", device=device)[0] == 4294967295
    assert dml.reduce(big, "MIN", device=device)[0] == 1
    signed = np.array([-(2**31), 5, 2**31 - 1], np.int32)
    assert dml.reduce(signed, "MAX", device=device)[0] == 2**31 - 1
    assert dml.reduce(signed, "ARGMIN", device=device)[0] == 0
    for dtype in (np.int8, np.int16, np.uint8, np.uint16):
        info = np.iinfo(dtype)
        x = np.array([info.min + 1, info.max, info.min, info.max - 1, info.min], dtype)
        assert dml.reduce(x, "MAX", device=device)[0] == info.max and dml.reduce(x, "MIN", device=device)[0] == info.min
        assert dml.reduce(x, "ARGMAX", device=device)[0] == 1 and dml.reduce(x, "ARGMIN", device=device)[0] == 2


# --- Ties and NaN placement ------------------------------------------------------------------------


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.INT16])
def test_ties_and_nans_in_both_directions(device, data_type):
    rows = [[1, 3, 3, 2, 3, 0], [-0.0, 0.0, -1, -0.0, -1, 0.0], [1, np.nan, 5, np.nan, 7, 0],
            [-np.inf] * 6, [np.inf, 2, np.inf, -np.inf, -np.inf, 1], [np.nan] * 6, [4, 4, 4, 4, 4, 4]]
    if data_type is T.INT16:
        rows = [r for r in rows if not any(map(math.isinf, r)) and not any(map(math.isnan, r))]
    x = np.array(rows, np.float32).astype(NUMPY[data_type])
    expected = {  # row: (argmax first, argmax last, argmin first, argmin last)
        0: (1, 4, 5, 5), 1: (0, 5, 2, 4), 2: (1, 3, 1, 3), 3: (0, 5, 0, 5), 4: (0, 2, 3, 4), 5: (0, 5, 0, 5),
        6: (0, 5, 0, 5)}
    if data_type is T.INT16:
        expected = {0: expected[0], 1: expected[1], 2: expected[6]}
    for k, (cls, direction) in enumerate([(dml.ArgMaxOperatorDesc, "INCREASING"),
                                          (dml.ArgMaxOperatorDesc, "DECREASING"),
                                          (dml.ArgMinOperatorDesc, "INCREASING"),
                                          (dml.ArgMinOperatorDesc, "DECREASING")]):
        desc = cls(dml.BufferTensorDesc(data_type, x.shape), dml.BufferTensorDesc(T.UINT32, (x.shape[0], 1)), (1,),
                   axis_direction=direction)
        got = run_desc(device, desc, x)[:, 0]
        assert got.tolist() == [expected[r][k] for r in range(len(x))], (cls.__name__, direction)
        assert_reduce_matches(got[:, None], x, "ARGMAX" if "Max" in cls.__name__ else "ARGMIN", (1,), direction)
    # REDUCE's ARGMAX and ARGMIN are INCREASING.
    assert dml.reduce(x, "ARGMAX", (1,), device=device)[:, 0].tolist() == [expected[r][0] for r in range(len(x))]
    assert dml.reduce(x, "ARGMIN", (1,), device=device)[:, 0].tolist() == [expected[r][2] for r in range(len(x))]


def test_ties_are_ordered_over_the_flattened_reduced_axes(device):
    """The index is row-major over the reduced axes in increasing axis order, whatever the
    tensor's layout."""
    x = np.zeros((3, 2, 4), np.float32)
    x[2, 0, 1] = x[0, 1, 3] = 5.0  # reduced (0, 2): flattened indices 2*4+1 = 9 and 0*4+3 = 3
    assert dml.reduce(x, "ARGMAX", (0, 2), device=device)[:, 1, :].tolist() == [[3]]
    assert dml.reduce(x, "ARGMAX", (0, 2), device=device)[:, 0, :].tolist() == [[9]]
    desc = dml.ArgMaxOperatorDesc(dml.BufferTensorDesc(T.FLOAT32, (3, 2, 4)), dml.BufferTensorDesc(T.INT32, (1, 1, 1)),
                                  (2, 0, 1), axis_direction="DECREASING")  # axes in any order: the same flattening
    y = np.zeros((3, 2, 4), np.float32)
    y[0, 1, 3] = y[2, 0, 1] = 5.0  # flattened (0, 1, 2): 0*8+1*4+3 = 7 and 2*8+0+1 = 17
    assert run_desc(device, desc, y).tolist() == [[[17]]]


# --- The NumPy front ends ---------------------------------------------------------------------------


def numpy_like(x, function, axis, keepdims):
    """The reference shaped as NumPy's conventions shape it."""
    axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    result = reduce_reference(x, function, axes)
    shape = np.sum(np.zeros(x.shape, np.float32), axis=axis, keepdims=keepdims).shape
    return result.reshape(shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_sum_mean_prod_follow_the_pairwise_reference(device, dtype):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((4, 5, 6)) * 3).astype(dtype)
    near_one = rng.uniform(0.5, 2, (4, 5, 6)).astype(dtype)
    for axis in (None, -1, (0, 2), (-1, 0)):  # (0, 2) and (-1, 0): the same order
        for keepdims in (False, True):
            for name, function, values in (("sum", "SUM", x), ("mean", "AVERAGE", x), ("prod", "MULTIPLY", near_one)):
                got = getattr(dml, name)(values, axis=axis, keepdims=keepdims, device=device)
                assert isinstance(got, np.ndarray) and got.dtype == values.dtype
                assert_same_bits(got, numpy_like(values, function, axis, keepdims), f"{name} {axis} {keepdims}")
    full = dml.sum(x, device=device)
    assert isinstance(full, np.ndarray) and full.ndim == 0 and full.dtype == x.dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.uint8])
def test_max_min_argmax_argmin_equal_numpys(device, dtype):
    rng = np.random.default_rng(8)
    shape = (5, 4, 6)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, min(info.max, info.min + 40), shape, endpoint=True).astype(dtype)  # ties
    else:
        x = np.round(rng.standard_normal(shape) * 3).astype(np.float32)
        x[1, 2, 3] = x[3, 0, 0] = x[3, 0, 4] = x[4, 3, 5] = np.nan  # NumPy's argmax: the first NaN
        x[0, 1, :] = np.nan
        x[2, 3, :] = [1, 7, 7, -2, 7, 0]
        x = x.astype(dtype)
    for axis in (None, 1, -1, 2, -3):  # -1 and 2, 0 and -3: the same shaders
        for keepdims in (False, True):
            for name in ("argmax", "argmin"):
                got = getattr(dml, name)(x, axis=axis, keepdims=keepdims, device=device)
                expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
                assert isinstance(got, np.ndarray) and got.dtype == np.int64 and got.shape == np.shape(expected)
                assert np.array_equal(got, expected), (name, axis, keepdims)
    for axis in (None, 0, (2, 1), (0, 1, 2)):
        for keepdims in (False, True):
            for name in ("max", "min"):
                got = getattr(dml, name)(x, axis=axis, keepdims=keepdims, device=device)
                with np.errstate(invalid="ignore"):
                    expected = np.asarray(getattr(np, name)(x, axis=axis, keepdims=keepdims))
                assert isinstance(got, np.ndarray) and got.dtype == x.dtype and got.shape == expected.shape
                assert np.array_equal(got, expected, equal_nan=np.dtype(dtype).kind not in "iu"), (name, axis, keepdims)


def test_max_and_min_order_signed_zeros(device):
    x = np.array([[-0.0, 0.0], [0.0, -0.0]], np.float32)
    for axis in (0, 1):
        assert np.array_equal(dml.max(x, axis=axis, device=device).view(np.uint32), np.zeros(2, np.uint32))
        assert np.array_equal(dml.min(x, axis=axis, device=device).view(np.uint32), np.full(2, 0x80000000, np.uint32))
    assert dml.argmax(x, device=device) == 0 and dml.argmin(x, device=device) == 0  # -0 ties with +0


def test_sums_and_products_of_narrow_integers_accumulate_as_numpy_s(device, device_at):
    """NumPy sums and multiplies an integer narrower than 64 bits as int64 (signed) or uint64
    (unsigned), and so do dml.sum and dml.prod (FEATURE_LEVEL_5_0), arrays and device arrays
    alike: a comparison's UINT8 mask counts its ones. On a device capped below 5_0 they stay
    in x's dtype and wrap; DirectML's own REDUCE keeps x's dtype at every level."""
    cases = [np.array([[2**31 - 1, 2], [5, -7]], np.int32), np.array([65536, 65536, 3], np.int32),
             np.array([4294967295, 3], np.uint32), np.array([-128, -128, 100], np.int8),
             np.array([250, 250, 250], np.uint8), np.array([-30000, 30000, 7], np.int16)]
    for x in cases:
        for name in ("sum", "prod"):
            expected = getattr(np, name)(x, axis=0)
            for operand in (x, dml.asarray(x, device=device)):
                got = getattr(dml, name)(operand, axis=0, device=device)
                got = got.numpy() if isinstance(got, dml.DeviceArray) else got
                assert got.dtype == expected.dtype and np.array_equal(got, expected), (name, x.dtype, got)
    on_device = dml.asarray(np.arange(10, dtype=np.float32), device=device)
    assert (on_device > 6.5).sum().item() == 3 and np.sum(on_device > 6.5).dtype == np.uint64
    assert dml.reduce(cases[0], "SUM", (0,), device=device).dtype == np.int32
    for operand in (cases[3], dml.asarray(cases[3], device=device)):  # NumPy's dtype argument: no widening
        got = dml.sum(operand, dtype=np.int32, device=device)
        assert (got.numpy() if isinstance(got, dml.DeviceArray) else got).dtype == np.int32 and int(got) == -156
    assert dml.mean(cases[3], dtype=np.float32, device=device) == np.float32(-52)
    with raises(dml.InvalidArgumentError, "dtype", "'nope'", "not a NumPy dtype"):
        dml.prod(cases[3], dtype="nope", device=device)
    with raises(dml.InvalidArgumentError, "dtype", "'nope'", "not a NumPy dtype"):
        dml.asarray(cases[3], device=device).cumsum(dtype="nope")
    capped = device_at(dml.FeatureLevel.LEVEL_4_1)
    got = dml.sum(cases[0], axis=0, device=capped)
    assert got.dtype == np.int32 and got.tolist() == [-(2**31) + 4, -5]
    assert dml.prod(cases[2], device=capped).dtype == np.uint32


def test_mean_of_integers_is_refused(device):
    with raises(dml.InvalidArgumentError, "mean: x has dtype int32", "AVERAGE", "x.astype(np.float32)"):
        dml.mean(np.array([1, 2, 3], np.int32), device=device)


def test_dtypes_refused_in_the_front_ends_terms(device):
    """A dtype DirectML's operator does not take: the function and argument named, and how to
    convert it."""
    cases = [(dml.sum, np.float64, dml.InvalidArgumentError, "REDUCE's SUM does not take", "np.float32"),
             (dml.mean, np.int64, dml.InvalidArgumentError, "REDUCE's AVERAGE does not take", "np.float32"),
             (dml.max, np.float64, dml.InvalidArgumentError, "REDUCE's MAX does not take", "np.float32"),
             (dml.cumprod, np.float64, dml.InvalidArgumentError, "CUMULATIVE_PRODUCT does not take", "np.float32"),
             (lambda x, device: dml.top_k(x, 1, device=device), np.float64, dml.InvalidArgumentError,
              "TOP_K1 does not take", "np.float32"),
             (lambda x, device: dml.reduce(x, "L2", device=device), np.int32, dml.InvalidArgumentError,
              "REDUCE's L2 does not take", "np.float32")]
    for front_end, dtype, error, rule, target in cases:
        for x in (np.arange(1, 4, dtype=dtype), dml.asarray(np.arange(1, 4, dtype=dtype), device=device)):
            with raises(error, f"x has dtype {np.dtype(dtype).name}", rule, f"x.astype({target})") as caught:
                front_end(x, device=device)
            assert caught.value.field == "data_type"


def test_numpy_s_int64_arrays_reduce_in_their_own_dtype(device):
    """NumPy's default integers (int64 and uint64) are reduced in 64 bits, wrapping modulo
    2**64 as NumPy's own sums do, on arrays and device arrays alike."""
    rng = np.random.default_rng(64)
    x = rng.integers(-2**62, 2**62, (5, 300), dtype=np.int64)
    u = x.view(np.uint64)
    with np.errstate(over="ignore"):
        for got, expected in ((dml.sum(x, device=device), x.sum()), (dml.sum(x, axis=0, device=device), x.sum(0)),
                              (dml.prod(u, axis=1, device=device), u.prod(1)), (dml.max(u, device=device), u.max()),
                              (dml.min(x, axis=1, keepdims=True, device=device), x.min(1, keepdims=True)),
                              (dml.argmax(x, device=device), x.argmax()), (dml.argmin(u, axis=0, device=device),
                                                                          u.argmin(0)),
                              (dml.cumsum(x, axis=1, device=device), x.cumsum(1)),
                              (dml.cumprod(u, device=device), u.cumprod())):
            assert got.dtype == expected.dtype and np.array_equal(got, expected)
        on_device = dml.asarray(x, device=device)
        assert np.array_equal(np.sum(on_device, axis=1).numpy(), x.sum(1))
        assert np.array_equal((on_device * 3).max(axis=0).numpy(), (x * 3).max(0))
        assert np.array_equal(on_device.T.cumsum(axis=0).numpy(), x.T.cumsum(0))


def test_empty_arrays_follow_numpy(device):
    empty = np.zeros((0,), np.float32)
    for name, value in (("sum", 0.0), ("prod", 1.0)):
        got = getattr(dml, name)(empty, device=device)
        assert got.dtype == np.float32 and got.shape == () and got == value
    got = dml.sum(np.zeros((0, 3), np.float16), axis=0, device=device)
    assert got.dtype == np.float16 and got.shape == (3,) and not got.any()
    assert dml.prod(np.zeros((0, 3), np.int32), axis=0, keepdims=True, device=device).tolist() == [[1, 1, 1]]
    assert dml.sum(np.zeros((2, 0), np.float32), axis=0, device=device).shape == (0,)
    assert np.isnan(dml.mean(empty, device=device)) and dml.mean(empty, device=device).dtype == np.float32
    means = dml.mean(np.zeros((0, 3), np.float32), axis=0, device=device)
    assert means.shape == (3,) and np.isnan(means).all()
    for name in ("max", "min", "argmax", "argmin"):
        with raises(dml.InvalidArgumentError, "x"):
            getattr(dml, name)(empty, device=device)
        with raises(dml.InvalidArgumentError, "x"):
            getattr(dml, name)(np.zeros((0, 3), np.float32), axis=0, device=device)
        got = getattr(dml, name)(np.zeros((0, 3), np.float32), axis=1, device=device)  # nothing reduced is empty
        assert got.shape == (0,) and got.dtype == (np.int64 if name.startswith("arg") else np.float32)


def test_zero_dimensional_arrays(device):
    x = np.array(2.5, np.float32)
    for name in ("sum", "mean", "prod", "max", "min"):
        got = getattr(dml, name)(x, device=device)
        assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float32 and got == 2.5
    for name in ("argmax", "argmin"):
        got = getattr(dml, name)(x, device=device)
        assert got.shape == () and got.dtype == np.int64 and got == 0
    assert dml.sum(x, keepdims=True, device=device).shape == ()


def test_front_end_axes_are_checked(device):
    x = np.ones((2, 3, 4), np.float32)
    for axis, words in (((0, 0), ("axis", "repeat")), (3, ("axis", "3")), (-4, ("axis", "-4")),
                        ((0, 5), ("axis", "5")), ("last", ("axis",)), (1.0, ("axis",))):
        for name in ("sum", "max"):
            with raises(dml.InvalidArgumentError, *words):
                getattr(dml, name)(x, axis=axis, device=device)
    for axis in (3, -4, 1.5):
        with raises(dml.InvalidArgumentError, "axis"):
            dml.argmax(x, axis=axis, device=device)


def test_reduce_front_end(device):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    whole = dml.reduce(x, "sum", device=device)  # axes None: every axis; names in any case
    assert whole.shape == (1, 1, 1)
    assert_reduce_matches(whole, x, "SUM", (0, 1, 2))
    assert_same_bits(dml.reduce(x, "Sum_Square", (0, 2), device=device), reduce_reference(x, "SUM_SQUARE", (0, 2)))
    index = dml.reduce(x, F.ARGMAX, device=device)
    assert index.dtype == np.uint32 and index.shape == (1, 1, 1) and index.item() == np.argmax(x)
    assert dml.reduce(x, dml.ReduceFunction.ARGMIN, (1,), device=device).dtype == np.uint32
    with raises(dml.InvalidArgumentError, "median"):
        dml.reduce(x, "median", device=device)
    with raises(dml.InvalidArgumentError, "axes"):
        dml.reduce(x, "SUM", (1, 1), device=device)
    with raises(dml.DmlError):
        dml.reduce(x.astype(np.int32), "AVERAGE", (1,), device=device)


# --- What descs refuse -------------------------------------------------------------------------------


def test_desc_axes_rules():
    tensor, out = dml.BufferTensorDesc(T.FLOAT32, (2, 3, 4)), dml.BufferTensorDesc(T.FLOAT32, (2, 1, 4))
    for axes, words in (((1, 1), ("axes", "repeats")), ((3,), ("axes", "3")), ((-1,), ("axes", "-1")),
                        ((), ("axes", "empty")), (("1",), ("axes", "tuple of ints")), ((1.0,), ("axes",)),
                        ((True,), ("axes",)), (1, ("axes",)), (None, ("axes",))):
        with raises(dml.InvalidArgumentError, *words):
            dml.ReduceOperatorDesc(tensor, out, F.SUM, axes)
        with raises(dml.InvalidArgumentError, *words):
            dml.ArgMaxOperatorDesc(tensor, dml.BufferTensorDesc(T.UINT32, (2, 1, 4)), axes)
    assert dml.ReduceOperatorDesc(tensor, out, F.SUM, [1]).axes == (1,)


def test_desc_output_rules():
    x = dml.BufferTensorDesc(T.FLOAT32, (2, 3, 4))
    for sizes in ((2, 3, 4), (1, 1, 4), (2, 1, 1), (1, 3, 4)):
        with raises(dml.InvalidArgumentError, "output_tensor.sizes", str(sizes)):
            dml.ReduceOperatorDesc(x, dml.BufferTensorDesc(T.FLOAT32, sizes), F.SUM, (1,))
        with raises(dml.InvalidArgumentError, "output_tensor.sizes", str(sizes)):
            dml.ArgMinOperatorDesc(x, dml.BufferTensorDesc(T.UINT32, sizes), (1,))
    for sizes in ((2, 4), (2, 1, 4, 1)):  # another dimension count
        with raises(dml.InvalidArgumentError, "output_tensor"):
            dml.ReduceOperatorDesc(x, dml.BufferTensorDesc(T.FLOAT32, sizes), F.SUM, (1,))
    for function, output_type in ((F.SUM, T.FLOAT16), (F.MAX, T.INT32), (F.AVERAGE, T.BFLOAT16), (F.ARGMAX, T.FLOAT32),
                                  (F.ARGMIN, T.FLOAT16), (F.ARGMAX, T.INT16), (F.ARGMIN, T.UINT8)):
        with raises(dml.InvalidArgumentError, "output_tensor.data_type", output_type.name):
            dml.ReduceOperatorDesc(x, dml.BufferTensorDesc(output_type, (2, 1, 4)), function, (1,))
    for cls in (dml.ArgMaxOperatorDesc, dml.ArgMinOperatorDesc):
        for output_type in (T.FLOAT32, T.FLOAT16, T.INT16):
            with raises(dml.InvalidArgumentError, "output_tensor.data_type", output_type.name):
                cls(x, dml.BufferTensorDesc(output_type, (2, 1, 4)), (1,))
    i32 = dml.BufferTensorDesc(T.INT32, (2, 3, 4))
    with raises(dml.InvalidArgumentError, "output_tensor.data_type"):
        dml.ReduceOperatorDesc(i32, dml.BufferTensorDesc(T.UINT32, (2, 1, 4)), F.SUM, (1,))


def test_desc_function_and_direction_rules():
    x, out = dml.BufferTensorDesc(T.FLOAT32, (2, 3)), dml.BufferTensorDesc(T.FLOAT32, (2, 1))
    for function in (42, "SOFTMAX", None, dml.AxisDirection.INCREASING, 10):
        with raises(dml.InvalidArgumentError, "function", "ReduceFunction"):
            dml.ReduceOperatorDesc(x, out, function, (1,))
    assert dml.ReduceOperatorDesc(x, out, "LOG_SUM_EXP", (1,)).function is F.LOG_SUM_EXP
    for direction in ("UP", 1, None, F.SUM):
        with raises(dml.InvalidArgumentError, "axis_direction"):
            dml.ArgMaxOperatorDesc(x, dml.BufferTensorDesc(T.UINT32, (2, 1)), (1,), axis_direction=direction)


@pytest.mark.parametrize("function", list(F), ids=lambda f: f.name)
def test_data_types_each_function_takes(function):
    """DirectML's types per function; any other is refused whatever the level."""
    for data_type in (*NUMPY, T.FLOAT64):
        x = dml.BufferTensorDesc(data_type, (1, 1, 2, 3))
        out = dml.BufferTensorDesc(T.UINT32 if function in ARG else data_type, (1, 1, 2, 1))
        if data_type in TYPES[function]:
            assert dml.ReduceOperatorDesc(x, out, function, (3,)).function is function
        else:
            with raises(dml.InvalidArgumentError, "input_tensor.data_type", data_type.name):
                dml.ReduceOperatorDesc(x, out, function, (3,))


def test_feature_level_gating(device_at):
    check = functools.partial(check_level, device_at)

    four, three = (1, 2, 3, 4), (2, 3, 4)
    check(FL.LEVEL_1_0, reduce_desc(F.SUM, T.FLOAT32, four, (3,)), True)
    check(FL.LEVEL_1_0, reduce_desc(F.ARGMAX, T.FLOAT16, four, (1, 3)), True)
    check(FL.LEVEL_1_0, reduce_desc(F.LOG_SUM_EXP, T.FLOAT32, four, (2,)), True)
    for function in (F.SUM, F.MAX, F.ARGMIN, F.AVERAGE, F.L2):
        check(FL.LEVEL_2_1, reduce_desc(function, T.FLOAT32, three, (1,)), False, "LEVEL_3_0")
        check(FL.LEVEL_3_0, reduce_desc(function, T.FLOAT32, three, (1,)), True)
        check(FL.LEVEL_3_0, reduce_desc(function, T.FLOAT32, (5,), (0,)), True)
        check(FL.LEVEL_3_0, reduce_desc(function, T.FLOAT32, (1,) * 7 + (3,), (7,)), True)
    for function in (F.SUM, F.MULTIPLY, F.MAX, F.MIN):
        for data_type in (T.INT32, T.UINT32):
            check(FL.LEVEL_2_0, reduce_desc(function, data_type, four, (2,)), False, "LEVEL_2_1")
            check(FL.LEVEL_2_1, reduce_desc(function, data_type, four, (2,)), True)
    for function in (F.MAX, F.MIN):
        for data_type in (T.INT16, T.INT8, T.UINT16, T.UINT8):
            check(FL.LEVEL_2_1, reduce_desc(function, data_type, four, (2,)), False, "LEVEL_3_0")
            check(FL.LEVEL_3_0, reduce_desc(function, data_type, four, (2,)), True)
    for function in (F.L1, F.SUM_SQUARE):
        for data_type in (T.INT32, T.UINT32):
            check(FL.LEVEL_4_1, reduce_desc(function, data_type, three, (2,)), False, "LEVEL_5_0")
            check(FL.LEVEL_5_0, reduce_desc(function, data_type, three, (2,)), True)
    for function in TAKES_64_BITS:
        for data_type in NUMPY_WIDE:
            level = FL.LEVEL_4_1 if function in ARG else FL.LEVEL_5_0
            check(FL.LEVEL_4_0 if function in ARG else FL.LEVEL_4_1, reduce_desc(function, data_type, three, (2,)),
                  False, level.name)
            check(level, reduce_desc(function, data_type, three, (2,)), True)
    for function in ARG:
        for data_type in INTEGERS:
            check(FL.LEVEL_2_0, reduce_desc(function, data_type, four, (2,)), False, "LEVEL_2_1")
            check(FL.LEVEL_2_1, reduce_desc(function, data_type, four, (2,)), True)
            check(FL.LEVEL_2_1, reduce_desc(function, data_type, three, (2,)), False, "LEVEL_3_0")
        int32_out = reduce_desc(function, T.FLOAT32, four, (2,), output_type=T.INT32)
        check(FL.LEVEL_2_1, int32_out, False, "INT32", "LEVEL_3_0")
        check(FL.LEVEL_3_0, int32_out, True)
    for cls in (dml.ArgMaxOperatorDesc, dml.ArgMinOperatorDesc):
        desc = cls(dml.BufferTensorDesc(T.FLOAT32, four), dml.BufferTensorDesc(T.UINT32, (1, 2, 1, 4)), (2,))
        check(FL.LEVEL_2_1, desc, False, "LEVEL_3_0")
        check(FL.LEVEL_3_0, desc, True)
        check(FL.LEVEL_3_0, cls(dml.BufferTensorDesc(T.INT8, (7,)), dml.BufferTensorDesc(T.INT32, (1,)), (0,)), True)
        for data_type in NUMPY_WIDE:
            wide = cls(dml.BufferTensorDesc(data_type, (7,)), dml.BufferTensorDesc(T.UINT32, (1,)), (0,))
            check(FL.LEVEL_4_0, wide, False, data_type.name, "LEVEL_4_1")
            check(FL.LEVEL_4_1, wide, True)


def test_strict_directml_refuses_bfloat16():
    strict = dml.create_device(strict_directml=True)
    try:
        strict.create_operator(reduce_desc(F.SUM, T.FLOAT16, (2, 3), (1,)))
        for desc in (reduce_desc(F.SUM, T.BFLOAT16, (2, 3), (1,)), reduce_desc(F.ARGMAX, T.BFLOAT16, (2, 3), (1,)),
                     dml.ArgMinOperatorDesc(dml.BufferTensorDesc(T.BFLOAT16, (2, 3)),
                                            dml.BufferTensorDesc(T.UINT32, (2, 1)), (1,))):
            with raises(dml.UnsupportedError, "BFLOAT16", "strict_directml"):
                strict.create_operator(desc)
    finally:
        strict.close()


@pytest.mark.parametrize("output_type", [T.INT64, T.UINT64], ids=lambda t: t.name)
def test_64_bit_indices_are_the_index_zero_extended(device, output_type):
    """ARGMAX and ARGMIN write INT64 and UINT64 indices (FEATURE_LEVEL_3_0) as both words of
    each element, into packed and strided outputs whose other words keep what they held."""
    rng = np.random.default_rng(output_type.value)
    x = rng.integers(-5, 6, (6, 5000)).astype(np.float32)  # ties, rows spanning two chunks
    x[2, 4500] = np.nan
    for desc, axes, direction in (
            (reduce_desc(F.ARGMAX, T.FLOAT32, (6, 5000), (1,), output_type=output_type), (1,), "INCREASING"),
            (dml.ArgMinOperatorDesc(dml.BufferTensorDesc(T.FLOAT32, (6, 5000)),
                                    dml.BufferTensorDesc(output_type, (6, 1), (3, 1)), (1,),
                                    axis_direction="DECREASING"), (1,), "DECREASING")):
        compiled = device.compile_operator(device.create_operator(desc))
        source = device.create_buffer(tensor=desc.input_tensor)
        source.write(x)
        result = device.create_buffer(tensor=desc.output_tensor)
        words = desc.output_tensor.total_tensor_size_in_bytes // 4
        result.write(np.full(words, 0xDEADBEEF, np.uint32).tobytes())  # high words must be written, gaps kept
        size = compiled.binding_properties.temporary_resource_size
        temporary = device.create_buffer(size) if size else None
        device.execute(device.create_binding_table(compiled, inputs=[source], outputs=[result], temporary=temporary))
        stored = result.read(output_type, count=words // 2).view(np.uint32)  # every word, gaps too
        step = desc.output_tensor.element_strides[0]
        expected = reduce_reference(x, desc.function if hasattr(desc, "function") else "ARGMIN", axes, direction)
        got = stored.reshape(-1, 2)[::step]
        assert np.array_equal(got[:, 0], expected.reshape(-1)) and not got[:, 1].any()
        assert np.all(stored.reshape(-1, 2)[np.arange(len(stored) // 2) % step != 0] == 0xDEADBEEF)
        assert np.array_equal(result.read(), expected.astype(NUMPY_WIDE[output_type]))


# --- Random cases ------------------------------------------------------------------------------------


@st.composite
def reductions(draw):
    function = draw(st.sampled_from(list(F)))
    data_type = draw(st.sampled_from(TYPES[function]))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=4)))
    if draw(st.integers(0, 4)) == 0:  # now and then one long axis
        shape = (*shape[:-1][:2], draw(st.integers(300, 9000)))
    axes = tuple(draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True)))
    return function, data_type, shape, axes, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=12)
@given(case=reductions())
def test_random_reductions_match_the_reference(device, case):
    function, data_type, shape, axes, seed = case
    rng = np.random.default_rng(seed)
    x = values_for(function, data_type, shape, rng, long_rows=math.prod(shape) > 1000)
    if data_type in FLOATS and rng.integers(0, 3) == 0:  # specials scattered over the tensor
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, max(1, flat.size // 50))
        with np.errstate(over="ignore"):
            flat[picks] = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, 3e38], np.float32)[
                rng.integers(0, 6, picks.size)].astype(NUMPY[data_type])
    assert_reduce_matches(dml.reduce(x, function, axes, device=device), x, function, axes)


# --- Graphs ----------------------------------------------------------------------------------------


def test_graph_functions(device):
    """REDUCE after an element-wise node, and ARGMAX, in a graph: the bits of the front ends."""
    g = dml.GraphBuilder(device)
    x = g.input(dml.BufferTensorDesc(T.FLOAT32, (4, 5, 6)))
    total = dml.graph.reduce(dml.graph.tanh(x), function="SUM", axes=(1,))
    index = dml.graph.argmax(x, axes=[0, 2], axis_direction="DECREASING")
    largest = dml.graph.reduce(x, function=F.MAX, axes=(0, 1, 2))
    assert total.desc.sizes == (4, 1, 6) and total.desc.data_type is T.FLOAT32
    assert index.desc.sizes == (1, 5, 1) and index.desc.data_type in (T.INT32, T.UINT32)
    assert largest.desc.sizes == (1, 1, 1)
    compiled = g.build([total, index, largest])
    values = np.round(np.random.default_rng(2).standard_normal((4, 5, 6)) * 2).astype(np.float32)  # ties
    source = device.create_buffer(values.nbytes)
    source.write(values)
    outputs = [device.create_buffer(desc.total_tensor_size_in_bytes) for _, desc in compiled.output_tensors]
    size = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(size) if size else None
    device.execute(device.create_binding_table(compiled, [source], outputs, temporary))
    got = [buffer.read(NUMPY[desc.data_type], desc.element_count).reshape(desc.sizes)
           for buffer, (_, desc) in zip(outputs, compiled.output_tensors)]
    assert_same_bits(got[0], dml.reduce(dml.tanh(values, device=device), "SUM", (1,), device=device))
    assert_reduce_matches(got[1], values, "ARGMAX", (0, 2), "DECREASING")
    assert_reduce_matches(got[2], values, "MAX", (0, 1, 2))
