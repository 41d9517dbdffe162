"""ADAM_OPTIMIZER against a plain NumPy model of DirectML's formula in dmlpy's documented
rounding order (FP32, each operation rounded; pow taken from ELEMENT_WISE_POW, whose bits the
contract names), in place over its inputs, FLOAT16, and DirectML's rules and their errors."""

import numpy as np
import pytest
from messages import check_level, raises

import dmlpy as dml

T = dml.TensorDataType
FL = dml.FeatureLevel
f32 = np.float32


def reference(x, m, v, g, step, rate, beta1, beta2, epsilon, powers):
    """One step, element by element in float32: M' and V' rounded to the tensors' dtype, X'
    from them; `powers` are (pow(beta1, T), pow(beta2, T)) as float32."""
    dtype = x.dtype
    x, m, v, g = (a.astype(f32) for a in (x, m, v, g))
    one, rate, beta1, beta2, epsilon = f32(1), f32(rate), f32(beta1), f32(beta2), f32(epsilon)
    with np.errstate(all="ignore"):
        first = (beta1 * m + (one - beta1) * g).astype(dtype)
        second = (beta2 * v + ((one - beta2) * g) * g).astype(dtype)
        correction = np.sqrt(one - f32(powers[1])) / (one - f32(powers[0]))
        update = ((rate * correction) * first.astype(f32)) / (np.sqrt(second.astype(f32)) + epsilon)
        parameters = (x - update).astype(dtype)
    return parameters, first, second


def powers(beta1, beta2, step, device):
    """pow(beta, T) as ELEMENT_WISE_POW computes it (the operator's contract)."""
    return tuple(dml.power(np.array([beta], f32), np.array([step], f32), device=device)[0] for beta in (beta1, beta2))


