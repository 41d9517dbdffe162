"""Every layout a desc can express: interleaved sub-word outputs, alignment, segments and
windows beyond maxStorageBufferRange, BFLOAT16, and NumPy views mapped without copies."""

import dataclasses

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from layout import assert_bytes_equal, run_and_expect
from reference import relu_grad as reference

import dmlpy as dml
from dmlpy.base.types import data_type_info
from dmlpy.frontends import numpy_api
from dmlpy.runtime.kompute import GpuContext

T = dml.TensorDataType
SUB_WORD = [T.FLOAT16, T.BFLOAT16, T.INT16, T.INT8]
NAMES = ("input_tensor", "input_gradient_tensor", "output_gradient_tensor")


def desc_for(data_type, sizes, strides=(None, None, None), alignments=(0, 0, 0)):
    return dml.ActivationReluGradOperatorDesc(*[
        dml.BufferTensorDesc(data_type, sizes, s, guaranteed_base_offset_alignment=a)
        for s, a in zip(strides, alignments)])


def bits(array):
    return array.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[array.itemsize])


def random_array(rng, dtype, shape):
    return rng.integers(0, 2 ** (8 * dtype.itemsize), size=shape, dtype=bits(np.zeros(1, dtype)).dtype).view(dtype)


@pytest.mark.parametrize("data_type", SUB_WORD, ids=lambda t: t.name)
def test_interleaved_outputs_of_separate_dispatches_keep_each_other(device, data_type):
    """Each dispatch writes every k-th element of one buffer, starting at element j: the
    others' elements share its words and must survive."""
    info = data_type_info(data_type)
    per_word = 4 // info.element_size
    count = 37
    rng = np.random.default_rng(4)
    x = random_array(rng, info.numpy_dtype, (per_word, count))
    dy = random_array(rng, info.numpy_dtype, (per_word, count))
    desc = desc_for(data_type, (count,), (None, None, (per_word,)), (0, 0, info.element_size))
    compiled = device.compile_operator(device.create_operator(desc))
    assert compiled.plan.path == "strided"
    output = device.create_buffer(per_word * count * info.element_size + 4)
    for lane in range(per_word):
        inputs = [device.create_buffer(count * info.element_size + 4) for _ in range(2)]
        inputs[0].write(x[lane])
        inputs[1].write(dy[lane])
        table = device.create_binding_table(compiled, inputs=inputs,
                                            outputs=[dml.BufferBinding(output, lane * info.element_size)])
        device.execute(table)
    result = output.read(info.numpy_dtype, per_word * count).reshape(count, per_word).T
    assert np.array_equal(bits(result), bits(reference(x, dy)))


@pytest.mark.parametrize("data_type", SUB_WORD, ids=lambda t: t.name)
def test_word_neighbours_written_by_different_invocations_in_one_dispatch(device, data_type):
    # The output is transposed: the elements sharing a word are far apart in invocation order.
    per_word = 4 // data_type_info(data_type).element_size
    desc = desc_for(data_type, (per_word, 101), (None, None, (1, per_word)))
    compiled, actual, expected = run_and_expect(device, desc, np.random.default_rng(8))
    assert compiled.plan.path == "strided"
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"], 4 // per_word)


