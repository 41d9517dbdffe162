"""CUMULATIVE_SUMMATION, CUMULATIVE_PRODUCT, TOP_K and TOP_K1 against the independent NumPy
reference in reference_scan.py: every data type, first, middle and last axes, both
directions, exclusive and inclusive scans, long rows and many rows, strided, broadcast and
in-place bindings through descs, special values (NaN, infinities, signed zeros, subnormals),
integer wrap-around, selection ties, NaNs and -0 against a stable sort, the front ends
(cumsum, cumprod, top_k) on NumPy arrays and DeviceArrays, and every rule the descs and the
front ends enforce (axis, k, sizes, data types, flags, feature levels, strict_directml)."""

from __future__ import annotations

import dataclasses
import functools
import math

import ml_dtypes
import numpy as np
import pytest
from layout import element_offsets
from messages import check_level, raises
from reference_scan import assert_same_bits, bits_of, scan_reference, top_k_reference

import dmlpy as dml

T = dml.TensorDataType
FL = dml.FeatureLevel
INC, DEC = dml.AxisDirection.INCREASING, dml.AxisDirection.DECREASING
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16, T.INT32: np.int32,
         T.INT16: np.int16, T.INT8: np.int8, T.UINT32: np.uint32, T.UINT16: np.uint16, T.UINT8: np.uint8,
         T.INT64: np.int64, T.UINT64: np.uint64}
FLOATS = (T.FLOAT32, T.FLOAT16, T.BFLOAT16)
SCAN_TYPES = (T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.INT32, T.UINT32, T.UINT16)
TOP_K_TYPES = (T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8)
SCANS = {"sum": (dml.CumulativeSummationOperatorDesc, "has_exclusive_sum", dml.cumsum),
         "product": (dml.CumulativeProductOperatorDesc, "has_exclusive_product", dml.cumprod)}
# (reverse, exclusive)
FORMS = ((False, False), (True, False), (False, True), (True, True))


# --- Values -----------------------------------------------------------------------------------------


def scan_values(combine, data_type, shape, rng, long_rows=False):
    """Inputs that keep a running value informative: sums of normals, products of values
    near 1 (nearer on long rows), integers over their whole range (mostly odd for products,
    which an even factor halves towards 0 modulo 2**32)."""
    dtype = NUMPY[data_type]
    if data_type in FLOATS:
        if combine == "product":
            spread = 0.01 if long_rows else 0.5
            magnitude = rng.uniform(1 - spread, 1 + spread, shape)
            values = magnitude * rng.choice([-1.0, 1.0], shape)
        else:
            values = rng.standard_normal(shape) * (4.0 if data_type is T.FLOAT32 else 1.0)
        return values.astype(np.float32).astype(dtype)
    info = np.iinfo(dtype)
    values = rng.integers(0, info.max - info.min, shape, endpoint=True, dtype=np.uint64)
    if combine == "product":
        values |= (rng.integers(0, 8, shape) != 0).astype(np.uint64)  # 7 in 8 odd
    return (values.astype(np.int64) + info.min).astype(dtype)  # the whole range, negatives too


def select_values(data_type, shape, rng, ties=True):
    """Few distinct values (ties), with NaNs, infinities and signed zeros among floats; whole
    ranges of integers (both signs) otherwise."""
    dtype = NUMPY[data_type]
    if data_type in FLOATS:
        values = np.round(rng.standard_normal(shape) * 2) if ties else rng.standard_normal(shape) * 3
        special = rng.integers(0, 12, shape)
        values = np.where(special == 0, np.nan, values)
        values = np.where(special == 1, -0.0, values)
        values = np.where(special == 2, np.inf * rng.choice([-1.0, 1.0], shape), values)
        return values.astype(np.float32).astype(dtype)
    info = np.iinfo(dtype)
    if ties:
        picks = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 5, info.max - 1], dtype)
        return picks[rng.integers(0, picks.size, shape)]
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)


# --- Running descs ------------------------------------------------------------------------------


