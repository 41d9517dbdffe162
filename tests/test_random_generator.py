"""RANDOM_GENERATOR: Philox 4x32-10 bits against a plain Python Philox (checked first against
Random123's known-answer vectors), the output state's counter advance, strided outputs,
DirectML's rules and their errors, feature levels, and the same bits under device profiles."""

import numpy as np
import pytest
from messages import raises

import dmlpy as dml

T = dml.TensorDataType
FL = dml.FeatureLevel
MASK = 0xFFFFFFFF

# Random123's kat_vectors for philox4x32_10: counter (4 words), key (2 words) -> 4 words.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK,) * 4, (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def philox4x32_10(counter, key):
    """Salmon et al.'s Philox 4x32 with 10 rounds, written out with Python ints."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for round_index in range(10):
        if round_index:
            k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK
    return c0, c1, c2, c3


def counter_value(state) -> int:
    """The 128-bit counter, element 0 its least significant word."""
    return sum(int(state[w]) << (32 * w) for w in range(4))


def counter_words(value: int) -> list[int]:
    value %= 1 << 128
    return [(value >> (32 * w)) & MASK for w in range(4)]


def reference(state, count: int):
    """`count` words: block j = philox(counter + j, key), its words in order; and the next state."""
    counter, key = counter_value(state), (int(state[4]), int(state[5]))
    blocks = -(-count // 4)
    words = [w for j in range(blocks) for w in philox4x32_10(counter_words(counter + j), key)]
    return np.array(words[:count], np.uint32), np.array([*counter_words(counter + blocks), *key], np.uint32)


def state_of(counter, key) -> np.ndarray:
    return np.array([*counter, *key], np.uint32)


STATE = dml.BufferTensorDesc(T.UINT32, (1, 1, 1, 6))


def run_desc(device, desc, state):
    """Run `desc` on `state`; the output buffer's words (all of them) and the output state's."""
    compiled = device.compile_operator(device.create_operator(desc))
    state_buffer = device.create_buffer(tensor=desc.input_state_tensor)
    state_buffer.write(state)
    output = device.create_buffer(desc.output_tensor.total_tensor_size_in_bytes)
    output_state = device.create_buffer(tensor=desc.output_state_tensor)
    device.execute(device.create_binding_table(compiled, [state_buffer], [output, output_state]))
    return output.read(np.uint32, output.size_in_bytes // 4), output_state.read().reshape(-1)


def test_the_reference_gives_random123_s_known_answers():
    for counter, key, expected in KNOWN_ANSWERS:
        assert philox4x32_10(counter, key) == expected


def test_known_answers_on_the_device_and_the_counter_advances_by_one(device):
    for counter, key, expected in KNOWN_ANSWERS:
        bits, new_state = dml.random_generator(state_of(counter, key), 4, device=device)
        assert bits.dtype == np.uint32 and bits.shape == (4,)
        assert [int(b) for b in bits] == list(expected)
        assert list(new_state) == [*counter_words(counter_value(counter) + 1), *key]  # all-ones wraps to 0


@pytest.mark.parametrize("shape", [(7,), (3, 5, 2), (2, 1, 3, 1, 1, 2, 1, 3)])
def test_sizes_not_multiples_of_four_match_the_reference(device, shape):
    state = state_of((0x01234567, 0x89ABCDEF, 0xFEDCBA98, 0x76543210), (0xDEADBEEF, 0x0BADF00D))
    bits, new_state = dml.random_generator(state, shape, device=device)
    expected, expected_state = reference(state, int(np.prod(shape)))
    assert bits.shape == shape
    assert np.array_equal(bits.reshape(-1), expected)
    assert np.array_equal(new_state, expected_state)
    assert counter_value(new_state) - counter_value(state) == -(-int(np.prod(shape)) // 4)


def test_the_counter_carries_across_its_words_and_wraps_at_2_to_the_128(device):
    shape = (3, 5, 2)  # 30 words: 8 blocks, so counter + j crosses the carries inside the call too
    for counter in [(0xFFFFFFFE, MASK, 5, 0), (0xFFFFFFFA, MASK, MASK, 7), (MASK - 2, MASK, MASK, MASK)]:
        state = state_of(counter, (0x12345678, 0x9ABCDEF0))
        bits, new_state = dml.random_generator(state, shape, device=device)
        expected, expected_state = reference(state, 30)
        assert np.array_equal(bits.reshape(-1), expected)
        assert np.array_equal(new_state, expected_state)
    assert list(dml.random_generator(state_of((0xFFFFFFFE, MASK, 5, 0), (1, 2)), shape, device=device)[1]) == \
        [6, 0, 6, 0, 1, 2]
    assert list(new_state[:4]) == [5, 0, 0, 0]  # (2^128 - 3) + 8 wraps


def test_consecutive_calls_continue_one_stream(device):
    state = state_of((0, 0, 0, 0), (42, 0))
    first, state_1 = dml.random_generator(state, (3, 5, 2), device=device)
    second, _ = dml.random_generator(state_1, (3, 5, 2), device=device)
    stream, _ = reference(state, 64)  # the second call starts at block 8: words 32 onwards
    assert np.array_equal(first.reshape(-1), stream[:30])
    assert np.array_equal(second.reshape(-1), stream[32:62])


def test_strided_output_is_written_in_logical_row_major_order(device):
    state = state_of((9, 8, 7, 6), (5, 4))
    # Sizes (1, 1, 3, 5) read column-major with a gap: element (r, c) at c * 4 + r, word 3 of each column unused.
    output = dml.BufferTensorDesc(T.UINT32, (1, 1, 3, 5), (0, 0, 1, 4))
    words, new_state = run_desc(device, dml.RandomGeneratorOperatorDesc(STATE, output, STATE), state)
    expected, expected_state = reference(state, 15)
    columns = np.append(words, np.uint32(0))[:20].reshape(5, 4)  # 19 words: the last column's gap lies past the end
    assert np.array_equal(columns[:, :3].T.reshape(-1), expected)
    assert not columns[:, 3].any()  # the gaps stay as they were
    assert np.array_equal(new_state, expected_state)


def test_a_null_output_state_binds_none_and_gives_the_same_bits(device):
    desc = dml.RandomGeneratorOperatorDesc(STATE, dml.BufferTensorDesc(T.UINT32, (1, 1, 2, 5)), None)
    assert desc.output_state_tensor is None
    plan = desc.schema.kernel(desc, device.adapter)  # the kernel leaves the state out
    assert "OUTPUT_STATE" not in plan.stages[0].defines and plan.interface.outputs == (T.UINT32,)
    compiled = device.compile_operator(device.create_operator(desc))
    state = state_of([7, 0, 0, 0], [1, 2])
    state_buffer = device.create_buffer(tensor=STATE)
    state_buffer.write(state)
    output = device.create_buffer(tensor=desc.output_tensor)
    with raises(dml.InvalidArgumentError, "outputs[1] (OutputStateTensor) is Buffer",
                "leaves this optional tensor out"):
        device.create_binding_table(compiled, [state_buffer], [output, device.create_buffer(64)])
    device.execute(device.create_binding_table(compiled, [state_buffer], [output, None]))
    assert np.array_equal(output.read().reshape(-1), reference(state, 10)[0])


def test_directml_s_rules():
    make = dml.RandomGeneratorOperatorDesc
    output = dml.BufferTensorDesc(T.UINT32, (2, 3, 4, 5))
    make(STATE, output, STATE)
    make(STATE, output, None, dml.RandomGeneratorType.PHILOX_4X32_10)
    make(STATE, output, STATE, type="PHILOX_4X32_10")
    short = dml.BufferTensorDesc(T.UINT32, (6,))
    make(short, dml.BufferTensorDesc(T.UINT32, (9,)), short)  # FEATURE_LEVEL_4_0's { [1, ...,] 6 }
    for name, args in [("input_state_tensor", (dml.BufferTensorDesc(T.INT32, (1, 1, 1, 6)), output, None)),
                       ("output_tensor", (STATE, dml.BufferTensorDesc(T.FLOAT32, (2, 3, 4, 5)), STATE)),
                       ("output_state_tensor", (STATE, output, dml.BufferTensorDesc(T.INT32, (1, 1, 1, 6))))]:
        with raises(dml.InvalidArgumentError, f"{name}.data_type", "RANDOM_GENERATOR", "UINT32"):
            make(*args)
    for sizes in [(1, 1, 1, 5), (1, 2, 1, 6), (1, 1, 1, 12), (6, 1)]:
        with raises(dml.InvalidArgumentError, f"input_state_tensor.sizes {sizes}", "PHILOX_4X32_10", "{1,1,1,6}"):
            make(dml.BufferTensorDesc(T.UINT32, sizes), output, None)
    with raises(dml.InvalidArgumentError, "output_state_tensor.sizes (1, 1, 1, 5)"):
        make(STATE, output, dml.BufferTensorDesc(T.UINT32, (1, 1, 1, 5)))
    with raises(dml.InvalidArgumentError, "output_state_tensor.dimension_count 2 != input_state_tensor.dimension_count",
                "InputStateTensor and OutputStateTensor must have the same DimensionCount"):
        make(STATE, output, dml.BufferTensorDesc(T.UINT32, (1, 6)))
    with raises(dml.InvalidArgumentError, "type 'MT19937'", "RandomGeneratorType", "PHILOX_4X32_10",
                "DML_RANDOM_GENERATOR_TYPE"):
        make(STATE, output, STATE, "MT19937")
    with raises(dml.InvalidArgumentError, "output_tensor must be a BufferTensorDesc"):
        make(STATE, (2, 3), STATE)
    with raises(dml.InvalidArgumentError, "output_tensor.strides (0, 0, 0, 1)", "must not write any element twice"):
        make(STATE, dml.BufferTensorDesc(T.UINT32, (1, 1, 2, 3), (0, 0, 0, 1)), STATE)


def test_feature_levels(device_at):
    desc4 = dml.RandomGeneratorOperatorDesc(STATE, dml.BufferTensorDesc(T.UINT32, (1, 1, 3, 10)), STATE)
    with raises(dml.UnsupportedError, "RANDOM_GENERATOR needs FEATURE_LEVEL_3_0", "FEATURE_LEVEL_2_1"):
        device_at(FL.LEVEL_2_1).create_operator(desc4)
    device_at(FL.LEVEL_3_0).create_operator(desc4)
    short = dml.BufferTensorDesc(T.UINT32, (6,))
    with raises(dml.UnsupportedError, "input_state_tensor: UINT32 with 1 dimensions needs FEATURE_LEVEL_4_0",
                "FEATURE_LEVEL_3_0"):
        device_at(FL.LEVEL_3_0).create_operator(
            dml.RandomGeneratorOperatorDesc(short, dml.BufferTensorDesc(T.UINT32, (1, 1, 3, 10)), short))
    # The front end pads up to 4 dims, so it runs at FEATURE_LEVEL_3_0 as DirectML's 4-D form.
    state = state_of((1, 2, 3, 4), (5, 6))
    bits, new_state = dml.random_generator(state, (3, 10), device=device_at(FL.LEVEL_3_0))
    expected, expected_state = reference(state, 30)
    assert np.array_equal(bits.reshape(-1), expected) and np.array_equal(new_state, expected_state)


def test_the_same_bits_under_device_profiles():
    state = state_of((0xCAFEBABE, 1, 0, 0), (0x51, 0xED))
    expected, expected_state = reference(state, 30)
    for profile in ("nvidia-h100", "qualcomm-adreno-740"):
        with dml.create_device(profile=profile) as device:
            bits, new_state = dml.random_generator(state, (3, 5, 2), device=device)
            assert np.array_equal(bits.reshape(-1), expected), profile
            assert np.array_equal(new_state, expected_state), profile


def test_front_end_errors(device):
    state = state_of((0, 0, 0, 0), (0, 0))
    with raises(dml.InvalidArgumentError, "state has dtype int64 and 6 elements", "6 uint32 words"):
        dml.random_generator(np.zeros(6, np.int64), 4, device=device)
    with raises(dml.InvalidArgumentError, "state has dtype uint32 and 4 elements"):
        dml.random_generator(np.zeros(4, np.uint32), 4, device=device)
    for shape in [(), (0, 3), (1,) * 9]:
        with raises(dml.InvalidArgumentError, f"shape {shape}", "1 to 8 dims"):
            dml.random_generator(state, shape, device=device)
    with raises(dml.InvalidArgumentError, "shape 2.5 must be an int or a tuple of ints"):
        dml.random_generator(state, 2.5, device=device)