@pytest.mark.parametrize("data_type, element_offset", [
    (t, k) for t in SUB_WORD for k in range(1, 4 // data_type_info(t).element_size)], ids=str)
def test_odd_base_offsets_within_a_word(device, data_type, element_offset):
    info = data_type_info(data_type)
    alignment = info.element_size
    desc = desc_for(data_type, (3, 11), alignments=(alignment,) * 3)
    lanes = 4 // info.element_size
    offsets = {name: (element_offset + i) % lanes * info.element_size for i, name in enumerate(NAMES)}
    compiled, actual, expected = run_and_expect(device, desc, np.random.default_rng(element_offset), offsets=offsets)
    assert compiled.plan.path == "strided"  # mid-word starts rule out whole-word paths
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"], info.element_size)


def test_word_aligned_alignment_keeps_the_packed_path(device):
    desc = desc_for(T.FLOAT16, (3, 11), alignments=(4, 8, 16))
    assert device.compile_operator(device.create_operator(desc)).plan.path == "packed"
    with pytest.raises(dml.InvalidArgumentError, match="offset 4 is not a multiple of 16"):
        buffers = [device.create_buffer(128) for _ in range(3)]
        device.create_binding_table(device.compile_operator(device.create_operator(desc)), inputs=buffers[:2],
                                    outputs=[dml.BufferBinding(buffers[2], 4)])


def test_packed_float32_tensor_larger_than_max_storage_buffer_range(device):
    count = device.max_storage_buffer_range // 4 + 12345
    rng = np.random.default_rng(12)
    x = rng.standard_normal(count, dtype=np.float32)
    dy = rng.standard_normal(count, dtype=np.float32)
    desc = desc_for(T.FLOAT32, (count,))
    compiled = device.compile_operator(device.create_operator(desc))
    buffers = [device.create_buffer(count * 4 + 64) for _ in range(3)]
    buffers[0].write(x, offset=16)
    buffers[1].write(dy, offset=48)
    table = device.create_binding_table(compiled, inputs=[dml.BufferBinding(buffers[0], 16),
                                                          dml.BufferBinding(buffers[1], 48)],
                                        outputs=[dml.BufferBinding(buffers[2], 32)])
    assert len(table.windows) >= 2
    device.execute(table)
    result = buffers[2].read(np.float32, count, offset=32)
    assert np.array_equal(bits(result), bits(reference(x, dy)))
    for buffer in buffers:
        buffer.destroy()


@pytest.fixture(scope="module")
def small_segments():
    """A device whose buffers are cut into 4 KiB segments, so windows are cheap to test."""
    with dml.create_device() as device:
        device.segment_size = 4096
        yield device


@settings(max_examples=60)
@given(data_type=st.sampled_from([T.FLOAT32, *SUB_WORD]), count=st.integers(1, 6000),
       offsets=st.tuples(*[st.integers(0, 300).map(lambda k: 16 * k)] * 3), seed=st.integers(0, 2**32 - 1))
def test_packed_tensors_crossing_segments_run_in_windows(small_segments, data_type, count, offsets, seed):
    desc = desc_for(data_type, (count,))
    compiled, actual, expected = run_and_expect(small_segments, desc, np.random.default_rng(seed),
                                                offsets=dict(zip(NAMES, offsets)))
    assert compiled.plan.path == "packed"
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"],
                       data_type_info(data_type).element_size)


def test_strided_tensor_across_a_segment_is_unsupported(small_segments):
    device = small_segments
    desc = desc_for(T.FLOAT32, (64, 64), (None, None, (1, 64)))
    compiled = device.compile_operator(device.create_operator(desc))
    buffers = [device.create_buffer(5 * 4096) for _ in range(3)]
    before = buffers[2].read(np.uint8, 5 * 4096)
    with pytest.raises(dml.UnsupportedError, match="maxStorageBufferRange") as error:
        device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
    assert "inputs[0] (InputTensor): bytes [0, 16384)" in str(error.value)
    assert np.array_equal(buffers[2].read(np.uint8, 5 * 4096), before)


def test_strided_tensor_inside_one_segment_of_a_large_buffer_runs(small_segments):
    desc = desc_for(T.FLOAT16, (8, 16), (None, (1, 8), (1, 8)))
    _, actual, expected = run_and_expect(small_segments, desc, np.random.default_rng(6),
                                         offsets=dict(zip(NAMES, (4096 * 3 + 32, 4096 + 16, 4096 * 2 + 64))))
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"], 2)


def test_bfloat16_is_an_extension(device):
    bf16 = dml.BufferTensorDesc(T.BFLOAT16, (4,))
    desc = dml.ActivationReluGradOperatorDesc(bf16, bf16, bf16)
    assert T.BFLOAT16.value > 0xFFFF and data_type_info(T.BFLOAT16).extension
    assert device.check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, T.BFLOAT16).is_supported
    device.create_operator(desc)
    with dml.create_device(strict_directml=True) as strict:
        assert not strict.check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, T.BFLOAT16).is_supported
        assert strict.check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, T.FLOAT16).is_supported
        with pytest.raises(dml.UnsupportedError, match="BFLOAT16 is a dmlpy extension"):
            strict.create_operator(desc)
        strict.create_operator(desc_for(T.FLOAT16, (4,)))


