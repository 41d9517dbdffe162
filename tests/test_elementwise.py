"""DirectML's ELEMENT_WISE operators against independent references written plainly here
(NumPy in FP32 for floats, Python integers for integers; never the shader's code): every
FP16 and BF16 input of the unary operators, FP32 special values and a dense sweep, the
binary operators over special values in both argument orders, integer extremes, and the
rules each row implies (DirectML's data types per level, dimension counts, constraints)."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from reference_elementwise import (
    FLOATS,
    NUMPY,
    TRANSCENDENTAL,
    UNSIGNED_OF,
    WIDE_NUMPY,
    assert_same,
    assert_within_bound,
    cast_reference,
    expected_of,
    f32,
)

import dmlpy as dml
from dmlpy.ops.elementwise import TABLE

T = dml.TensorDataType
FL = dml.FeatureLevel
ROWS = {row.dml_name: row for row in TABLE}


# --- Running a desc through the public device API ---------------------------------------------


def run(device, desc, inputs: list[np.ndarray]) -> np.ndarray:
    compiled = device.compile_operator(device.create_operator(desc))
    schema = desc.schema
    buffers = [device.create_buffer(tensor=getattr(desc, f.name)) for f in schema.tensors]
    for buffer, values in zip(buffers, inputs):
        buffer.write(np.ascontiguousarray(values))
    device.execute(device.create_binding_table(compiled, inputs=buffers[:len(inputs)],
                                               outputs=buffers[len(inputs):]))
    return buffers[-1].read()


def desc_for(row, data_type: T, shape, scalars: dict, output_type: T | None = None):
    cls = dml.OPERATORS[row.name].desc_class
    tensors = {}
    for operand in row.operands:
        tensors[operand.field] = dml.BufferTensorDesc(operand.data_types[0] if operand.data_types else data_type,
                                                      shape)
    tensors[row.output_field[0]] = dml.BufferTensorDesc(output_type or output_type_of(row, data_type), shape)
    return cls(**tensors, **scalars)


def output_type_of(row, data_type: T) -> T:
    return row.output_types[0] if row.output_types else data_type


def computed_types(row) -> list[T]:
    """The data types dmlpy computes for a row: those its tables list (and BFLOAT16 where it has
    a float form), integers (INT64 and UINT64 included) where it has an integer form, and
    FLOAT64 where its form is on the bits."""
    listed = {t for s in dml.OPERATORS[row.name].support for t in s.data_types}
    form = {t: row.bits or (row.floats if t in FLOATS else row.integers) for t in (*NUMPY, *WIDE_NUMPY)}
    form[T.FLOAT64] = row.bits
    return [t for t, f in form.items() if t in listed and f is not None]


SCALARS = {"CLIP": {"min": -1.5, "max": 2.25}, "THRESHOLD": {"min": -0.75}, "CLIP_GRAD": {"min": -1.5, "max": 2.25},
           "CONSTANT_POW": {"exponent": -2.5}, "CLIP1": {"min": -1.5, "max": 2.25},
           "CLIP_GRAD1": {"min": -1.5, "max": 2.25}}
INTEGER_SCALARS = {"CLIP": {"min": -100.7, "max": 1e10}, "THRESHOLD": {"min": 3.9},
                   "CLIP_GRAD": {"min": -5.5, "max": 70000.0}, "CLIP1": {"min": 3, "max": 100},
                   "CLIP_GRAD1": {"min": 3, "max": 100}}
# 64-bit integers: FP32 bounds past 2^32 (and past the range), typed bounds that need both words.
WIDE_SCALARS = {
    T.INT64: {"CLIP": {"min": -3.5e12, "max": 1e30}, "CLIP_GRAD": {"min": -1e30, "max": 6.0e15},
              "CLIP1": {"min": -(1 << 40) - 3, "max": (1 << 62) + 5},
              "CLIP_GRAD1": {"min": -(1 << 63), "max": (1 << 33) + 1}},
    T.UINT64: {"CLIP": {"min": -2.5, "max": 1.5e19}, "CLIP_GRAD": {"min": 4.5e9, "max": 3e38},
               "CLIP1": {"min": (1 << 33) + 1, "max": (1 << 63) + 7},
               "CLIP_GRAD1": {"min": 5, "max": (1 << 64) - 2}}}

FP32_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, -1.1754944e-38,
                          3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, 2.9999998,
                          8388607.5, -8388608.5, 16777215.0, 1e-30, -1e30], np.float32)


def specials_for(data_type: T) -> np.ndarray:
    """The values every operator meets: FP32's specials in the type, or an integer type's
    range edges and small values (and, for 64-bit ones, the edges of the low word)."""
    dtype = {**NUMPY, **WIDE_NUMPY}[data_type]
    if data_type in FLOATS or data_type == T.FLOAT64:
        with np.errstate(over="ignore"):
            return FP32_SPECIALS.astype(dtype)
    info = np.iinfo(dtype)
    edges = [0, 1, -1 if info.min < 0 else 2, info.min, info.max, info.min + 1, info.max - 1, 7, 8, 31, 32]
    if info.bits == 64:
        edges += [(1 << 32) - 1, 1 << 32, (1 << 32) + 1, 1 << 31, (1 << 53) + 1, info.max - (1 << 32) + 1,
                  *((-(1 << 32), -(1 << 32) - 1) if info.min < 0 else ())]
    return np.array(edges, dtype)


def values_for(data_type: T, count: int, rng, operand=None) -> np.ndarray:
    dtype = {**NUMPY, **WIDE_NUMPY}[data_type]
    specials = specials_for(data_type)
    if data_type in FLOATS or data_type == T.FLOAT64:
        sweep = rng.integers(0, np.iinfo(np.uint64).max, count, dtype=np.uint64, endpoint=True)
        values = sweep.astype(UNSIGNED_OF[np.dtype(dtype).itemsize]).view(dtype)
    else:
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
    values[:specials.size] = specials
    return values


def cases():
    for row in TABLE:
        for data_type in computed_types(row):
            yield pytest.param(row.dml_name, data_type, id=f"{row.dml_name}-{data_type.name}")


# --- Each operator against its reference -------------------------------------------------------


@pytest.mark.parametrize("name, data_type", list(cases()))
def test_every_operator_matches_its_reference(device, name, data_type):
    row = ROWS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    count = 1 << 16 if data_type in (T.FLOAT16, T.BFLOAT16, T.INT16, T.UINT16, T.INT8, T.UINT8) else 1 << 14
    args = []
    for k, operand in enumerate(row.operands):
        if operand.data_types:  # IF's condition: 0, 1 and other nonzero bytes
            args.append(rng.integers(0, 4, count).astype(np.uint8) * rng.integers(0, 2, count).astype(np.uint8))
            continue
        values = values_for(data_type, count, rng)
        if k == 0 and data_type in (T.FLOAT16, T.BFLOAT16, T.UINT16, T.INT16):  # every 16-bit input
            values = np.arange(count, dtype=np.uint16).view(NUMPY[data_type])
        if name.startswith("BIT_SHIFT") and k == 1:
            values = rng.integers(0, 8 * values.itemsize + 3, count).astype(values.dtype)
        args.append(values)
    if len(row.operands) > 1:  # every special meets every special, both orders
        specials = specials_for(data_type)
        pairs = np.array(list(itertools.product(specials, specials)), specials.dtype)
        first = next(k for k, o in enumerate(row.operands) if not o.data_types)
        args[first][:len(pairs)], args[first + 1][:len(pairs)] = pairs[:, 0], pairs[:, 1]
    scalars = (SCALARS if data_type in FLOATS else WIDE_SCALARS.get(data_type, INTEGER_SCALARS)).get(name, {})
    output_type = output_type_of(row, data_type)
    got = run(device, desc_for(row, data_type, (count,), scalars, output_type), args)
    if name in TRANSCENDENTAL and data_type in FLOATS:
        assert_within_bound(got, args, name, data_type, scalars)
    else:
        assert_same(got, expected_of(name, data_type, args, scalars, output_type))


@pytest.mark.parametrize("mode", ["HALVES_TO_NEAREST_EVEN", "TOWARD_ZERO", "TOWARD_INFINITY"])
@pytest.mark.parametrize("data_type", FLOATS)
def test_round_in_every_mode(device, mode, data_type):
    with np.errstate(over="ignore"):
        x = np.concatenate([FP32_SPECIALS, np.arange(-40, 40) / np.float32(4)]).astype(NUMPY[data_type])
    desc = desc_for(ROWS["ROUND"], data_type, x.shape, {"rounding_mode": mode})
    assert_same(run(device, desc, [x]), expected_of("ROUND", data_type, [x], {"rounding_mode": mode}, data_type))


@pytest.mark.parametrize("mode", ["EITHER", "POSITIVE", "NEGATIVE"])
def test_is_infinity_in_every_mode(device, mode):
    x = FP32_SPECIALS
    desc = desc_for(ROWS["IS_INFINITY"], T.FLOAT32, x.shape, {"infinity_mode": mode})
    assert_same(run(device, desc, [x]), expected_of("IS_INFINITY", T.FLOAT32, [x], {"infinity_mode": mode}, T.UINT8))


def test_scale_bias_is_applied_first_in_fp32(device):
    x = np.array([-2.0, -0.5, 0.0, 1.0, 3.0, np.nan, 1e-40], np.float16)
    scale_bias = dml.ScaleBias(1.5, -0.25)
    desc = desc_for(ROWS["ABS"], T.FLOAT16, x.shape, {"scale_bias": scale_bias})
    expected = np.abs(f32(x) * np.float32(1.5) + np.float32(-0.25)).astype(np.float16)
    assert_same(run(device, desc, [x]), expected)
    clip = desc_for(ROWS["CLIP"], T.FLOAT32, x.shape, {"scale_bias": scale_bias, "min": -1.0, "max": 1.0})
    assert_same(run(device, clip, [f32(x)]), np.clip(f32(x) * np.float32(1.5) - np.float32(0.25), -1, 1))
    with pytest.raises(dml.UnsupportedError, match="scale_bias on INT32"):
        device.compile_operator(device.create_operator(
            desc_for(ROWS["ABS"], T.INT32, (4,), {"scale_bias": scale_bias})))


def test_add1_with_a_fused_activation_gives_add_then_the_activation(device):
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(1000) * 4).astype(np.float16), (rng.standard_normal(1000) * 4).astype(np.float16)
    activation = dml.ActivationLeakyReluOperatorDesc(None, None, alpha=0.125)
    desc = desc_for(ROWS["ADD1"], T.FLOAT16, a.shape, {"fused_activation": activation})
    total = (f32(a) + f32(b)).astype(np.float16)
    expected = np.where(f32(total) >= 0, f32(total), f32(total) * np.float32(0.125)).astype(np.float16)
    assert_same(run(device, desc, [a, b]), expected)
    with pytest.raises(dml.InvalidArgumentError, match="is not an activation DirectML fuses"):
        desc_for(ROWS["ADD1"], T.FLOAT16, a.shape, {"fused_activation": desc_for(ROWS["ADD"], T.FLOAT16, (4,), {})})


# --- The rules each row implies --------------------------------------------------------------------


def test_directmls_tables_gate_data_types_and_dimension_counts(device):
    x4 = dml.BufferTensorDesc(T.INT32, (1, 1, 2, 2))
    add = dml.OPERATORS["add"].desc_class
    for level, ok in ((FL.LEVEL_2_0, False), (FL.LEVEL_2_1, True)):
        capped = dml.create_device(max_feature_level=level)
        if ok:
            capped.create_operator(add(x4, x4, x4))
        else:
            with pytest.raises(dml.UnsupportedError, match="needs FEATURE_LEVEL_2_1"):
                capped.create_operator(add(x4, x4, x4))
        capped.close()
    three = dml.BufferTensorDesc(T.FLOAT32, (2, 2, 2))
    capped = dml.create_device(max_feature_level=FL.LEVEL_2_1)
    with pytest.raises(dml.UnsupportedError, match="3 dimensions needs FEATURE_LEVEL_3_0"):
        capped.create_operator(add(three, three, three))
    capped.close()
    with pytest.raises(dml.InvalidArgumentError, match="INT8 is not supported"):
        dml.OPERATORS["logical_and"].desc_class(*[dml.BufferTensorDesc(T.INT8, (4,))] * 3)


def test_comparisons_write_uint8_or_uint32_and_uint32_only_before_2_0():
    f = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 2, 2))
    less = dml.OPERATORS["less"].desc_class
    less(f, f, dml.BufferTensorDesc(T.UINT32, (1, 1, 2, 2)))
    with pytest.raises(dml.InvalidArgumentError, match="must be UINT8 or UINT32"):
        less(f, f, f)
    capped = dml.create_device(max_feature_level=FL.LEVEL_1_0)
    capped.create_operator(less(f, f, dml.BufferTensorDesc(T.UINT32, (1, 1, 2, 2))))
    with pytest.raises(dml.UnsupportedError, match="UINT32 only before it"):
        capped.create_operator(less(f, f, dml.BufferTensorDesc(T.UINT8, (1, 1, 2, 2))))
    capped.close()


def test_if_takes_a_uint8_condition_and_operands_of_one_type():
    cls = dml.OPERATORS["where"].desc_class
    c, f, h = (dml.BufferTensorDesc(t, (4,)) for t in (T.UINT8, T.FLOAT32, T.FLOAT16))
    cls(c, f, f, f)
    with pytest.raises(dml.InvalidArgumentError, match="condition_tensor.data_type FLOAT32 is not supported"):
        cls(f, f, f, f)
    with pytest.raises(dml.InvalidArgumentError, match="b_tensor.data_type FLOAT16 != a_tensor.data_type FLOAT32"):
        cls(c, f, h, f)


def test_what_directml_accepts_but_dmlpy_does_not_compute_is_refused_at_compile(device):
    i32, f32_desc = dml.BufferTensorDesc(T.INT32, (4,)), dml.BufferTensorDesc(T.FLOAT32, (4,))
    power = dml.OPERATORS["power"].desc_class(i32, f32_desc, i32)
    op = device.create_operator(power)  # DirectML's rules accept it
    with pytest.raises(dml.UnsupportedError, match="integer InputTensor and a float ExponentTensor"):
        device.compile_operator(op)


def test_clip1_reads_min_and_max_as_its_data_type(device):
    cls = dml.OPERATORS["clip1"].desc_class
    i8, f16 = dml.BufferTensorDesc(T.INT8, (4,)), dml.BufferTensorDesc(T.FLOAT16, (4,))
    assert cls(i8, i8, min_max_data_type="INT8", min=-128, max=127).min_max_data_type is T.INT8
    cls(f16, f16, min=-0.5, max=1e10)  # None: the output's; a float type's as FP32
    with pytest.raises(dml.InvalidArgumentError, match="min_max_data_type INT32 must equal output_tensor.data_type"):
        cls(i8, i8, min_max_data_type=T.INT32, min=0, max=1)
    with pytest.raises(dml.InvalidArgumentError, match=r"max 128 is not a value of INT8.*\[-128, 127\]"):
        cls(i8, i8, min=0, max=128)
    with pytest.raises(dml.InvalidArgumentError, match="min 0.5 is not a value of INT8"):
        cls(i8, i8, min=0.5, max=1)
    with pytest.raises(dml.InvalidArgumentError, match="min is NaN"):
        cls(f16, f16, min=float("nan"), max=1.0)
    with pytest.raises(dml.InvalidArgumentError, match="must be a TensorDataType"):
        cls(i8, i8, min_max_data_type=3, min=0, max=1)
    with pytest.raises(TypeError):
        cls(i8, i8, None, T.INT8, 0, 1)  # after the ScaleBias, by name
    grad = dml.OPERATORS["clip_grad1"].desc_class
    with pytest.raises(dml.InvalidArgumentError, match="must equal output_gradient_tensor.data_type"):
        grad(i8, i8, i8, min_max_data_type=T.UINT8, min=0, max=1)
    x = np.array([-128, -3, 0, 5, 127], np.int8)
    assert_same(dml.clip1(x, min=-3, max=4, device=device), np.clip(x, -3, 4))
    assert_same(dml.clip_grad1(x, np.full_like(x, 9), min=-3, max=127, device=device),
                np.array([0, 0, 9, 9, 0], np.int8))


def test_pow_exponent_type_may_differ_from_3_0(device):
    cls = dml.OPERATORS["power"].desc_class
    f, i = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 2, 2)), dml.BufferTensorDesc(T.INT32, (1, 1, 2, 2))
    capped = dml.create_device(max_feature_level=FL.LEVEL_2_1)
    with pytest.raises(dml.UnsupportedError, match="exponent_tensor.data_type INT32 differs"):
        capped.create_operator(cls(f, i, f))
    capped.close()
    with pytest.raises(dml.InvalidArgumentError, match="output_tensor.data_type INT32 != input_tensor"):
        cls(f, f, i)
    got = dml.power(np.array([2.0, -2.0, 0.5, -0.0], np.float32), np.array([10, 3, -2, -1], np.int32), device=device)
    assert_same(got, np.array([1024.0, -8.0, 4.0, -np.inf], np.float32))


def test_scalars_after_the_scale_bias_are_given_by_name():
    f = dml.BufferTensorDesc(T.FLOAT32, (4,))
    clip = dml.OPERATORS["clip"].desc_class(f, f, min=0.0, max=6.0)
    assert clip.scale_bias is None and (clip.min, clip.max) == (0.0, 6.0)
    with pytest.raises(TypeError):
        dml.OPERATORS["clip"].desc_class(f, f, None, 0.0, 6.0)


# --- Front ends, device arrays and graphs ---------------------------------------------------------


def test_front_ends_broadcast_take_python_scalars_and_wrap_integers(device):
    a = np.array([[-2.5], [0.5], [3.5]], np.float32)
    b = np.array([1.0, -1.0], np.float32)
    assert_same(dml.add(a, b, device=device), (a + b).astype(np.float32))
    assert_same(dml.multiply(a, 2, device=device), a * np.float32(2))
    assert_same(dml.add(np.array([127, -128], np.int8), 1, device=device), np.array([-128, -127], np.int8))
    assert dml.less(a, 1.0, device=device).dtype == np.uint8
    assert_same(dml.less(a, b, device=device), (a < b).astype(np.uint8))
    assert_same(dml.clip(a, 0.0, 2.0, device=device), np.clip(a, 0, 2))
    assert_same(dml.round(a, rounding_mode="TOWARD_INFINITY", device=device), np.array([[-3.0], [1.0], [4.0]],
                                                                                        np.float32))
    assert_same(dml.abs(a, scale_bias=dml.ScaleBias(2.0, 1.0), device=device), np.abs(a * 2 + 1))


def test_where_takes_its_condition_as_uint8_and_gives_scalars_the_operands_dtype(device):
    condition = np.array([1, 0, 7, 0], np.uint8)
    x = np.array([1.5, -2.0, 3.0, np.nan], np.float16)
    got = dml.where(condition, x, 0.25, device=device)
    assert got.dtype == np.float16
    assert_same(got, np.where(condition != 0, x, np.float16(0.25)))
    with pytest.raises(dml.InvalidArgumentError, match=r"where: condition has dtype float16, which ELEMENT_WISE_IF "
                                                       r"does not take \(it takes np.uint8\)"):
        dml.where(x, x, x, device=device)
    with pytest.raises(dml.InvalidArgumentError, match="b.dtype float32 != a.dtype float16"):
        dml.where(condition, x, x.astype(np.float32), device=device)
    # No promotion, as in DirectML: the message says which argument to convert, and to what.
    hint = r"b.dtype int64 != a.dtype int32: .*no promotion.*convert one first, e\.g\. b\.astype\(np\.int32\)"
    with pytest.raises(dml.InvalidArgumentError, match=hint) as host:
        dml.add(np.arange(3, dtype=np.int32), np.arange(3), device=device)
    with pytest.raises(dml.InvalidArgumentError, match=hint) as resident:
        dml.asarray(np.arange(3, dtype=np.int32), device=device) + dml.asarray(np.arange(3), device=device)
    assert host.value.field == resident.value.field == "data_type"


def test_numpys_bool_masks_are_read_as_uint8(device):
    # NumPy's comparisons give bool arrays; DirectML's conditions and logical operands are
    # UINT8 0/1, which is what a bool array's bytes are.
    x = np.array([-1.5, 2.0, -0.0, np.nan, 3.0], np.float32)
    mask = x < 0
    assert_same(dml.where(mask, x, 0.0, device=device), np.where(mask, x, np.float32(0.0)))
    assert_same(dml.logical_and(mask, x > -1, device=device), np.logical_and(mask, x > -1).astype(np.uint8))
    resident = dml.asarray(mask, device=device)
    assert resident.dtype == np.uint8 and np.array_equal(resident.numpy(), mask.astype(np.uint8))
    assert dml.asarray([0.0, 2.0], dtype=bool, device=device).numpy().tolist() == [0, 1]
    with pytest.raises(dml.InvalidArgumentError, match=r"where: condition has dtype float32"):
        dml.where(x, x, x, device=device)


def test_device_array_chains_of_element_wise_operators_fuse_with_the_bits_of_the_calls(device):
    rng = np.random.default_rng(2)
    a, b, c = ((rng.standard_normal(1000) * 3).astype(np.float32) for _ in range(3))
    on_device = [dml.asarray(v, device=device) for v in (a, b, c)]
    fused = dml.where(dml.less(on_device[0], 0.0), dml.add(dml.multiply(on_device[0], on_device[1]), on_device[2]),
                      dml.exp(on_device[2]))
    one_by_one = dml.where(dml.less(a, 0.0, device=device),
                           dml.add(dml.multiply(a, b, device=device), c, device=device), dml.exp(c, device=device),
                           device=device)
    assert_same(fused.numpy(), one_by_one)


def test_graph_functions_of_the_family(device):
    g = dml.GraphBuilder(device)
    condition = g.input(dml.BufferTensorDesc(np.uint8, (4,)))
    x = g.input(dml.BufferTensorDesc(np.float32, (4,)))
    chosen = dml.graph.where(condition, dml.graph.add(x, x), dml.graph.negative(x))
    assert chosen.desc == dml.BufferTensorDesc(np.float32, (4,))
    compiled = g.build([chosen, dml.graph.greater(x, dml.graph.negative(x))])
    values = np.array([1.5, -2.0, 0.0, np.nan], np.float32)
    buffers = [device.create_buffer(tensor=dml.BufferTensorDesc(t, (4,)))
               for t in (T.UINT8, T.FLOAT32, T.FLOAT32, T.UINT8)]
    buffers[0].write(np.array([1, 0, 3, 0], np.uint8))
    buffers[1].write(values)
    device.execute(device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:]))
    assert_same(buffers[2].read(), np.where([True, False, True, False], values + values, -values))
    assert_same(buffers[3].read(), (values > -values).astype(np.uint8))


def test_device_arrays_take_pythons_operators_and_numpys_ufuncs(device):
    a_host = np.array([-2.5, 0.5, 3.5, np.nan], np.float32)
    b_host = np.array([1.0, -2.0, 3.0, 4.0], np.float32)
    a, b = dml.asarray(a_host, device=device), dml.asarray(b_host, device=device)
    assert_same((a + b).numpy(), a_host + b_host)
    assert_same((2 * a - b / 4).numpy(), (np.float32(2) * a_host) - (b_host / np.float32(4)))
    assert_same((-a).numpy(), -a_host)
    assert_same(abs(a).numpy(), np.abs(a_host))
    assert_same((a < b).numpy(), (a_host < b_host).astype(np.uint8))
    assert_same((a == a).numpy(), (a_host == a_host).astype(np.uint8))
    assert_same((a >= 0.5).numpy(), (a_host >= 0.5).astype(np.uint8))
    bits = dml.asarray(np.array([0b1100, 0b1010], np.uint8), device=device)
    assert_same((bits & 0b0110).numpy(), np.array([0b0100, 0b0010], np.uint8))
    assert_same((~bits).numpy(), np.array([0b11110011, 0b11110101], np.uint8))
    on_device = np.add(a, b)  # a ufunc dmlpy has stays on the device
    assert isinstance(on_device, dml.DeviceArray)
    assert_same(on_device.numpy(), a_host + b_host)
    with np.errstate(invalid="ignore"):
        assert_same(np.log1p(a), np.log1p(a_host))  # one it has not: through the host
    assert_same((a ** 2).numpy(), a_host ** np.float32(2))
    assert_same((a % 2).numpy(), a_host % np.float32(2))  # Python's %: the divisor's sign
    assert_same((7 % b).numpy(), np.float32(7) % b_host)
    with np.errstate(invalid="ignore"):
        assert_same(np.sqrt(a).numpy(), np.sqrt(a_host))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a < b)
    assert bool(dml.asarray([1.0], device=device) > 0)
    assert len({a, b, a}) == 2  # identity hashes: == gives arrays, not a truth


CAST_TYPES = [T.FLOAT32, T.FLOAT16, T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8]


@pytest.mark.parametrize("target", CAST_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("source", CAST_TYPES, ids=lambda t: t.name)
def test_cast_between_every_pair_of_types(device, source, target):
    rng = np.random.default_rng(int(source) * 16 + int(target))
    x = values_for(source, 1 << 14, rng)
    if source in FLOATS:  # beyond every integer range, halves, and the edges of each
        edges = np.array([2.5, -2.5, 127.9, 128.0, -128.9, -129.0, 255.5, 256.0, 32767.5, 65535.9, 65536.0,
                          2147483520.0, 2147483648.0, -2147483904.0, 4294967040.0, 4294967296.0, 65520.0],
                         np.float32)
        with np.errstate(over="ignore"):
            x[-edges.size:] = edges.astype(NUMPY[source])
    desc = dml.CastOperatorDesc(dml.BufferTensorDesc(source, x.shape), dml.BufferTensorDesc(target, x.shape))
    assert_same(run(device, desc, [x]), cast_reference(x, NUMPY[target]))


def test_float16_casts_at_every_rounding_boundary(device):
    """Every FP16 value widened, and every FP32 value where rounding to FP16 could turn: each
    half and each midpoint between neighbouring halves (subnormal, normal, the overflow to
    infinity at 65520), one and two FP32 ULP either side, with both signs. NaN keeps its top
    payload bits and comes out quiet."""
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    desc = dml.CastOperatorDesc(dml.BufferTensorDesc(T.FLOAT16, halves.shape),
                                dml.BufferTensorDesc(T.FLOAT32, halves.shape))
    widened = run(device, desc, [halves])
    assert_same(widened, halves.astype(np.float32))
    nan = np.isnan(halves)
    payload = (halves.view(np.uint16).astype(np.uint32) & 0x3FF) << 13
    assert np.array_equal(widened.view(np.uint32)[nan] & 0x7FFFFF, payload[nan])

    finite = np.sort(halves[~nan & (halves >= 0)].astype(np.float64))
    midpoints = ((finite[:-1] + finite[1:]) / 2).astype(np.float32)  # exact: an FP32 has room
    boundaries = np.concatenate([finite.astype(np.float32), midpoints, [np.float32(65520.0)]]).view(np.uint32)
    bits = np.concatenate([boundaries.astype(np.int64) + step for step in (-2, -1, 0, 1, 2)])
    bits = np.unique(np.clip(bits, 0, 0x7FFFFFFF)).astype(np.uint32)
    x = np.concatenate([bits, bits | 0x80000000, [0x7FC00001, 0xFF812345, 0x7F800001]]).astype(np.uint32)
    x = x.view(np.float32)
    desc = dml.CastOperatorDesc(dml.BufferTensorDesc(T.FLOAT32, x.shape), dml.BufferTensorDesc(T.FLOAT16, x.shape))
    narrowed = run(device, desc, [x])
    assert_same(narrowed, cast_reference(x, np.float16))
    nan = np.isnan(x)
    expected_nan = ((x.view(np.uint32) >> 16) & 0x8000) | 0x7E00 | ((x.view(np.uint32) >> 13) & 0x3FF)
    assert np.array_equal(narrowed.view(np.uint16)[nan], expected_nan[nan].astype(np.uint16))


def test_cast_front_end_and_astype(device):
    x = np.array([-2.7, 0.5, 300.4, np.nan], np.float32)
    assert_same(dml.cast(x, np.int8, device=device), np.array([-2, 0, 127, 0], np.int8))
    on_device = dml.asarray(x, device=device).astype(np.float16)
    assert on_device.dtype == np.float16 and isinstance(on_device, dml.DeviceArray)
    assert_same(on_device.numpy(), x.astype(np.float16))
    with pytest.raises(dml.InvalidArgumentError, match="dtype 'int128' is not a NumPy dtype"):
        dml.cast(x, "int128", device=device)
    with pytest.raises(dml.InvalidArgumentError, match="BFLOAT16 is not supported"):
        dml.cast(x, ml_dtypes.bfloat16, device=device)
    # NumPy's astype(bool) has no TensorDataType; the message says what DirectML's logical
    # operators write instead, and that form gives NumPy's truth values
    for boolean in (bool, np.bool_):
        with pytest.raises(dml.InvalidArgumentError, match=r"dtype .*bool.* DirectML has no boolean type.*x != 0"):
            on_device.astype(boolean)
    truths = np.array([0.0, -0.0, 1.5, np.nan, -np.inf], np.float32)
    assert_same((dml.asarray(truths, device=device) != 0).numpy(), np.array([0, 0, 1, 1, 1], np.uint8))


def test_every_operator_answers_to_its_directml_name():
    """dml.<DirectML's name in snake_case without ELEMENT_WISE_> for each element-wise operator
    (`if_` for IF), in the front ends and the graph functions alike; where NumPy's name is the
    operator's, DirectML's runs the same function. MAX, MIN and MEAN's names are NumPy's
    reductions in dmlpy; IDENTITY's and TANH's the activations'."""
    import keyword

    reductions = {"max": dml.max, "min": dml.min, "mean": dml.mean}
    for schema in dml.OPERATORS.values():
        if not schema.dml_name.startswith("ELEMENT_WISE_"):
            continue
        name = schema.dml_name.removeprefix("ELEMENT_WISE_").lower()
        name = f"{name}_" if keyword.iskeyword(name) else name
        if name in reductions:
            assert getattr(dml, name) is reductions[name] and not hasattr(dml.graph, name)
            continue
        if name in ("identity", "tanh"):
            assert getattr(dml, f"element_wise_{name}") is getattr(dml, schema.name)
            continue
        assert getattr(dml, name) is getattr(dml, schema.name), name
        assert getattr(dml.graph, name) is getattr(dml.graph, schema.name), name
        assert name in dml.__all__ and name in dml.graph.__all__
    assert np.array_equal(dml.logical_greater_than(np.array([1, 3], np.int32), 2), np.array([0, 1], np.uint8))
    chosen = dml.if_(np.array([1, 0], np.uint8), np.float32(1), np.float32(2))
    assert np.array_equal(chosen, np.array([1, 2], np.float32))


