"""Views of device arrays: NumPy's basic indexing, transpose and reshape over a base's buffer,
read by the operators through DirectML's strides and a binding offset (no copy), and the
ownership rules of docs/ownership.md (Views), each lifetime case in a child process.

The reference for a view's values is NumPy's own view of the same host values; operators on
a view are compared with the same front end on NumPy's packed copy of it, which runs the
packed layout dmlpy already tests bit for bit against its plain references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from child import assert_clean, run_child
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlpy as dml

DTYPES = (np.float32, np.float16, np.uint8, np.int16, ml_dtypes.bfloat16)


@pytest.fixture(scope="module")
def device():
    device = dml.create_device()
    yield device
    device.close()


def values(shape, dtype, seed=0) -> np.ndarray:
    count = int(np.prod(shape))
    raw = np.random.default_rng(seed).integers(0, 100, count)
    return raw.astype(dtype).reshape(shape)


@st.composite
def basic_indices(draw, shape):
    """A NumPy basic index of an array of `shape`: integers, positive-step slices, `...`, None."""
    items, dims = [], list(shape)
    ellipsis_at = draw(st.one_of(st.none(), st.integers(0, len(dims))))
    # The ellipsis stands for the consecutive dims from ellipsis_at (none, some or all of them).
    covered = range(0) if ellipsis_at is None else \
        range(ellipsis_at, ellipsis_at + draw(st.integers(0, len(dims) - ellipsis_at)))
    for position, size in enumerate(dims):
        if position == ellipsis_at:
            items.append(Ellipsis)
        if position in covered:
            continue
        kind = draw(st.sampled_from(("int", "slice", "slice", "none_then_slice")))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        else:
            if kind == "none_then_slice":
                items.append(None)
            start = draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            items.append(slice(start, stop, draw(st.one_of(st.none(), st.integers(1, 3)))))
    if ellipsis_at == len(dims):
        items.append(Ellipsis)
    return tuple(items)


@st.composite
def viewed_arrays(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    index = draw(basic_indices(shape))
    transpose = draw(st.booleans())
    dtype = draw(st.sampled_from(DTYPES))
    return shape, index, transpose, dtype


@settings(max_examples=60, deadline=None)
@given(case=viewed_arrays())
def test_views_read_write_and_compute_as_numpy_views(device, case):
    shape, index, transpose, dtype = case
    host = values(shape, dtype)
    base = dml.asarray(host, device=device)
    # NumPy gives a 0-d view, not a scalar, when the index ends with '...'.
    numpy_index = index if any(i is Ellipsis for i in index) else (*index, Ellipsis)
    view, expected = base[index], host[numpy_index]
    if transpose:
        view, expected = view.T, expected.T
    assert view.shape == expected.shape and view.dtype == expected.dtype
    assert np.array_equal(view.numpy(), expected)
    other = values(expected.shape, dtype, seed=1)
    assert np.array_equal(dml.maximum(view, other).numpy(), np.maximum(expected, other))
    assert np.array_equal(view.copy().numpy(), expected)
    # A write changes the view's elements and nothing between them.
    view.write(other)
    expected[...] = other
    assert np.array_equal(base.numpy(), host)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8])
@pytest.mark.parametrize("offset", [1, 3, 4, 8])
def test_views_at_every_offset_take_the_vector_and_scalar_paths_alike(device, dtype, offset):
    host = values((4100,), dtype)
    base = dml.asarray(host, device=device)
    view = base[offset:offset + 4000]
    result = dml.maximum(view, base[:4000])
    assert np.array_equal(result.numpy(), np.maximum(host[offset:offset + 4000], host[:4000]))
    dml.add(view, view, out=base[100:4100])
    expected = host.copy()
    np.add(host[offset:offset + 4000], host[offset:offset + 4000], out=expected[100:4100])
    assert np.array_equal(base.numpy(), expected)


def test_reductions_products_scans_and_rowwise_operators_read_views(device):
    host = np.random.default_rng(3).standard_normal((6, 40, 9)).astype(np.float32)
    a = dml.asarray(host, device=device)
    for view, packed in ((a[1:, ::3, 2], np.ascontiguousarray(host[1:, ::3, 2])),
                         (a[2].T, np.ascontiguousarray(host[2].T))):
        assert np.array_equal(view.sum(axis=1).numpy(), dml.sum(packed, axis=1))
        assert np.array_equal(dml.argmax(view, axis=0).numpy(), dml.argmax(packed, axis=0))
        assert np.array_equal(dml.cumsum(view, axis=1).numpy(), dml.cumsum(packed, axis=1))
        top, where = dml.top_k(view, 2)
        assert np.array_equal(top.numpy(), dml.top_k(packed, 2)[0])
        assert np.array_equal(dml.softmax(view).numpy(), dml.softmax(packed))
    # A row-wise operator writing a strided view: through a packed result, copied bit for bit.
    b = dml.asarray(host, device=device)
    dml.softmax(b[1], out=b[0, :, ::1])
    expected = host.copy()
    expected[0] = dml.softmax(host[1])
    assert np.array_equal(b.numpy(), expected)


@pytest.mark.parametrize("x, y", [
    ((0, "T"), (1,)),  # a transposed view: GEMM reads a's buffer transposed, no copy
    ((0, np.s_[1:, ::2]), (2, np.s_[:21, 3:])),  # steps and offsets in both operands
    ((np.s_[:, 2],), (np.s_[0, 5],)),  # a batch of rows, read with a stride, times a 1-D column
    ((np.s_[1, 3],), (2, "T")),  # a 1-D row times a transposed matrix
    ((np.s_[0, 0, 1:],), (np.s_[0, 0, 1:],)),  # two 1-D views: a dot product
    (((0, 2, 1),), ()),  # a batched transpose times the base itself
])
def test_matrix_products_read_views_through_their_strides(device, x, y):
    host = np.random.default_rng(5).standard_normal((3, 37, 41)).astype(np.float32)
    a = dml.asarray(host, device=device)

    def view(array, steps):  # each step: "T", a transpose's axes (a 3-tuple) or an index
        for step in steps:
            array = array.T if step == "T" else array.transpose(step) if isinstance(step, tuple) and \
                len(step) == 3 and all(isinstance(s, int) for s in step) else array[step]
        return array
    left, right = view(a, x), view(a, y)
    expected = dml.matmul(np.ascontiguousarray(view(host, x)), np.ascontiguousarray(view(host, y)))
    assert np.array_equal((left @ right).numpy(), expected)
    assert np.array_equal((dml.tanh(left @ right) + 1).numpy(), dml.tanh(expected) + 1)  # the fused epilogue


def test_gemm_and_integer_products_of_views(device):
    host = np.random.default_rng(6).standard_normal((3, 37, 41)).astype(np.float32)
    a = dml.asarray(host, device=device)
    got = dml.gemm(a[0, :, 1:], a[1, :, :40], a[2, ::5, 1:][:1], trans_a=True, beta=0.5).numpy()
    expected = dml.gemm(*(np.ascontiguousarray(v) for v in (host[0, :, 1:], host[1, :, :40], host[2, ::5, 1:][:1])),
                        trans_a=True, beta=0.5)
    assert np.array_equal(got, expected)
    small = np.random.default_rng(7).integers(-100, 100, (6, 7)).astype(np.int8)
    i8 = dml.asarray(small, device=device)
    product = dml.matrix_multiply_integer(i8.T, i8[:, 1:])
    assert np.array_equal(product.numpy(), small.T.astype(np.int64) @ small[:, 1:].astype(np.int64))


@pytest.mark.parametrize("source, target", [
    (np.s_[0], np.s_[1]),  # disjoint views of one base: straight into out
    (np.s_[:, 1:], np.s_[:, :-1]),  # overlapping: through a new array, as NumPy buffers it
    (np.s_[2], np.s_[2]),  # the same view: in place
])
def test_out_may_be_a_view_of_the_inputs_base(device, source, target):
    host = values((3, 7), np.float32)
    a = dml.asarray(host, device=device)
    dml.add(a[source], 0.5, out=a[target])
    expected = host.copy()
    np.add(host[source], np.float32(0.5), out=expected[target])
    assert np.array_equal(a.numpy(), expected)


def test_reshape_is_a_view_of_packed_arrays_and_a_copy_of_strided_ones(device):
    host = values((4, 6), np.int16)
    a = dml.asarray(host, device=device)
    r = a.reshape(3, -1)
    assert r.base is a and r.shape == (3, 8) and a[1:].reshape((2, 3, 3)).base is a
    r[0, 0] = 99
    assert a.numpy()[0, 0] == 99 and a.ravel().shape == (24,)
    t = a.T.reshape(-1)
    assert t.base is not a and not t.may_share_memory(a)
    assert np.array_equal(t.numpy(), a.numpy().T.reshape(-1))
    assert a.T.base is a and a.T.strides == (2, 12) and a[1:].may_share_memory(a.T)
    assert [row.numpy().tolist() for row in a[:2]] == a.numpy()[:2].tolist()


def test_squeeze_is_a_view_and_flatten_a_copy(device):
    host = values((3, 1, 4, 1), np.float32)
    a = dml.asarray(host, device=device)
    for axis in (None, 1, -1, (1, 3)):
        squeezed = a.squeeze(axis)
        assert squeezed.base is a and squeezed.shape == host.squeeze(axis).shape
        assert np.array_equal(squeezed.numpy(), host.squeeze(axis))
    assert isinstance(np.squeeze(a), dml.DeviceArray)  # NumPy's function calls the method
    strided = a[::2, :, 1:].squeeze()  # strides survive the dropped dims
    assert strided.base is a and np.array_equal(strided.numpy(), host[::2, :, 1:].squeeze())
    assert a[0, 0, 0].squeeze().shape == () and a[0, :, 0].squeeze((0, 1)).shape == ()
    for axis, words in ((0, "axis 0 has size 3"), (4, "out of range"), ((1, -3), "twice"), ("1", "ints")):
        with pytest.raises(dml.InvalidArgumentError, match=words) as caught:
            a.squeeze(axis)
        assert caught.value.field == "axis"
    for source, expected in ((a, host), (a.T, host.T), (a[1:, :, ::2], host[1:, :, ::2])):
        flat = source.flatten()
        assert flat.shape == (expected.size,) and flat.base is None and not flat.may_share_memory(a)
        assert np.array_equal(flat.numpy(), expected.flatten())
    flat = a.flatten()
    a[0] = -1.0  # the copy keeps the values it was made from
    assert np.array_equal(flat.numpy(), host.flatten())


def test_one_element_arrays_convert_to_python_numbers(device):
    host = values((2, 3), np.float32)
    a = dml.asarray(host, device=device)
    assert a[1, 2].item() == host[1, 2].item() and type(a[1, 2].item()) is float
    assert float(a.sum()) == float(dml.sum(host)) and float(a[1:2, 2:]) == float(host[1, 2])
    assert int(a[0, 1]) == int(host[0, 1]) and complex(a[0, 0]) == complex(host[0, 0])
    assert a.tolist() == host.tolist() and a[0, 0].tolist() == host[0, 0].tolist()
    count = dml.asarray(np.int32(3), device=device)
    assert list(range(count)) == [0, 1, 2] and type(count.item()) is int
    assert int(dml.asarray(np.uint8(200), device=device) + 1) == 201
    for convert in (lambda x: x.item(), float, int):
        with pytest.raises(dml.InvalidArgumentError, match="6 elements"):
            convert(a)
    for not_an_index in (a[0, 0], dml.asarray(np.int32([3]), device=device)):
        with pytest.raises(dml.InvalidArgumentError, match="only a 0-d integer array"):
            range(not_an_index)


def test_views_of_deferred_results_and_deferred_results_of_views(device):
    host = values((5, 8), np.float32)
    a = dml.asarray(host, device=device)
    chained = (a * 2)[1:, ::2] + 1  # a view of a deferred product, read by a deferred sum
    assert np.array_equal(chained.numpy(), (host * 2)[1:, ::2] + 1)
    pending = a[::2] * 3  # deferred, reading a view
    a[0] = -1.0  # changes the elements that view reads: the pending result keeps its values
    a.T[3] = 7.0  # and through another view of the same base
    assert np.array_equal(pending.numpy(), host[::2] * 3)


def test_views_of_more_than_eight_dims_compute_element_wise(device):
    host = values((2,) * 10, np.float32)
    a = dml.asarray(host, device=device)
    view = a[:, :, 1, ..., ::1, 0]
    assert np.array_equal((view + view).numpy(), host[:, :, 1, ..., 0] * 2)
    strided = a[..., ::1, 1:]  # ten dims, every other element: no dims merge below nine
    assert np.array_equal((strided * 2).numpy(), host[..., 1:] * 2)


@pytest.mark.parametrize("index, error, words", [
    (np.s_[::-1], dml.InvalidArgumentError, "negative step"),
    (np.s_[[0, 1]], dml.InvalidArgumentError, "advanced indexing"),
    (np.s_[np.array([True, False, True])], dml.InvalidArgumentError, "ndarray indices"),
    (np.s_[3], IndexError, "out of range for dim 0 of size 3"),
    (np.s_[0, 0, 0], IndexError, "names 3 dims"),
    (np.s_[..., 0, ...], dml.InvalidArgumentError, "more than one"),
    (np.s_[1.5], dml.InvalidArgumentError, "float indices"),
])
def test_indices_a_view_cannot_take_name_the_index_and_the_rule(device, index, error, words):
    a = dml.asarray(values((3, 4), np.float32), device=device)
    with pytest.raises(error, match=words) as caught:
        a[index]
    assert isinstance(caught.value, dml.DmlError) and caught.value.field == "index"


def test_shapes_axes_and_buffers_views_cannot_take_are_refused(device):
    a = dml.asarray(values((3, 4), np.float32), device=device)
    for shape, words in (((5, -1), "12 elements"), ((-1, -1), "at most one -1"), (("3", 4), "integers")):
        with pytest.raises(dml.InvalidArgumentError, match=words):
            a.reshape(shape)
    with pytest.raises(dml.InvalidArgumentError, match="each of the 2 dims once"):
        a.transpose(0, 0)
    with pytest.raises(dml.InvalidArgumentError, match=r"view.copy\(\).buffer"):
        _ = a[1:].buffer
    with pytest.raises(TypeError, match="0-d"):
        iter(a[0, 0])
    assert a[0, 0].shape == () and a[1:].base is a and a.base is None


def test_a_view_outlives_its_dropped_base():
    result = run_child("""