def test_bfloat16_front_end_keeps_nan_and_bits(device):
    x = np.array([1, -1, 0, -0.0, np.nan, np.inf, 1e-40, 3], dtype=ml_dtypes.bfloat16)
    dy = np.array([np.nan, 2, 3, 4, 5, -0.0, 7, np.inf], dtype=ml_dtypes.bfloat16)
    dx = dml.relu_grad(x, dy, device=device)
    assert dx.dtype == ml_dtypes.bfloat16 and np.isnan(dx[0])
    assert np.array_equal(bits(dx), bits(reference(x, dy)))


# ---- NumPy views onto descs

def views(rng, dtype):
    base = random_array(rng, np.dtype(dtype), (6, 10))
    other = random_array(rng, np.dtype(dtype), (10, 6))
    row = random_array(rng, np.dtype(dtype), (10,))
    return {
        "transpose": (base, other.T),
        "steps": (base[::2, 1::3], other.T[1::2, 2::3]),
        "broadcast dy": (base, np.broadcast_to(row, (6, 10))),
        "negative x": (base[::-1, ::-2], other.T[:, ::2]),
        "negative both": (base[::-1], other.T[::-1, ::-1]),
        "zero-d": (base[2, 3], other[1, 1]),
    }


VIEW_NAMES = list(views(np.random.default_rng(0), np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("view", VIEW_NAMES)
def test_numpy_views_match_reference(device, dtype, view):
    x, dy = views(np.random.default_rng(1), dtype)[view]
    assert np.array_equal(bits(dml.relu_grad(x, dy, device=device)), bits(reference(x, dy)))


def test_views_are_uploaded_once_without_a_contiguous_copy(device, monkeypatch):
    uploads = []  # bytes handed to the device, whichever path the front end takes
    real_write, real_round_trip = GpuContext.write, GpuContext.run_round_trip
    monkeypatch.setattr(GpuContext, "write", lambda self, words, offset, data: (
        uploads.append(data.nbytes), real_write(self, words, offset, data)))
    monkeypatch.setattr(GpuContext, "run_round_trip", lambda self, dispatch, staged, *rest: (
        uploads.extend(data.nbytes for _, data in staged), real_round_trip(self, dispatch, staged, *rest))[1])
    real_contiguous = np.ascontiguousarray

    def no_copy(array, *args, **kwargs):
        if not np.asarray(array).flags.c_contiguous:
            pytest.fail("a view was copied")
        return real_contiguous(array, *args, **kwargs)

    monkeypatch.setattr(numpy_api.np, "ascontiguousarray", no_copy)
    rng = np.random.default_rng(2)
    base = random_array(rng, np.dtype(np.float32), (64, 64))
    x, dy = base.T[::2], np.broadcast_to(base[0], (32, 64))
    dx = dml.relu_grad(x, dy, device=device)
    monkeypatch.undo()
    assert np.array_equal(bits(dx), bits(reference(x, dy)))
    # x = base.T[::2] has element strides (2, 64): its span is 31*2 + 63*64 + 1 elements;
    # the broadcast dy is one row.
    assert uploads == [4 * (31 * 2 + 63 * 64 + 1), 4 * 64]


def test_out_may_be_a_strided_view_and_keeps_its_gaps(device):
    rng = np.random.default_rng(3)
    x, dy = random_array(rng, np.dtype(np.float16), (2, 5, 7)), random_array(rng, np.dtype(np.float16), (2, 5, 7))
    backing = random_array(rng, np.dtype(np.float16), (2, 10, 15))
    before = backing.copy()
    out = backing[:, ::2, 1::2][:, :, ::-1]
    assert dml.relu_grad(x, dy, out=out, device=device) is out
    assert np.array_equal(bits(out), bits(reference(x, dy)))
    untouched = np.ones(backing.shape, bool)
    untouched[:, ::2, 1::2] = False
    assert np.array_equal(bits(backing[untouched]), bits(before[untouched]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8], ids=lambda d: np.dtype(d).name)
def test_out_is_dy_in_place_also_on_a_strided_view(device, dtype):
    rng = np.random.default_rng(5)
    x = random_array(rng, np.dtype(dtype), (4, 9))
    for dy in (random_array(rng, np.dtype(dtype), (4, 9)), random_array(rng, np.dtype(dtype), (8, 9))[::2]):
        expected = reference(x, dy.copy())
        assert dml.relu_grad(x, dy, out=dy, device=device) is dy
        assert np.array_equal(bits(dy), bits(expected))


def test_out_overlapping_an_input_reads_the_input_first(device):
    rng = np.random.default_rng(6)
    memory = random_array(rng, np.dtype(np.float32), (12,))
    x, dy, out = memory[:8], memory[2:10], memory[4:12]
    expected = reference(x.copy(), dy.copy())
    dml.relu_grad(x, dy, out=out, device=device)
    assert np.array_equal(bits(out), bits(expected))


def test_front_end_across_segments_and_on_a_guarded_device(small_segments):
    """The front end's one-submission path needs a single segment and no guard; the other
    cases take the general path and must give the same bits."""
    rng = np.random.default_rng(7)
    x, dy = random_array(rng, np.dtype(np.float16), (50, 70)), random_array(rng, np.dtype(np.float16), (50, 70))
    assert np.array_equal(bits(dml.relu_grad(x, dy, device=small_segments)), bits(reference(x, dy)))  # windows
    out = np.zeros((50, 140), np.float16)[:, ::2]  # a strided out: its gaps are uploaded too
    with dml.create_device(guarded=True) as guarded:
        assert np.array_equal(bits(dml.relu_grad(x.T, dy.T, out=out.T, device=guarded)), bits(reference(x.T, dy.T)))
    assert not out.base[:, 1::2].any()


# The dispatch shapes of each path, on this device and planned as a GPU would be (the same
# shaders with interleaved units, GPU run lengths): counts around the chunk sizes exercise
# the main dispatch alone, the tail dispatch alone, and both.
@pytest.fixture(params=["cpu", "gpu"])
def planned_device(request, device):
    if request.param == "cpu":
        yield device
        return
    import dataclasses
    with dml.create_device() as gpu:
        gpu.adapter = dataclasses.replace(gpu.adapter, adapter_type=dml.AdapterType.DISCRETE_GPU)
        yield gpu


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16, T.INT8], ids=lambda t: t.name)
@pytest.mark.parametrize("count", [1, 5, 63, 64, 65, 4095, 4096, 4097, 3 * 16384 + 77])
def test_packed_main_and_tail_dispatches_cover_every_element_once(planned_device, data_type, count):
    device = planned_device
    compiled, actual, expected = run_and_expect(device, desc_for(data_type, (count,)), np.random.default_rng(count),
                                                offsets={name: 16 * k for k, name in enumerate(NAMES)})
    assert compiled.plan.path == "packed" and [s.name for s in compiled.plan.stages] == ["main", "tail"]
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"],
                       data_type_info(data_type).element_size)


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16, T.INT8], ids=lambda t: t.name)
@pytest.mark.parametrize("rows, row_length", [(1, 64), (7, 64), (33, 16), (5, 12), (300, 4), (70, 1028), (19, 128)])
@pytest.mark.parametrize("alignment", [16, 4], ids=["vectors", "words"])
def test_a_row_broadcast_along_rows_takes_the_broadcast_path(planned_device, data_type, rows, row_length, alignment):
    """dY is one row repeated: the broadcast path reads it as whole vectors (or words); with
    16 rows or more on a CPU device an invocation's vectors lie a row apart, so it reads dY's
    once for all of them, and the rows past whole groups of four are the tail's."""
    device = planned_device
    per_word = 4 // data_type_info(data_type).element_size
    desc = desc_for(data_type, (rows, row_length), (None, (0, 1), None), (alignment,) * 3)
    compiled, actual, expected = run_and_expect(device, desc, np.random.default_rng(rows),
                                                offsets={name: alignment * (k + 1) for k, name in enumerate(NAMES)})
    whole_words = row_length % per_word == 0
    assert compiled.plan.path == ("packed" if rows == 1 else "broadcast" if whole_words else "gather")
    if whole_words and rows > 1:
        vectors = alignment == 16 and row_length % (4 * per_word) == 0
        defines = compiled.plan.stages[0].defines
        assert defines["VECTOR_WORDS"] == (4 if vectors else 1)
        a_row_apart = vectors and rows >= 16 and "UNITS_INTERLEAVED" not in defines
        assert defines.get("PERIOD_UNITS") == (f"{row_length // (4 * per_word)}u" if a_row_apart else None)
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"],
                       data_type_info(data_type).element_size)


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16, T.INT8], ids=lambda t: t.name)
@pytest.mark.parametrize("sizes", [(7, 64), (5, 13), (4097,), (2, 3, 33)])
@pytest.mark.parametrize("scalar_offset", [0, 1, 3], ids=lambda k: f"scalar at element {k}")
def test_a_scalar_input_is_repeated_across_whole_vectors(planned_device, data_type, sizes, scalar_offset):
    """dY is one value (every stride 0) at any element offset: the broadcast path reads it once
    and repeats it, in 16-byte vectors where the other tensors start on 16 bytes, sub-word
    types included."""
    device = planned_device
    size = data_type_info(data_type).element_size
    desc = desc_for(data_type, sizes, (None, (0,) * len(sizes), None), (16, size, 16))
    offsets = {"input_tensor": 16, "input_gradient_tensor": 32 + size * scalar_offset, "output_gradient_tensor": 64}
    compiled, actual, expected = run_and_expect(device, desc, np.random.default_rng(sum(sizes)), offsets=offsets)
    assert compiled.plan.path == "broadcast"
    assert compiled.plan.stages[0].defines["VECTOR_WORDS"] == 4
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"], size)


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16, T.INT8], ids=lambda t: t.name)
@pytest.mark.parametrize("sizes", [(67, 131), (2, 3), (130, 9), (3, 40, 70), (8, 12), (64, 36), (4, 20), (16, 48),
                                   (48, 32)])