def same_bits(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    unsigned = {2: np.uint16, 4: np.uint32}[actual.itemsize]
    assert np.array_equal(actual.view(unsigned), expected.view(unsigned)), \
        np.flatnonzero(actual.view(unsigned) != expected.view(unsigned))[:8]


def state(rng, shape, dtype=f32):
    x = rng.standard_normal(shape).astype(dtype)
    m = (rng.standard_normal(shape) * 0.1).astype(dtype)
    v = np.abs(rng.standard_normal(shape) * 0.01).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    return x, m, v, g


@pytest.mark.parametrize("step, shape", [(1, (3, 5, 7)), (2, (3, 5, 7)), (7, (4, 64)), (100, (4, 64)),
                                         (5000, (3, 5, 7))])  # (4, 64): whole 16-byte vectors (the packed path)
def test_matches_the_documented_order_bit_for_bit(device, step, shape):
    rng = np.random.default_rng(step)
    x, m, v, g = state(rng, shape)
    g.reshape(-1)[:3] = (0.0, -0.0, 1e-40)  # zero and subnormal gradients: subnormal moments
    hyper = dict(learning_rate=1e-3, beta1=0.9, beta2=0.999, epsilon=1e-8)
    actual = dml.adam_optimizer(x, m, v, g, step, **hyper, device=device)
    expected = reference(x, m, v, g, step, 1e-3, 0.9, 0.999, 1e-8, powers(0.9, 0.999, step, device))
    for a, b in zip(actual, expected):
        same_bits(a, b)


def test_float64_model_agrees(device):
    """The formula itself, against float64 math (a bound, not bits: pow and the FP32 roundings)."""
    rng = np.random.default_rng(1)
    x, m, v, g = state(rng, (64,))
    new_x, new_m, new_v = dml.adam_optimizer(x, m, v, g, 3, learning_rate=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6,
                                             device=device)
    x, m, v, g = (a.astype(np.float64) for a in (x, m, v, g))
    rate, beta1, beta2, epsilon = (float(f32(s)) for s in (0.01, 0.8, 0.99, 1e-6))  # the desc's FP32 scalars
    m2, v2 = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
    x2 = x - rate * np.sqrt(1 - beta2**3) / (1 - beta1**3) * m2 / (np.sqrt(v2) + epsilon)
    assert np.allclose(new_m, m2, rtol=1e-6, atol=1e-9) and np.allclose(new_v, v2, rtol=1e-6, atol=1e-12)
    assert np.allclose(new_x - x, x2 - x, rtol=1e-3, atol=1e-7)


def test_first_step_moves_by_the_learning_rate(device):
    """At T = 1 from zero moments, Adam moves each weight by -rate * sign(g) (up to epsilon)."""
    x = np.linspace(-1, 1, 16, dtype=f32)
    g = np.where(np.arange(16) % 2, 3.0, -0.5).astype(f32)
    zeros = np.zeros_like(x)
    new_x, new_m, new_v = dml.adam_optimizer(x, zeros, zeros, g, 1, learning_rate=0.125, epsilon=0.0, device=device)
    assert np.allclose(new_x - x, -0.125 * np.sign(g), rtol=1e-5)
    same_bits(new_m, (f32(1) - f32(0.9)) * g)


@pytest.mark.parametrize("shape", [(4, 33), (2, 64)])  # the strided path, and whole 16-byte vectors (packed)
def test_float16(device, shape):
    rng = np.random.default_rng(3)
    x, m, v, g = state(rng, shape, np.float16)
    actual = dml.adam_optimizer(x, m, v, g, 4, learning_rate=0.01, device=device)
    expected = reference(x, m, v, g, 4, 0.01, 0.9, 0.999, 1e-8, powers(0.9, 0.999, 4, device))
    for a, b in zip(actual, expected):
        same_bits(a, b)


def test_in_place_over_its_inputs_step_after_step(device):
    """Outputs bound over the parameter and moment buffers, the table replayed: each replay is
    one more step (the step tensor advanced by the caller between them)."""
    rng = np.random.default_rng(4)
    x, m, v, _ = state(rng, (1, 1, 8, 16))
    gradient = rng.standard_normal(x.shape).astype(f32)
    tensor = dml.BufferTensorDesc(T.FLOAT32, x.shape)
    step = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 1, 1))
    desc = dml.AdamOptimizerOperatorDesc(tensor, tensor, tensor, tensor, step, tensor, tensor, tensor,
                                         learning_rate=0.05)
    compiled = device.compile_operator(device.create_operator(desc))
    buffers = [device.create_buffer(tensor=tensor) for _ in range(4)] + [device.create_buffer(tensor=step)]
    for buffer, values in zip(buffers, (x, m, v, gradient)):
        buffer.write(values)
    table = device.create_binding_table(compiled, inputs=buffers, outputs=buffers[:3])
    expected = (x, m, v)
    for t in (1, 2, 3):
        buffers[4].write(np.array([t], f32))
        device.execute(table)
        expected = reference(*expected, gradient, t, 0.05, 0.9, 0.999, 1e-8, powers(0.9, 0.999, t, device))
    for buffer, values in zip(buffers, expected):
        same_bits(buffer.read().reshape(values.shape), values)


def test_strided_parameters_and_a_broadcast_view(device):
    """Tensors read through their strides: a transposed parameter layout gives the same bits."""
    rng = np.random.default_rng(5)
    x, m, v, g = state(rng, (1, 1, 6, 10))
    transposed = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 6, 10), (60, 60, 1, 6))
    packed = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 6, 10))
    step = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 1, 1))
    desc = dml.AdamOptimizerOperatorDesc(transposed, packed, packed, packed, step, packed, packed, packed,
                                         learning_rate=0.01)
    compiled = device.compile_operator(device.create_operator(desc))
    values = [np.ascontiguousarray(x[0, 0].T), m, v, g, np.array([2], f32)]
    inputs = [device.create_buffer(a.nbytes) for a in values]
    for buffer, a in zip(inputs, values):
        buffer.write(a.reshape(-1))
    outputs = [device.create_buffer(tensor=packed) for _ in range(3)]
    device.execute(device.create_binding_table(compiled, inputs=inputs, outputs=outputs))
    expected = reference(x, m, v, g, 2, 0.01, 0.9, 0.999, 1e-8, powers(0.9, 0.999, 2, device))
    for buffer, values in zip(outputs, expected):
        same_bits(buffer.read().reshape(values.shape), values)