def padded(size: int) -> int:
    return -(-max(size, 4) // 16) * 16


def raw_buffer(device, tensor, rng):
    """A buffer for `tensor` filled with random bytes, and those bytes."""
    contents = rng.integers(0, 256, padded(tensor.total_tensor_size_in_bytes), dtype=np.uint8)
    buffer = device.create_buffer(contents.size)
    buffer.write(contents)
    return buffer, contents


def elements_of(contents: np.ndarray, tensor) -> np.ndarray:
    """The logical elements of `tensor` in raw bytes (through its strides), in its shape."""
    dtype = np.dtype(NUMPY[tensor.data_type])
    usable = contents[: contents.size // dtype.itemsize * dtype.itemsize]
    return usable.view(dtype)[element_offsets(tensor.sizes, tensor.element_strides)]


def storage_for(tensor, values_of):
    """Storage holding every element `tensor` reads (through its strides, maybe zero) and the
    logical elements it holds."""
    count = -(-tensor.total_tensor_size_in_bytes // tensor.element_size)
    storage = values_of(count)
    return storage, storage[element_offsets(tensor.sizes, tensor.element_strides)]


def run_desc(device, desc, storage: np.ndarray, seed: int = 0):
    """Compile and run `desc`, its input buffer holding `storage`; the output tensors'
    elements (in their shapes). Each output lives in a buffer of random bytes: those outside
    its elements must come back untouched."""
    rng = np.random.default_rng(seed)
    compiled = device.compile_operator(device.create_operator(desc))
    source = device.create_buffer(padded(desc.input_tensor.total_tensor_size_in_bytes))
    source.write(np.ascontiguousarray(storage).view(np.uint8).reshape(-1))
    outputs = [getattr(desc, f.name) for f in desc.schema.outputs]
    made = [raw_buffer(device, tensor, rng) for tensor in outputs]
    size = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(size) if size else None
    device.execute(device.create_binding_table(compiled, inputs=[source], outputs=[b for b, _ in made],
                                               temporary=temporary))
    results = []
    for tensor, (buffer, before) in zip(outputs, made):
        after = buffer.read(np.uint8, before.size)
        untouched = np.ones(before.size, bool)
        itemsize = tensor.element_size
        for byte in range(itemsize):
            untouched[element_offsets(tensor.sizes, tensor.element_strides).reshape(-1) * itemsize + byte] = False
        assert np.array_equal(after[untouched], before[untouched]), "bytes outside the output were written"
        results.append(elements_of(after, tensor))
    return results


def scan_desc(combine, data_type, sizes, axis, reverse=False, exclusive=False, strides=None, output_strides=None):
    cls, flag, _ = SCANS[combine]
    return cls(dml.BufferTensorDesc(data_type, sizes, strides), dml.BufferTensorDesc(data_type, sizes, output_strides),
               axis, DEC if reverse else INC, **{flag: exclusive})


def top_k_desc(data_type, sizes, axis, k, direction=None, strides=None, output_strides=(None, None),
               index_type=T.UINT32):
    selected = tuple(k if d == axis else s for d, s in enumerate(sizes))
    tensors = (dml.BufferTensorDesc(data_type, sizes, strides),
               dml.BufferTensorDesc(data_type, selected, output_strides[0]),
               dml.BufferTensorDesc(index_type, selected, output_strides[1]))
    if direction is None:
        return dml.TopKOperatorDesc(*tensors, axis, k)
    return dml.TopK1OperatorDesc(*tensors, axis, k, direction)


def assert_top_k(got_values, got_indices, x, k, axis, largest, what=""):
    values, indices = top_k_reference(x, k, axis, largest)
    assert_same_bits(got_indices.astype(np.int64), indices.astype(np.int64), f"{what} indices")
    assert_same_bits(got_values, values, f"{what} values", any_nan=False)  # copied: NaN payloads too


# --- Scans: every data type, axis, direction and form ---------------------------------------------


@pytest.mark.parametrize("data_type", SCAN_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("combine", ["sum", "product"])
def test_scans_of_every_type_axis_direction_and_form(device, combine, data_type):
    """Through the front ends on (5, 6, 7), each form on one axis, rotating: FP32 in all four
    forms, the other types in two each (between them every form of every axis)."""
    front_end = SCANS[combine][2]
    index = SCAN_TYPES.index(data_type)
    rng = np.random.default_rng(index * 2 + (combine == "product"))
    for j, (reverse, exclusive) in enumerate(FORMS):
        if data_type is not T.FLOAT32 and j % 2 != index % 2:
            continue
        axis = (j + index) % 3
        x = scan_values(combine, data_type, (5, 6, 7), rng)
        got = front_end(x, axis, exclusive=exclusive, reverse=reverse, device=device)
        assert got.dtype == x.dtype and got.shape == x.shape
        assert_same_bits(got, scan_reference(x, axis, combine, reverse, exclusive),
                         f"{combine} {data_type.name} axis {axis} reverse={reverse} exclusive={exclusive}")


@pytest.mark.parametrize("combine", ["sum", "product"])
def test_scan_descs_in_one_four_and_eight_dimensions(device, combine):
    rng = np.random.default_rng(11)
    layouts = [((300,), 0, T.FLOAT32, False, False), ((2, 3, 4, 5), 1, T.FLOAT16, True, False),
               ((2, 3, 4, 5), 3, T.UINT32, False, True), ((1, 1, 1, 9), 3, T.BFLOAT16, True, True),
               ((2, 1, 2, 3, 1, 2, 2, 3), 3, T.FLOAT32, True, True), ((2, 1, 2, 3, 1, 2, 2, 3), 7, T.UINT16,
                                                                       False, False),
               ((3, 1), 1, T.FLOAT32, False, True)]  # a row of one element: exclusive writes the identity only
    for sizes, axis, data_type, reverse, exclusive in layouts[combine == "product"::2] + layouts[4:5]:
        desc = scan_desc(combine, data_type, sizes, axis, reverse, exclusive)
        assert desc.axis == axis and desc.axis_direction is (DEC if reverse else INC)
        x = scan_values(combine, data_type, sizes, rng)
        (got,) = run_desc(device, desc, x)
        assert_same_bits(got, scan_reference(x, axis, combine, reverse, exclusive), f"{combine} {sizes} {axis}")
    defaults = scan_desc(combine, T.FLOAT32, (2, 3), 1)
    assert defaults.axis_direction is INC and getattr(defaults, SCANS[combine][1]) is False
    named = SCANS[combine][0](defaults.input_tensor, defaults.output_tensor, 0, "DECREASING")
    assert named.axis_direction is DEC


LONG_SCANS = [("sum", T.FLOAT32, (3, 5000), 1), ("sum", T.FLOAT32, (5000, 3), 0), ("sum", T.FLOAT16, (2, 5000), 1),
              ("sum", T.BFLOAT16, (5000, 2), 0), ("product", T.FLOAT32, (2, 5000), 1),
              ("sum", T.UINT32, (2, 5000), 1), ("product", T.UINT16, (5000, 2), 0),
              ("sum", T.FLOAT32, (20000, 5), 1), ("product", T.FLOAT32, (7, 3000, 3), 2)]


@pytest.mark.parametrize("combine, data_type, shape, axis", LONG_SCANS,
                         ids=[f"{c}-{t.name}-{'x'.join(map(str, s))}-{a}" for c, t, s, a in LONG_SCANS])
def test_long_rows_and_many_rows(device, combine, data_type, shape, axis):
    """Rows of 5,000 (contiguous and strided), and 20,000 or 21,000 rows of a few elements:
    the plain running value at every position, both directions, exclusive too."""
    rng = np.random.default_rng(math.prod(shape) + axis)
    x = scan_values(combine, data_type, shape, rng, long_rows=True)
    front_end = SCANS[combine][2]
    every = (combine, data_type, shape) == ("sum", T.FLOAT32, (3, 5000))
    for reverse, exclusive in FORMS if every else (FORMS[math.prod(shape) % 4],):
        got = front_end(x, axis, exclusive=exclusive, reverse=reverse, device=device)
        assert_same_bits(got, scan_reference(x, axis, combine, reverse, exclusive),
                         f"{combine} {data_type.name} {shape} reverse={reverse} exclusive={exclusive}")


@pytest.mark.parametrize("data_type", [T.INT64, T.UINT64], ids=lambda t: t.name)
def test_64_bit_integer_scans_wrap_modulo_2_to_the_64(device, data_type):
    """INT64 and UINT64 in 32-bit words (FEATURE_LEVEL_5_0): every form along each axis, rows
    of 5,000 walked in two stages (the running value's two words carried between them), and
    strided and broadcast layouts whose outputs' other bytes are kept."""
    rng = np.random.default_rng(data_type.value)
    for combine, front_end in (("sum", dml.cumsum), ("product", dml.cumprod)):
        for j, (reverse, exclusive) in enumerate(FORMS):
            x = scan_values(combine, data_type, (5, 6, 7), rng)
            got = front_end(x, j % 3, exclusive=exclusive, reverse=reverse, device=device)
            assert got.dtype == x.dtype
            assert_same_bits(got, scan_reference(x, j % 3, combine, reverse, exclusive), f"{combine} form {j}")
        x = scan_values(combine, data_type, (3, 5000), rng, long_rows=True)
        assert_same_bits(front_end(x, 1, reverse=True, device=device), scan_reference(x, 1, combine, True))
        for sizes, strides, output_strides, axis in (((4, 5), (1, 4), (10, 1), 0), ((6, 4, 3), (3, 0, 1), None, 2)):
            desc = scan_desc(combine, data_type, sizes, axis, strides=strides, output_strides=output_strides)
            storage, logical = storage_for(desc.input_tensor,
                                           lambda n, c=combine: scan_values(c, data_type, (n,), rng))
            (got,) = run_desc(device, desc, storage)
            assert_same_bits(got, scan_reference(logical, axis, combine), f"{combine} {sizes} {strides}")


def test_rows_longer_than_65535_elements(device):
    """One row of 70,000 elements (and two of them along a strided axis): every output
    written, the last one too."""
    ones = np.ones(70000, np.uint32)
    assert np.array_equal(dml.cumsum(ones, device=device), np.arange(1, 70001, dtype=np.uint32))
    x = np.random.default_rng(8).standard_normal((70000, 2)).astype(np.float32)
    assert_same_bits(dml.cumsum(x, 0, reverse=True, device=device), scan_reference(x, 0, "sum", reverse=True),
                     "70000 rows reversed")


def test_float32_sums_and_products_equal_numpys_cumsum_and_cumprod(device):
    """NumPy's own cumsum and cumprod (add.accumulate: sequential), bit for bit, without the
    reference in between."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 1000)) * 100).astype(np.float32)
    for axis in (0, 1):
        assert np.array_equal(bits_of(dml.cumsum(x, axis, device=device)), bits_of(np.cumsum(x, axis)))
    assert np.array_equal(bits_of(dml.cumsum(x, 1, reverse=True, device=device)),
                          bits_of(np.flip(np.cumsum(np.flip(x, 1), 1), 1)))
    y = rng.uniform(0.9, 1.1, (3, 400)).astype(np.float32)
    assert np.array_equal(bits_of(dml.cumprod(y, 1, device=device)), bits_of(np.cumprod(y, 1)))
    assert np.array_equal(bits_of(dml.cumsum(x, device=device)), bits_of(np.cumsum(x)))  # axis None: flattened
    h = x[:, :50].astype(np.float16)
    assert np.array_equal(bits_of(dml.cumsum(h, 1, device=device)),
                          bits_of(np.cumsum(h.astype(np.float32), 1, dtype=np.float32).astype(np.float16)))


# --- Scans: strided, broadcast and in-place bindings -------------------------------------------------


@pytest.mark.parametrize("combine", ["sum", "product"])
def test_strided_and_broadcast_scan_inputs_and_outputs(device, combine):
    rng = np.random.default_rng(3 + (combine == "sum"))
    layouts = [((4, 5, 6), (1, 4, 20), None, 2, T.FLOAT32),         # transposed input
               ((3, 4, 5), (40, 10, 2), None, 1, T.FLOAT32),          # gaps between elements
               ((3, 7, 5), (5, 0, 1), None, 1, T.FLOAT32),            # the scanned axis broadcast (zero stride)
               ((6, 4, 3), (0, 3, 1), None, 0, T.FLOAT16),            # broadcast over the scanned axis, FP16
               ((6, 4, 3), (3, 0, 1), None, 2, T.UINT32),             # broadcast over a kept axis
               ((2, 3000), (0, 1), None, 1, T.FLOAT32),               # a long broadcast row
               ((4, 5, 6), None, (60, 1, 5), 1, T.FLOAT32),           # a transposed output
               ((5, 7), (7, 1), (16, 2), 1, T.UINT16)]                # an output with gaps (bytes between kept)
    for j, (sizes, strides, output_strides, axis, data_type) in enumerate(layouts):
        reverse, exclusive = FORMS[(j + (combine == "sum")) % 4]
        desc = scan_desc(combine, data_type, sizes, axis, reverse, exclusive, strides, output_strides)
        storage, x = storage_for(desc.input_tensor,
                                 lambda n, t=data_type: scan_values(combine, t, (n,), rng, long_rows=True))
        (got,) = run_desc(device, desc, storage, seed=len(sizes))
        assert_same_bits(got, scan_reference(x, axis, combine, reverse, exclusive),
                         f"{combine} {sizes} strides {strides} -> {output_strides} axis {axis}")


@pytest.mark.parametrize("data_type", [T.FLOAT32, T.FLOAT16, T.UINT16], ids=lambda t: t.name)
def test_scans_in_place(device, data_type):
    """The output bound over the input (the same buffer, offset and strides): each element is
    read before it is written. Axis 0 and axis 1 of (40, 33), and axis 1 of a transposed
    layout: 16-bit neighbours in a word belong to other rows, written by other invocations."""
    rng = np.random.default_rng(data_type.value)
    layouts = (((40, 33), None, 0, FORMS[0]), ((40, 33), None, 1, FORMS[3]), ((9, 40), (1, 9), 1, FORMS[1]))
    for j, (sizes, strides, axis, (reverse, exclusive)) in enumerate(layouts):
        combine = ("sum", "product")[(j + data_type.value) % 2]
        desc = scan_desc(combine, data_type, sizes, axis, reverse, exclusive, strides, strides)
        compiled = device.compile_operator(device.create_operator(desc))
        storage, x = storage_for(desc.input_tensor, lambda n, c=combine: scan_values(c, data_type, (n,), rng))
        raw = np.ascontiguousarray(storage).view(np.uint8)
        shared = device.create_buffer(padded(raw.size))
        shared.write(raw)
        device.execute(device.create_binding_table(compiled, inputs=[shared], outputs=[shared]))
        got = elements_of(shared.read(np.uint8, raw.size), desc.output_tensor)
        assert_same_bits(got, scan_reference(x, axis, combine, reverse, exclusive),
                         f"in place {combine} {data_type.name} {sizes} axis {axis}")


# --- Scans: special values and wrap-around ------------------------------------------------------------


SPECIAL_ROWS = [[np.nan, 1.0, 2.0, 3.0], [1.0, np.inf, -np.inf, 2.0], [np.inf, 1.0, np.inf, -1.0],
                [-0.0, -0.0, -0.0, -0.0], [-0.0, 0.0, -0.0, 0.0], [0.0, -0.0, 0.0, -0.0], [-0.0, 1.0, -1.0, -0.0],
                [3e38, 3e38, -3e38, -3e38], [1e-45, 1e-45, 2.8e-45, -1e-45], [1e-20, 1e-20, 1e20, 1e20],
                [1e-30, 1e-30, 1e30, 1e-10], [1.17549435e-38, -1.1754942e-38, 1e-45, 1.0], [5.0, 0.0, np.inf, 2.0],
                [-2.0, -0.5, -np.inf, 0.0], [60000.0, 60000.0, -60000.0, -60000.0], [1.0, 2.0**-9, 2.0**-9, 2.0**-8],
                [65504.0, 16.0, 0.5, -65504.0], [2.0**-24, 2.0**-25, 2.0**-25, 2.0**-26], [np.nan, np.nan, 1.0, 0.0]]


@pytest.mark.parametrize("data_type", FLOATS, ids=lambda t: t.name)
def test_special_values_in_every_form(device, data_type):
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL_ROWS, np.float32).astype(NUMPY[data_type])
    for combine, (_, _, front_end) in SCANS.items():
        forms = {T.FLOAT32: FORMS if combine == "sum" else FORMS[1:3], T.FLOAT16: FORMS[:1], T.BFLOAT16: FORMS[3:]}
        for reverse, exclusive in forms[data_type]:
            got = front_end(x, 1, exclusive=exclusive, reverse=reverse, device=device)
            assert_same_bits(got, scan_reference(x, 1, combine, reverse, exclusive),
                             f"{combine} {data_type.name} reverse={reverse} exclusive={exclusive}")


def test_special_values_spelled_out(device):
    """What the contract says of a few rows, written out."""
    def fp32(*values):
        return np.array(values, np.float32)

    def same(got, *expected):
        assert_same_bits(got, np.array(expected, got.dtype), f"{got} vs {expected}")

    same(dml.cumsum(fp32(-0.0), device=device), -0.0)  # the first element starts the running value
    same(dml.cumsum(fp32(-0.0, -0.0, 0.0), device=device), -0.0, -0.0, 0.0)
    same(dml.cumsum(fp32(-0.0, -0.0, 5.0), exclusive=True, device=device), 0.0, -0.0, -0.0)  # +0 first
    same(dml.cumsum(fp32(1.0, 2.0, 3.0), reverse=True, device=device), 6.0, 5.0, 3.0)
    same(dml.cumprod(fp32(-0.0, 5.0, 2.0), device=device), -0.0, -0.0, -0.0)
    same(dml.cumprod(fp32(-3.0, 2.0, 5.0), exclusive=True, device=device), 1.0, -3.0, -6.0)  # 1 first
    same(dml.cumprod(fp32(-3.0, 2.0, 5.0), exclusive=True, reverse=True, device=device), 10.0, 5.0, 1.0)
    # Subnormal running sums and products are exact, not flushed
    tiny = dml.cumsum(np.full(3, 1e-45, np.float32), device=device)
    assert list(tiny.view(np.uint32)) == [1, 2, 3]
    product = dml.cumprod(fp32(1e-20, 1e-20, 4.0), device=device)
    assert product[1] == np.float32(1e-20) * np.float32(1e-20) and product[1] != 0 and product[2] == 4 * product[1]
    smallest_normal, below = np.float32(1.17549435e-38), np.float32(-1.1754942e-38)
    same(dml.cumsum(fp32(smallest_normal, below, 1e-45), device=device), smallest_normal, smallest_normal + below,
         smallest_normal + below + np.float32(1e-45))
    # Infinities and NaN
    got = dml.cumsum(fp32(1.0, np.inf, -np.inf), device=device)
    assert got[0] == 1 and got[1] == np.inf and np.isnan(got[2])
    got = dml.cumprod(fp32(5.0, 0.0, np.inf), device=device)
    assert got[0] == 5 and got[1] == 0 and np.isnan(got[2])
    # The running value is FP32: an FP16 output that overflows does not poison what follows,
    # and BFLOAT16 increments below an output's precision still add up (a BFLOAT16 running
    # value would round 1 + 2**-8 to 1 and stay there).
    same(dml.cumsum(np.array([60000, 60000, -60000], np.float16), device=device), 60000, np.inf, 60000)
    same(dml.cumprod(np.array([256.0, 256.0, 2.0**-16], np.float16), device=device), 256.0, np.inf, 1.0)
    same(dml.cumsum(np.array([1.0, 2.0**-8, 2.0**-8], ml_dtypes.bfloat16), device=device), 1.0, 1.0, 1.0078125)


def test_integer_scans_wrap_modulo_2_to_the_32_and_keep_low_bits(device):
    def u32(*values):
        return np.array(values, np.uint32)

    assert list(dml.cumsum(u32(0xFFFFFFFF, 1, 5), device=device)) == [0xFFFFFFFF, 0, 5]
    assert list(dml.cumsum(u32(0xFFFFFFFF, 1, 5), exclusive=True, device=device)) == [0, 0xFFFFFFFF, 0]
    assert list(dml.cumprod(u32(0x10000, 0x10000, 7), device=device)) == [0x10000, 0, 0]
    assert list(dml.cumprod(u32(*[3] * 25), device=device)) == [3**n % 2**32 for n in range(1, 26)]
    assert list(dml.cumprod(u32(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), device=device)) == [0xFFFFFFFF, 1, 0xFFFFFFFF]
    u16 = np.array([0xFFFF, 0xFFFF, 2, 0x8000, 0x8000], np.uint16)
    assert list(dml.cumsum(u16, device=device)) == [0xFFFF, 0xFFFE, 0, 0x8000, 0]
    assert list(dml.cumsum(u16, reverse=True, device=device)) == [0, 1, 2, 0, 0x8000]
    assert list(dml.cumprod(np.array([0x100, 0x100, 3], np.uint16), device=device)) == [0x100, 0, 0]
    assert list(dml.cumprod(np.array([0xFFFF, 0xFFFF, 3], np.uint16), device=device)) == [0xFFFF, 1, 3]
    rng = np.random.default_rng(9)
    x = rng.integers(0, 2**32, (3, 700), dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(dml.cumsum(x, 1, device=device), np.cumsum(x, 1, dtype=np.uint32))


# --- Scans: front ends -----------------------------------------------------------------------------------


def test_scan_front_ends_follow_numpys_axis_rules(device):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    assert dml.cumsum(x, device=device).shape == (24,)  # axis None: x flattened
    assert np.array_equal(dml.cumsum(x, device=device), np.cumsum(x))
    assert np.array_equal(dml.cumprod(x, device=device), np.cumprod(x))
    for axis in (-1, -3, np.int64(1)):
        assert np.array_equal(dml.cumsum(x, axis, device=device), np.cumsum(x, axis))
    assert np.array_equal(dml.cumprod(x, axis=-2, device=device), np.cumprod(x, -2))
    assert np.array_equal(dml.cumsum(x, -1, reverse=True, exclusive=np.True_, device=device),
                          np.flip(np.cumsum(np.flip(x, -1), -1), -1) - x)
    zero = dml.cumsum(np.float32(3), device=device)
    assert zero.shape == (1,) and zero[0] == 3  # NumPy's: a 0-d array gives one element
    for dtype in (np.float16, ml_dtypes.bfloat16, np.uint16, np.uint32, np.int32):  # x's dtype, not NumPy's widening
        assert (dml.cumsum if dtype in (np.float16, np.uint16, np.int32) else dml.cumprod)(
            np.ones(4, dtype), device=device).dtype == dtype
    empty = dml.cumsum(np.zeros((0, 3), np.float32), 1, device=device)
    assert empty.shape == (0, 3) and empty.dtype == np.float32
    assert dml.cumsum(np.zeros((2, 0), np.float32), device=device).shape == (0,)


def test_scan_front_ends_on_device_arrays(device):
    rng = np.random.default_rng(21)
    x = (rng.standard_normal((6, 50)) * 3).astype(np.float32)
    a = dml.asarray(x, device=device)
    for combine, (_, _, front_end) in SCANS.items():
        for axis, reverse, exclusive in ((None, False, False), (0, True, False), (-1, False, True)):
            got = front_end(a, axis, exclusive=exclusive, reverse=reverse)
            assert isinstance(got, dml.DeviceArray) and got.dtype == np.float32
            host = front_end(x, axis, exclusive=exclusive, reverse=reverse, device=device)
            assert got.shape == host.shape
            assert np.array_equal(bits_of(got.numpy()), bits_of(host))
            source, along = (x.reshape(-1), 0) if axis is None else (x, axis % 2)
            assert_same_bits(got.numpy(), scan_reference(source, along, combine, reverse, exclusive))
    # A deferred input (an element-wise chain not yet computed), FP16 and UINT16 arrays
    relu = dml.relu(a)
    assert np.array_equal(bits_of(dml.cumsum(relu, 1).numpy()), bits_of(dml.cumsum(np.maximum(x, 0), 1,
                                                                                   device=device)))
    for dtype in (np.float16, np.uint16):
        h = scan_values("sum", T.FLOAT16 if dtype == np.float16 else T.UINT16, (5, 9), rng)
        got = dml.cumsum(dml.asarray(h, device=device), 0, reverse=True)
        assert got.dtype == dtype
        assert_same_bits(got.numpy(), scan_reference(h, 0, "sum", reverse=True))
    with dml.create_device() as other:
        with raises(dml.InvalidArgumentError, "device"):
            dml.cumsum(a, 0, device=other)


# --- Scans: rules ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("combine", ["sum", "product"])
def test_scan_desc_rules(combine):
    cls, flag, _ = SCANS[combine]
    f32 = dml.BufferTensorDesc(T.FLOAT32, (2, 3, 4))
    for axis in (3, 7):
        with raises(dml.InvalidArgumentError, "axis", str(axis)):
            cls(f32, f32, axis)
    for axis in (-1, True, 1.0, "1", None, 2**32):
        with raises(dml.InvalidArgumentError, "axis"):
            cls(f32, f32, axis)
    for value in (1, 0, "yes", None, 1.0):
        with raises(dml.InvalidArgumentError, flag, str(value)):
            cls(f32, f32, 0, **{flag: value})
    assert getattr(cls(f32, f32, 0, **{flag: np.True_}), flag)
    with raises(dml.InvalidArgumentError, "axis_direction"):
        cls(f32, f32, 0, "SIDEWAYS")
    for data_type in (T.INT16, T.INT8, T.UINT8, T.FLOAT64):
        tensor = dml.BufferTensorDesc(data_type, (2, 3, 4))
        with raises(dml.InvalidArgumentError, "data_type", data_type.name):
            cls(tensor, tensor, 1)
    with raises(dml.InvalidArgumentError, "data_type", "FLOAT16"):
        cls(f32, dml.BufferTensorDesc(T.FLOAT16, (2, 3, 4)), 1)
    with raises(dml.InvalidArgumentError, "sizes", "(2, 3, 5)"):
        cls(f32, dml.BufferTensorDesc(T.FLOAT32, (2, 3, 5)), 1)
    with raises(dml.InvalidArgumentError, "sizes"):
        cls(f32, dml.BufferTensorDesc(T.FLOAT32, (2, 12)), 1)
    with raises(dml.InvalidArgumentError, "output_tensor"):
        cls(f32, None, 1)
    with raises(dml.InvalidArgumentError, "strides"):  # an output writing an element twice
        cls(f32, dml.BufferTensorDesc(T.FLOAT32, (2, 3, 4), (0, 4, 1)), 1)


def test_scan_front_end_rules(device):
    x = np.ones((2, 3), np.float32)
    for front_end in (dml.cumsum, dml.cumprod):
        for name in ("exclusive", "reverse"):
            for value in (1, "yes", None):
                with raises(dml.InvalidArgumentError, name, str(value)):
                    front_end(x, 0, device=device, **{name: value})
        for axis in (2, -3, 5):
            with raises(dml.InvalidArgumentError, "axis", str(axis)):
                front_end(x, axis, device=device)
        for axis in (True, 1.0, (0,), "0"):
            with raises(dml.InvalidArgumentError, "axis"):
                front_end(x, axis, device=device)
        for dtype in (np.int8, np.uint8, np.int16):
            with raises(dml.InvalidArgumentError, f"x has dtype {np.dtype(dtype).name}", "does not take"):
                front_end(np.ones(3, dtype), device=device)
        with raises(dml.InvalidArgumentError, "float64", "x.astype(np.float32)"):
            front_end(np.ones(3, np.float64), device=device)
        with raises(dml.InvalidArgumentError, "axis"):
            front_end(dml.asarray(x, device=device), 2)


def test_scan_feature_levels(device_at):
    check = functools.partial(check_level, device_at)

    four, three, one, eight = (1, 2, 3, 4), (2, 3, 4), (5,), (1, 2, 1, 2, 1, 2, 1, 2)
    for data_type in SCAN_TYPES:
        check(FL.LEVEL_2_0, scan_desc("sum", data_type, four, 3), False, "LEVEL_2_1")
        check(FL.LEVEL_2_1, scan_desc("sum", data_type, four, 3, True, True), True)
        check(FL.LEVEL_3_0, scan_desc("product", data_type, four, 1), False, "LEVEL_3_1")
        check(FL.LEVEL_3_1, scan_desc("product", data_type, four, 1, True, True), True)
        for combine in ("sum", "product"):
            for sizes in (three, one, eight):
                check(FL.LEVEL_3_1, scan_desc(combine, data_type, sizes, 0), False, "LEVEL_4_0", str(len(sizes)))
                check(FL.LEVEL_4_0, scan_desc(combine, data_type, sizes, 0), True)
    for combine in ("sum", "product"):
        for data_type in (T.INT64, T.UINT64):
            check(FL.LEVEL_4_1, scan_desc(combine, data_type, three, 0), False, "LEVEL_5_0")
            check(FL.LEVEL_5_0, scan_desc(combine, data_type, three, 0), True)
    for direction in (None, INC):
        wide_indices = top_k_desc(T.FLOAT32, three, 1, 2, direction, index_type=T.UINT64)
        check(FL.LEVEL_4_1, wide_indices, False, "output_index_tensor", "UINT64", "LEVEL_5_0")
        check(FL.LEVEL_5_0, wide_indices, True)
        for data_type in (T.INT64, T.UINT64):
            check(FL.LEVEL_4_1, top_k_desc(data_type, three, 1, 2, direction), False, "LEVEL_5_0")
            check(FL.LEVEL_5_0, top_k_desc(data_type, three, 1, 2, direction), True)


@pytest.mark.parametrize("direction", [None, INC, DEC], ids=["TOP_K", "TOP_K1-INCREASING", "TOP_K1-DECREASING"])
def test_64_bit_values_are_ordered_exactly(device, direction):
    """INT64 and UINT64 values (FEATURE_LEVEL_5_0), ordered by their signedness, high word
    first: each type's ends and neighbours of 2**53, which an FP64 compare would tie; ties in
    index order; rows of 3,000 selected over two stages (the last key's two words carried);
    strided inputs and outputs, with UINT64 indices too."""
    rng = np.random.default_rng(64 if direction is None else 65 + direction.value)
    largest = direction is not INC
    for data_type in (T.INT64, T.UINT64):
        for sizes, axis, k, strides, index_type, ties in (((4, 3000), 1, 20, None, T.UINT32, True),
                                                          ((6, 4, 3), 0, 6, (1, 18, 6), T.UINT64, True),
                                                          ((5, 50), 1, 50, None, T.UINT32, False)):
            desc = top_k_desc(data_type, sizes, axis, k, direction, strides=strides, index_type=index_type)
            storage, x = storage_for(desc.input_tensor,
                                     lambda n, t=ties, d=data_type: select_values(d, (n,), rng, ties=t))
            if not ties:
                x[0, :4] = storage[:4] = np.array([2**53, 2**53 + 1, 2**53 - 1, 2**53 + 1], NUMPY[data_type])
            values, indices = run_desc(device, desc, storage, seed=k)
            assert values.dtype == NUMPY[data_type]
            assert_top_k(values, indices, x, k, axis, largest, f"{data_type.name} {sizes} axis {axis} k {k}")


def test_strict_directml_refuses_bfloat16_scans_and_selections():
    strict = dml.create_device(strict_directml=True)
    try:
        for combine in ("sum", "product"):
            strict.create_operator(scan_desc(combine, T.FLOAT16, (2, 3), 1))
            with raises(dml.UnsupportedError, "BFLOAT16", "strict_directml"):
                strict.create_operator(scan_desc(combine, T.BFLOAT16, (2, 3), 1))
            strict.create_operator(scan_desc(combine, T.INT32, (2, 3), 1))
            # UINT16: in DirectML's earlier table, not its current one
            with raises(dml.UnsupportedError, "UINT16 is a dmlpy extension", "strict_directml"):
                strict.create_operator(scan_desc(combine, T.UINT16, (2, 3), 1))
        for direction in (None, INC):
            strict.create_operator(top_k_desc(T.FLOAT16, (2, 3), 1, 2, direction))
            with raises(dml.UnsupportedError, "BFLOAT16", "strict_directml"):
                strict.create_operator(top_k_desc(T.BFLOAT16, (2, 3), 1, 2, direction))
    finally:
        strict.close()


# --- Selection: every data type, axis and direction ------------------------------------------------------


@pytest.mark.parametrize("data_type", TOP_K_TYPES, ids=lambda t: t.name)
def test_top_k_of_every_type_axis_and_direction(device, data_type):
    """top_k (TOP_K1) on (6, 7, 8): k = 3 of the largest, k = the length of the smallest,
    and k = 1 of either, each on another axis (rotating with the type); many ties, NaNs,
    infinities and signed zeros (and a case of distinct values)."""
    rng = np.random.default_rng(100 + data_type.value)
    for j, largest in enumerate((True, False, data_type.value % 2 == 0)):
        axis = (data_type.value + j) % 3
        k = (3, (6, 7, 8)[axis], 1)[j]
        x = select_values(data_type, (6, 7, 8), rng, ties=j != 0)
        values, indices = dml.top_k(x, k, axis, largest, device=device)
        assert values.dtype == x.dtype and indices.dtype == np.int64
        assert_top_k(values, indices, x, k, axis, largest, f"{data_type.name} axis {axis} k {k} {largest}")


@pytest.mark.parametrize("direction", [None, INC, DEC], ids=["TOP_K", "TOP_K1-INCREASING", "TOP_K1-DECREASING"])
def test_top_k_descs(device, direction):
    """TOP_K (largest) and TOP_K1 in both directions as descs: 4-D of several types, and 1-D,
    3-D and 8-D."""
    rng = np.random.default_rng(0 if direction is None else 1 + direction.value)
    layouts = [(T.FLOAT32, (2, 3, 4, 9), 3, 4), (T.FLOAT16, (2, 9, 1, 5), 1, 9), (T.INT8, (3, 2, 11, 2), 2, 5),
               (T.UINT32, (1, 1, 1, 40), 3, 1), (T.INT32, (30,), 0, 7), (T.UINT16, (5, 6, 7), 0, 2),
               (T.BFLOAT16, (2, 1, 2, 3, 1, 2, 2, 6), 7, 3), (T.INT16, (4, 3, 5, 6), 2, 5), (T.UINT8, (4, 33), 1, 33)]
    start = 0 if direction is None else 3 * direction.value
    for data_type, sizes, axis, k in (layouts + layouts)[start:start + 6]:
        desc = top_k_desc(data_type, sizes, axis, k, direction)
        x = select_values(data_type, sizes, rng)
        values, indices = run_desc(device, desc, x, seed=k)
        largest = direction is not INC
        assert_top_k(values, indices, x, k, axis, largest, f"{direction} {data_type.name} {sizes} axis {axis} k {k}")
    tensors = (dml.BufferTensorDesc(T.FLOAT32, (2, 3)), dml.BufferTensorDesc(T.FLOAT32, (2, 1)),
               dml.BufferTensorDesc(T.UINT32, (2, 1)))
    assert dml.TopK1OperatorDesc(*tensors, 1, 1).axis_direction is DEC
    assert dml.TopK1OperatorDesc(*tensors, 1, 1, "INCREASING").axis_direction is INC


@pytest.mark.parametrize("direction", [None, INC, DEC], ids=["TOP_K", "TOP_K1-INCREASING", "TOP_K1-DECREASING"])
def test_top_k_writes_uint64_indices_zero_extended(device, direction):
    """FEATURE_LEVEL_5_0's UINT64 OutputIndexTensor: each index in the low word, zero above it
    (the buffer's random bytes elsewhere untouched), packed and strided, in one stage and several."""
    rng = np.random.default_rng(7 if direction is None else 8 + direction.value)
    for data_type, sizes, axis, k, index_strides in ((T.FLOAT32, (3, 40), 1, 5, None),
                                                     (T.INT16, (6, 4, 3), 0, 6, (24, 6, 2)),
                                                     (T.FLOAT16, (2, 20000), 1, 3, None)):
        selected = tuple(k if d == axis else n for d, n in enumerate(sizes))
        desc = top_k_desc(data_type, sizes, axis, k, direction, index_type=T.UINT64)
        if index_strides is not None:
            desc = dataclasses.replace(desc, output_index_tensor=dml.BufferTensorDesc(T.UINT64, selected,
                                                                                        index_strides))
        x = select_values(data_type, sizes, rng)
        values, indices = run_desc(device, desc, x, seed=k)
        assert indices.dtype == np.uint64
        assert_top_k(values, indices, x, k, axis, direction is not INC, f"{data_type.name} {sizes} UINT64 indices")


def test_ties_nans_and_signed_zeros_spelled_out(device):
    """NaNs above every number (first among the largest, last among the smallest, in index
    order), -0 equal to +0 (index order), ties in index order in both directions, values
    copied bit for bit (a NaN's payload and sign, -0)."""
    payload = np.array([0xFFC00123], np.uint32).view(np.float32)[0]  # a negative NaN with a payload
    x = np.array([1.0, np.nan, -0.0, 0.0, payload, -np.inf, 1.0, np.inf, 0.0, -0.0], np.float32)
    values, indices = dml.top_k(x, 10, device=device)
    assert list(indices) == [1, 4, 7, 0, 6, 2, 3, 8, 9, 5]
    assert np.array_equal(bits_of(values), bits_of(x[[1, 4, 7, 0, 6, 2, 3, 8, 9, 5]]))
    values, indices = dml.top_k(x, 10, largest=False, device=device)
    assert list(indices) == [5, 2, 3, 8, 9, 0, 6, 7, 1, 4]
    assert np.array_equal(bits_of(values), bits_of(x[[5, 2, 3, 8, 9, 0, 6, 7, 1, 4]]))
    values, indices = dml.top_k(x, 3, largest=False, device=device)
    assert list(indices) == [5, 2, 3] and list(bits_of(values)) == [0xFF800000, 0x80000000, 0]
    values, indices = dml.top_k(x, 2, device=device)
    assert list(indices) == [1, 4] and bits_of(values)[1] == 0xFFC00123
    for dtype in (np.float16, ml_dtypes.bfloat16):
        h = x.astype(dtype)
        values, indices = dml.top_k(h, 10, device=device)
        assert list(indices) == [1, 4, 7, 0, 6, 2, 3, 8, 9, 5]
        assert np.array_equal(bits_of(values), bits_of(h[list(indices)]))
    # Subnormals are numbers, ordered by value
    tiny = np.array([1e-45, -1e-45, 0.0, 2.8e-45, -0.0], np.float32)
    assert list(dml.top_k(tiny, 5, device=device)[1]) == [3, 0, 2, 4, 1]
    assert list(dml.top_k(tiny, 5, largest=False, device=device)[1]) == [1, 2, 4, 0, 3]
    # All equal: the first k, in index order, whatever the direction
    same = np.full((2, 9), 7, np.int8)
    for largest in (True, False):
        values, indices = dml.top_k(same, 4, 1, largest, device=device)
        assert (indices == np.arange(4)).all() and (values == 7).all()


def test_integers_are_ordered_by_their_signedness(device):
    def order(values, dtype, largest=True):
        x = np.array(values, dtype)
        return list(dml.top_k(x, x.size, largest=largest, device=device)[0])

    assert order([-128, 127, -1, 0, 1], np.int8) == [127, 1, 0, -1, -128]
    assert order([0x80, 0x7F, 0xFF, 0, 1], np.uint8) == [0xFF, 0x80, 0x7F, 1, 0]
    assert order([-32768, 32767, -1, 0], np.int16, False) == [-32768, -1, 0, 32767]
    assert order([0x8000, 0x7FFF, 0xFFFF, 0], np.uint16, False) == [0, 0x7FFF, 0x8000, 0xFFFF]
    assert order([-2**31, 2**31 - 1, -1, 0], np.int32) == [2**31 - 1, 0, -1, -2**31]
    assert order([2**31, 2**31 - 1, 2**32 - 1, 0], np.uint32) == [2**32 - 1, 2**31, 2**31 - 1, 0]


def test_long_rows_and_many_rows_of_top_k(device):
    rng = np.random.default_rng(77)
    x = (rng.standard_normal((2, 5000)) * 10).astype(np.float32)
    x[0, 4000] = np.nan
    for k, largest in ((1, True), (5, False)):
        assert_top_k(*dml.top_k(x, k, device=device, largest=largest), x, k, 1, largest, f"5000 k {k}")
    y = select_values(T.INT16, (5000, 2), rng)  # a long strided row of few distinct values
    assert_top_k(*dml.top_k(y, 4, 0, device=device), y, 4, 0, True, "strided 5000")
    z = select_values(T.FLOAT16, (20000, 6), rng)  # many rows
    assert_top_k(*dml.top_k(z, 6, 1, False, device=device), z, 6, 1, False, "20000 rows")
    w = np.round(rng.standard_normal((3, 200)) * 20).astype(np.float32)  # k = length on a longer row
    assert_top_k(*dml.top_k(w, 200, device=device), w, 200, 1, True, "k = 200")


def test_top_k_selecting_many_of_a_long_row(device):
    """k = 20 of 5,000 and k = the length of 600: more than 65,536 comparisons in one
    invocation (the kernel's inner loop runs k times over the row)."""
    rng = np.random.default_rng(78)
    x = (rng.standard_normal((2, 5000)) * 10).astype(np.float32)
    assert_top_k(*dml.top_k(x, 20, device=device), x, 20, 1, True, "k 20 of 5000")
    w = np.round(rng.standard_normal((2, 600)) * 20).astype(np.float32)
    assert_top_k(*dml.top_k(w, 600, largest=False, device=device), w, 600, 1, False, "k = 600")


def test_strided_and_broadcast_top_k_inputs_and_outputs(device):
    rng = np.random.default_rng(31)
    layouts = [(T.FLOAT32, (4, 5, 6), (1, 4, 20), 2, 3, (None, None)),       # transposed input
               (T.INT8, (3, 4, 5), (40, 10, 2), 1, 2, (None, None)),          # gaps
               (T.FLOAT32, (3, 7, 5), (5, 0, 1), 1, 4, (None, None)),         # the selected axis broadcast
               (T.UINT16, (6, 4, 3), (3, 0, 1), 2, 2, (None, None)),          # a kept axis broadcast
               (T.FLOAT16, (4, 5, 6), None, 1, 2, ((12, 1, 2), (1, 24, 4))),  # transposed outputs
               (T.FLOAT32, (5, 7), None, 1, 3, ((8, 2), (3, 1)))]             # an output with gaps
    for j, (data_type, sizes, strides, axis, k, output_strides) in enumerate(layouts):
        direction = (None, INC, DEC)[j % 3]
        desc = top_k_desc(data_type, sizes, axis, k, direction, strides, output_strides)
        storage, x = storage_for(desc.input_tensor, lambda n, t=data_type: select_values(t, (n,), rng))
        values, indices = run_desc(device, desc, storage, seed=k)
        assert_top_k(values, indices, x, k, axis, direction is not INC,
                     f"{data_type.name} {sizes} strides {strides} -> {output_strides}")
    # Every element of a broadcast row is the same one: the first k indices, in order
    desc = top_k_desc(T.FLOAT32, (3, 9), 1, 4, DEC, (1, 0))
    values, indices = run_desc(device, desc, np.array([np.nan, -0.0, 2.0], np.float32))
    assert (indices == np.arange(4)).all()
    assert np.array_equal(bits_of(values[1]), np.full(4, 0x80000000, np.uint32))


def test_top_k_front_end_on_device_arrays(device):
    rng = np.random.default_rng(41)
    x = select_values(T.FLOAT32, (7, 30), rng)
    a = dml.asarray(x, device=device)
    for k, axis, largest in ((5, -1, True), (7, 0, False), (30, 1, True)):
        values, indices = dml.top_k(a, k, axis, largest)
        assert isinstance(values, dml.DeviceArray) and isinstance(indices, dml.DeviceArray)
        assert values.dtype == np.float32 and indices.dtype == np.int64  # NumPy's index type, as on the host
        host_values, host_indices = dml.top_k(x, k, axis, largest, device=device)
        assert np.array_equal(bits_of(values.numpy()), bits_of(host_values))
        assert np.array_equal(indices.numpy(), host_indices)
        assert_top_k(values.numpy(), indices.numpy(), x, k, axis % 2, largest, f"device k {k}")
    u = select_values(T.UINT8, (4, 10), rng)
    values, indices = dml.top_k(dml.asarray(u, device=device), 3, largest=False)
    assert values.dtype == np.uint8
    assert_top_k(values.numpy(), indices.numpy(), u, 3, 1, False, "device uint8")
    relu = dml.relu(a)  # a deferred input
    assert_top_k(*(r.numpy() for r in dml.top_k(relu, 2)), np.maximum(x, np.float32(0)), 2, 1, True, "deferred")
    with dml.create_device() as other:
        with raises(dml.InvalidArgumentError, "device"):
            dml.top_k(a, 2, device=other)


def test_top_k_front_end_shapes(device):
    values, indices = dml.top_k(np.float32(3), 1, device=device)  # 0-d: one element
    assert values.shape == indices.shape == (1,) and values[0] == 3 and indices[0] == 0
    values, indices = dml.top_k(np.array([[3.0, 1.0, 2.0]], np.float32), 2, device=device)  # axis -1 by default
    assert values.shape == (1, 2) and list(values[0]) == [3.0, 2.0] and list(indices[0]) == [0, 2]
    values, indices = dml.top_k(np.ones((2, 3, 4), np.float16), 2, axis=np.int64(-2), device=device)
    assert values.shape == indices.shape == (2, 2, 4) and values.dtype == np.float16


# --- Selection: rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", [None, INC], ids=["TOP_K", "TOP_K1"])
def test_top_k_desc_rules(direction):
    cls = dml.TopKOperatorDesc if direction is None else dml.TopK1OperatorDesc
    extra = () if direction is None else (direction,)
    x = dml.BufferTensorDesc(T.FLOAT32, (2, 3, 4))

    def make(values=(2, 3, 2), indices=(2, 3, 2), axis=2, k=2, value_type=T.FLOAT32, index_type=T.UINT32,
             source=x):
        return cls(source, dml.BufferTensorDesc(value_type, values), dml.BufferTensorDesc(index_type, indices), axis,
                   k, *extra)

    make()
    make(values=(2, 3, 4), indices=(2, 3, 4), k=4)
    for k in (5, 100):
        with raises(dml.InvalidArgumentError, f"k {k}", "4"):
            make(values=(2, 3, k), indices=(2, 3, k), k=k)
    for k in (0, -1, True, 2.0, None, 2**32):
        with raises(dml.InvalidArgumentError, f"k {k}"):
            make(k=k)
    for axis in (3, 9):
        with raises(dml.InvalidArgumentError, "axis", str(axis)):
            make(axis=axis)
    for axis in (-1, True, 1.5):
        with raises(dml.InvalidArgumentError, "axis"):
            make(axis=axis)
    with raises(dml.InvalidArgumentError, "output_value_tensor.sizes", "(2, 3, 3)"):
        make(values=(2, 3, 3))
    with raises(dml.InvalidArgumentError, "output_index_tensor.sizes", "(2, 1, 2)"):
        make(indices=(2, 1, 2))
    with raises(dml.InvalidArgumentError, "sizes"):  # k on the wrong axis
        make(values=(2, 2, 4), indices=(2, 2, 4), axis=2)
    with raises(dml.InvalidArgumentError, "dimension_count"):
        make(values=(2, 3, 2, 1), indices=(2, 3, 2, 1))
    for index_type in (T.INT32, T.INT64, T.FLOAT32, T.UINT16):
        with raises(dml.InvalidArgumentError, "output_index_tensor", index_type.name):
            make(index_type=index_type)
    make(index_type=T.UINT64)  # FEATURE_LEVEL_5_0's (test_scan_feature_levels)
    for value_type in (T.FLOAT16, T.UINT32):
        with raises(dml.InvalidArgumentError, "data_type", value_type.name):
            make(value_type=value_type)
    with raises(dml.InvalidArgumentError, "data_type", "FLOAT64"):
        make(value_type=T.FLOAT64, source=dml.BufferTensorDesc(T.FLOAT64, (2, 3, 4)))
    for data_type in (T.INT64, T.UINT64):  # FEATURE_LEVEL_5_0's, refused at compile
        make(value_type=data_type, source=dml.BufferTensorDesc(data_type, (2, 3, 4)))
    with raises(dml.InvalidArgumentError, "output_index_tensor"):
        cls(x, dml.BufferTensorDesc(T.FLOAT32, (2, 3, 2)), None, 2, 2, *extra)
    if direction is not None:
        with raises(dml.InvalidArgumentError, "axis_direction"):
            cls(x, dml.BufferTensorDesc(T.FLOAT32, (2, 3, 2)), dml.BufferTensorDesc(T.UINT32, (2, 3, 2)), 2, 2,
                "UPWARDS")


def test_top_k_outputs_may_not_be_bound_over_the_input(device):
    desc = top_k_desc(T.UINT32, (4, 4), 1, 4, DEC)
    compiled = device.compile_operator(device.create_operator(desc))
    shared, indices = device.create_buffer(64), device.create_buffer(64)
    with raises(dml.InvalidArgumentError, "OutputValueTensor", "InputTensor", "in place"):
        device.create_binding_table(compiled, inputs=[shared], outputs=[shared, indices])
    with raises(dml.InvalidArgumentError, "OutputIndexTensor", "InputTensor"):
        device.create_binding_table(compiled, inputs=[shared], outputs=[indices, shared])


def test_top_k_front_end_rules(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for largest in (1, 0, "yes", None):
        with raises(dml.InvalidArgumentError, "largest", str(largest)):
            dml.top_k(x, 2, largest=largest, device=device)
    for k in (0, -1, True):
        with raises(dml.InvalidArgumentError, f"k {k}"):
            dml.top_k(x, k, device=device)
    for k in (5, 40):
        with raises(dml.InvalidArgumentError, f"k {k}"):
            dml.top_k(x, k, device=device)
    with raises(dml.InvalidArgumentError, "k 4"):
        dml.top_k(x, 4, axis=0, device=device)
    for k in (2.0, None, "2"):
        with raises(dml.InvalidArgumentError, "k"):
            dml.top_k(x, k, device=device)
    for axis in (2, -3):
        with raises(dml.InvalidArgumentError, "axis", str(axis)):
            dml.top_k(x, 1, axis, device=device)
    for axis in (None, True, 1.0, (1,)):
        with raises(dml.InvalidArgumentError, "axis"):
            dml.top_k(x, 1, axis, device=device)
    with raises(dml.InvalidArgumentError, "x has dtype float64", "x.astype(np.float32)"):
        dml.top_k(np.ones(3), 1, device=device)
    with raises(dml.InvalidArgumentError, "largest"):
        dml.top_k(dml.asarray(x, device=device), 1, largest=2)


def test_top_k_feature_levels(device_at):
    check = functools.partial(check_level, device_at)

    four, three, one = (1, 2, 3, 4), (2, 3, 4), (9,)
    for data_type in (T.FLOAT32, T.FLOAT16):  # TOP_K was introduced in FEATURE_LEVEL_2_0
        check(FL.LEVEL_1_0, top_k_desc(data_type, four, 3, 2), False, "LEVEL_2_0")
        check(FL.LEVEL_2_0, top_k_desc(data_type, four, 3, 2), True)
    for data_type in (T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8):
        check(FL.LEVEL_2_0, top_k_desc(data_type, four, 3, 2), False, "LEVEL_2_1", data_type.name)
        check(FL.LEVEL_2_1, top_k_desc(data_type, four, 3, 2), True)
    for data_type in (T.FLOAT32, T.UINT8):
        check(FL.LEVEL_2_0, top_k_desc(data_type, four, 3, 2, INC), False, "LEVEL_2_1")
        check(FL.LEVEL_2_1, top_k_desc(data_type, four, 3, 2, INC), True)
        for direction in (None, DEC):
            for sizes in (three, one):
                check(FL.LEVEL_3_0, top_k_desc(data_type, sizes, 0, 1, direction), False, "LEVEL_3_1")
                check(FL.LEVEL_3_1, top_k_desc(data_type, sizes, 0, 1, direction), True)
    check(FL.LEVEL_3_1, top_k_desc(T.INT16, (1,) * 7 + (5,), 7, 5, INC), True)