@pytest.mark.parametrize("transposed", ["output", "inputs"])
def test_transposes_walk_columns(planned_device, data_type, sizes, transposed):
    """The output contiguous along a dim where the inputs are not: each invocation walks a run
    of a column (runs that end mid-column included), neighbouring invocations neighbouring
    columns, or, for 2-D transposes in whole 16-byte vectors, transposes blocks of one
    vector's elements square in registers; the bytes around every tensor stay."""
    device = planned_device
    column_major = tuple(int(np.prod(sizes[:d])) for d in range(len(sizes)))
    strides = (None, None, column_major) if transposed == "output" else (column_major, column_major, None)
    compiled, actual, expected = run_and_expect(device, desc_for(data_type, sizes, strides),
                                                np.random.default_rng(sum(sizes)))
    tile = 16 // data_type_info(data_type).element_size
    if len(sizes) == 2 and sizes[0] % tile == 0 and sizes[1] % tile == 0:
        assert compiled.plan.path == "tiled"
    elif data_type == T.FLOAT32 or transposed == "output":
        assert compiled.plan.path == "strided" and "COLUMN_RUN" in compiled.plan.stages[0].defines
    assert_bytes_equal(actual["output_gradient_tensor"], expected["output_gradient_tensor"],
                       data_type_info(data_type).element_size)