def adam_desc(tensor=None, step=None, **changes):
    tensor = tensor or dml.BufferTensorDesc(T.FLOAT32, (1, 1, 2, 3))
    step = step or dml.BufferTensorDesc(tensor.data_type, (1, 1, 1, 1))
    fields = dict(input_parameters_tensor=tensor, input_first_moment_tensor=tensor, input_second_moment_tensor=tensor,
                  gradient_tensor=tensor, training_step_tensor=step, output_parameters_tensor=tensor,
                  output_first_moment_tensor=tensor, output_second_moment_tensor=tensor, learning_rate=0.1)
    fields.update(changes)
    return dml.AdamOptimizerOperatorDesc(**fields)


def test_rules():
    with raises(dml.InvalidArgumentError, "training_step_tensor.sizes", "scalar"):
        adam_desc(step=dml.BufferTensorDesc(T.FLOAT32, (1, 1, 1, 2)))
    with raises(dml.InvalidArgumentError, "data_type", "DataType"):
        adam_desc(step=dml.BufferTensorDesc(T.UINT32, (1, 1, 1, 1)))
    with raises(dml.InvalidArgumentError, "gradient_tensor.sizes", "Sizes"):
        adam_desc(gradient_tensor=dml.BufferTensorDesc(T.FLOAT32, (1, 1, 3, 2)))
    with raises(dml.InvalidArgumentError, "3 dimensions", "ADAM_OPTIMIZER"):
        adam_desc(tensor=dml.BufferTensorDesc(T.FLOAT32, (1, 2, 3)), step=dml.BufferTensorDesc(T.FLOAT32, (1, 1, 1)))
    with raises(dml.InvalidArgumentError, "INT32", "not supported"):
        adam_desc(tensor=dml.BufferTensorDesc(T.INT32, (1, 1, 2, 3)))
    with raises(dml.InvalidArgumentError, "beta1", "finite"):
        adam_desc(beta1=float("nan"))
    with raises(dml.InvalidArgumentError, "learning_rate", "number"):
        adam_desc(learning_rate="fast")


def test_front_end_errors(device):
    x = np.zeros((2, 3), f32)
    with raises(dml.InvalidArgumentError, "gradient", "shape"):
        dml.adam_optimizer(x, x, x, np.zeros((3, 2), f32), 1, learning_rate=0.1, device=device)
    with raises(dml.InvalidArgumentError, "first_moment", "dtype"):
        dml.adam_optimizer(x, x.astype(np.float16), x, x, 1, learning_rate=0.1, device=device)
    with raises(dml.InvalidArgumentError, "training_step", "one number"):
        dml.adam_optimizer(x, x, x, x, [1, 2], learning_rate=0.1, device=device)
    with raises(dml.InvalidArgumentError, "5 dims"):
        dml.adam_optimizer(*[np.zeros((1,) * 5, f32)] * 4, 1, learning_rate=0.1, device=device)
    with raises(dml.InvalidArgumentError, "parameters", "INT32"):
        dml.adam_optimizer(*[np.zeros(3, np.int32)] * 4, 1, learning_rate=0.1, device=device)


def test_feature_level(device_at):
    check_level(device_at, FL.LEVEL_2_1, adam_desc(), False, "ADAM_OPTIMIZER", "FEATURE_LEVEL_3_0")
    check_level(device_at, FL.LEVEL_3_0, adam_desc(), True)