def test_numpys_64_bit_defaults_compute_in_the_front_ends(device):
    """NumPy's default int64 and float64 arrays, where DirectML takes them, compute as they
    are: integers modulo 2^64, FLOAT64 bits for the bit operators; device arrays alike."""
    assert_same(dml.add(np.arange(3), np.int64(1), device=device), np.arange(1, 4))
    assert_same(dml.subtract(np.arange(3, dtype=np.uint64), np.uint64(1), device=device),
                np.array([(1 << 64) - 1, 0, 1], np.uint64))
    assert_same(dml.multiply(np.int64(1 << 62), np.arange(4), device=device), np.arange(4) * np.int64(1 << 62))
    assert_same(dml.bitwise_and(np.zeros(3), np.ones(3), device=device), np.zeros(3))
    assert_same(dml.bitwise_xor(np.array([1.5, -0.0]), np.array([-1.5, 0.0]), device=device),
                np.array([0x8000000000000000, 0x8000000000000000], np.uint64).view(np.float64))
    on_device = dml.asarray(np.array([-(1 << 63), -7, 9], np.int64), device=device)
    assert_same((on_device % 4).numpy(), np.array([0, 1, 1]))  # Python's %: the divisor's sign
    assert_same((-on_device).numpy(), np.array([-(1 << 63), 7, -9]))  # the most negative wraps to itself
    assert_same((on_device + 1).numpy(), np.array([-(1 << 63) + 1, -6, 10]))
    assert_same(np.maximum(on_device, 0).numpy(), np.array([0, 0, 9]))