@pytest.mark.parametrize("source, target", [(T.INT8, T.FLOAT32), (T.FLOAT32, T.UINT8), (T.FLOAT16, T.INT8),
                                            (T.UINT8, T.FLOAT16), (T.INT16, T.FLOAT32), (T.FLOAT32, T.FLOAT16)],
                         ids=lambda t: t.name)
def test_dense_tensors_of_different_widths_map_whole_vectors_and_a_tail(device, source, target):
    """The mixed path: items of one 16-byte vector of the narrowest tensor, and the elements
    past the last whole item alone; counts on either side of an item's edge, the bytes after
    the output kept."""
    rng = np.random.default_rng(int(source) * 16 + int(target))
    source_dtype, target_dtype = data_type_info(source).numpy_dtype, data_type_info(target).numpy_dtype
    for count in (1, 7, 15, 16, 17, 33, 1000):
        if source_dtype.kind == "f":
            x = (rng.standard_normal(count) * 60).astype(source_dtype)
        else:
            x = rng.integers(np.iinfo(source_dtype).min, np.iinfo(source_dtype).max, count).astype(source_dtype)
        desc = dml.CastOperatorDesc(dml.BufferTensorDesc(source, (count,)), dml.BufferTensorDesc(target, (count,)))
        compiled = device.compile_operator(device.create_operator(desc))
        assert compiled.plan.path == "mixed"
        given, result = device.create_buffer(tensor=desc.input_tensor), device.create_buffer(count * 4 + 16)
        given.write(x)
        result.write(np.full(count * 4 + 16, 0xA5, np.uint8))
        device.execute(device.create_binding_table(compiled, inputs=[given], outputs=[result]))
        stored = result.read(np.uint8, count * 4 + 16)
        size = count * target_dtype.itemsize
        if target_dtype.kind == "f":
            with np.errstate(over="ignore"):
                expected = x.astype(np.float32).astype(target_dtype)
        else:
            info = np.iinfo(target_dtype)
            expected = np.clip(np.trunc(x.astype(np.float64)), info.min, info.max).astype(target_dtype) \
                if source_dtype.kind == "f" else x.astype(target_dtype)
        assert np.array_equal(stored[:size], expected.view(np.uint8)), count
        assert np.all(stored[size:] == 0xA5), count