device = dml.create_device()
base = dml.asarray(np.arange(64, dtype=np.float32), device=device)
view = base[8::2]
del base
gc.collect()
fresh = [dml.asarray(np.full(64, -1, np.float32), device=device) for _ in range(4)]  # would take a pooled buffer
print(np.array_equal(view.numpy(), np.arange(8, 64, 2, dtype=np.float32)), view.base is not None)
print("ok")
""")
    assert_clean(result)
    assert "True True" in result.stdout


def test_views_of_a_closed_device_and_in_a_forked_child_raise():
    result = run_child("""
device = dml.create_device()
base = dml.asarray(np.arange(16, dtype=np.float32), device=device)
view = base[1::3]
pid = os.fork()
if pid == 0:
    try:
        view.numpy()
        os._exit(3)
    except dml.DeviceRemovedError:
        os._exit(0)
_, status = os.waitpid(pid, 0)
print("child refused:", os.waitstatus_to_exitcode(status) == 0)
print("parent reads:", np.array_equal(view.numpy(), np.arange(1, 16, 3, dtype=np.float32)))
device.close()
for action in (lambda: view.numpy(), lambda: view.write(0.0), lambda: view + 1):
    try:
        action()
        print("not refused")
    except dml.DeviceRemovedError:
        pass
print("ok")
""")
    assert_clean(result)
    assert "child refused: True" in result.stdout and "parent reads: True" in result.stdout
    assert "not refused" not in result.stdout


def test_threads_writing_and_reading_views_of_one_base_see_whole_writes():
    result = run_child("""
device = dml.create_device()
base = dml.asarray(np.zeros((2, 512), np.float32), device=device)
stop, torn = threading.Event(), []

def writer():
    for k in range(1, 200):
        base[0] = float(k)  # one view's elements, written whole under the array lock
    stop.set()

def reader():
    while not stop.is_set():
        seen = (base[0] * 1.0).numpy()  # a deferred result of a view, computed and read
        if len(set(seen.tolist())) != 1:
            torn.append(seen)

threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("torn reads:", len(torn), "row 1 untouched:", not base[1].numpy().any(), "last:", base[0].numpy()[0])
print("ok")
""")
    assert_clean(result)
    assert "torn reads: 0 row 1 untouched: True last: 199.0" in result.stdout