def test_a_select_of_three_widths_takes_the_mixed_path(device):
    """ELEMENT_WISE_IF with a UINT8 condition over FLOAT16 operands, and over FLOAT32 ones; B an
    array or a scalar."""
    rng = np.random.default_rng(9)
    for dtype in (np.float16, np.float32):
        for count in (5, 16, 49, 145, 4096 + 3):
            condition = rng.integers(0, 3, count).astype(np.uint8)
            a, b = rng.standard_normal((2, count)).astype(dtype)
            got = dml.where(condition, a, b, device=device)
            assert_bytes_equal(got.view(np.uint8), np.where(condition != 0, a, b).view(np.uint8),
                               np.dtype(dtype).itemsize, f"{np.dtype(dtype)} {count}")
            masked = dml.where(condition, a, dtype(-0.0), device=device)  # a scalar B: read once
            assert_bytes_equal(masked.view(np.uint8), np.where(condition != 0, a, dtype(-0.0)).view(np.uint8),
                               np.dtype(dtype).itemsize, f"{np.dtype(dtype)} {count} scalar")
        data_type = T.FLOAT16 if dtype is np.float16 else T.FLOAT32
        desc = dml.ElementWiseIfOperatorDesc(dml.BufferTensorDesc(T.UINT8, (64,)),
                                             *[dml.BufferTensorDesc(data_type, (64,))] * 3)
        assert device.compile_operator(device.create_operator(desc)).plan.path == "mixed"
        scalar_b = dataclasses.replace(desc, b_tensor=dml.BufferTensorDesc(data_type, (64,), (0,)))
        assert device.compile_operator(device.create_operator(scalar_b)).plan.path == "mixed"
