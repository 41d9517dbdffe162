"""Device profiles, float controls and adapter selection: lavapipe planned as other GPUs, with
exact results, and the exact arithmetic a GPU that flushes subnormals needs."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlpy as dml
from dmlpy.kernels.codegen import float_controls_defines
from dmlpy.runtime.device_profiles import PROFILE_SCHEMA, load_profile

T = dml.TensorDataType
PROFILES = dml.list_device_profiles()
VENDORS = ("nvidia", "amd", "intel", "arm-mali", "qualcomm-adreno", "apple", "lavapipe")


@pytest.fixture(scope="module", params=PROFILES)
def profiled(request):
    with dml.create_device(profile=request.param) as device:
        yield device


def test_a_profile_ships_for_every_kind_of_gpu():
    for vendor in VENDORS:
        assert any(name.startswith(vendor) for name in PROFILES), vendor
    assert sum(name.startswith("nvidia") for name in PROFILES) >= 2  # a data-centre and a desktop GPU


@pytest.mark.parametrize("name", PROFILES)
def test_every_shipped_profile_is_valid_and_names_its_source(name):
    profile = load_profile(name)
    assert profile.name == name and profile.source.startswith("https://")


def test_the_profile_is_applied_as_the_stricter_of_the_two():
    real = dml.list_adapters()[0]
    with dml.create_device(profile="arm-mali-g710") as device:
        effective, mali = device.adapter, load_profile("arm-mali-g710").values
        assert effective.profile == "arm-mali-g710" and effective.index == real.index
        assert effective.min_storage_buffer_offset_alignment == max(real.min_storage_buffer_offset_alignment, 256)
        for field in ("max_storage_buffer_range", "max_compute_work_group_invocations", "max_push_constants_size",
                      "max_memory_allocation_size", "max_per_stage_descriptor_storage_buffers"):
            assert getattr(effective, field) == min(getattr(real, field), mali[field]), field
        assert effective.max_compute_work_group_size == tuple(map(min, real.max_compute_work_group_size,
                                                                  mali["max_compute_work_group_size"]))
        assert effective.subgroup_size == 16 and effective.adapter_type == dml.AdapterType.INTEGRATED_GPU
        assert device.segment_size <= 2**27


def test_the_environment_names_the_profile():
    code = "import dmlpy; d = dmlpy.create_device(); print(d.adapter.profile, d.adapter.denormals)"
    env = {**os.environ, "DMLPY_DEVICE_PROFILE": "nvidia-h100"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["nvidia-h100", "flush"], result.stderr
    env["DMLPY_DEVICE_PROFILE"] = "no-such-gpu"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "DMLPY_DEVICE_PROFILE 'no-such-gpu' is not a device profile" in result.stderr


def _profile_text(**changes):
    data = json.loads((Path(dml.__file__).parent / "profiles" / "lavapipe.json").read_text())
    for key, value in changes.items():
        if value is KeyError:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


@pytest.mark.parametrize("changes, message", [
    ({"colour": "red"}, "unknown key 'colour'"),
    ({"maxPushConstantsSize": KeyError}, "maxPushConstantsSize is missing (128 to 2^32 - 1)"),
    ({"maxPushConstantsSize": 64}, "maxPushConstantsSize 64 is invalid: 128 to 2^32 - 1"),
    ({"maxPushConstantsSize": "256"}, "maxPushConstantsSize '256' is invalid"),
    ({"maxPushConstantsSize": True}, "maxPushConstantsSize True is invalid"),
    ({"minStorageBufferOffsetAlignment": 48}, "minStorageBufferOffsetAlignment 48 is invalid: a power of two"),
    ({"maxComputeWorkGroupCount": [65535, 65535]}, "maxComputeWorkGroupCount [65535, 65535] is invalid: three"),
    ({"maxComputeWorkGroupSize": [1024, 1024, 32]}, "maxComputeWorkGroupSize [1024, 1024, 32] is invalid: three"),
    ({"subgroupSize": 24}, "subgroupSize 24 is invalid: a power of two"),
    ({"shaderDenormPreserveFloat32": 1}, "shaderDenormPreserveFloat32 1 is invalid: true or false"),
    ({"denormals": "sometimes"}, "denormals 'sometimes' is invalid: \"preserve\" or \"flush\""),
    ({"adapter_type": "TOASTER"}, "adapter_type 'TOASTER' is invalid: one of OTHER"),
    ({"source": "gpuinfo"}, "source 'gpuinfo' is invalid: the public source of the values"),
    ({"name": "My GPU"}, "name 'My GPU' is invalid"),
])
def test_a_profile_file_is_checked_against_the_schema(tmp_path, changes, message):
    path = tmp_path / "mine.json"
    path.write_text(_profile_text(**changes))
    with pytest.raises(dml.InvalidArgumentError) as error:
        dml.create_device(profile=path)
    assert f"device profile {path}: {message}" in str(error.value)


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON"), ("[1, 2]", "must be a JSON object, not list"), ("[" * 60000, "not valid JSON"),
    (" " * 70000 + "{}", "larger than 65536 bytes"),
])
def test_a_malformed_profile_file_is_refused(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.create_device(profile=str(path))


@pytest.mark.parametrize("profile, message", [
    ("nvidia", "'nvidia' is not a device profile; the profiles are amd-rdna3"),
    ("/no/such/profile.json", "cannot be read"),
    (7, "profile must be a profile name or a path, not int"),
    (True, "profile must be a profile name or a path, not bool"),
])
def test_an_unknown_profile_is_invalid(profile, message):
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.create_device(profile=profile)


def test_a_profile_file_of_ones_own_is_used_by_path(tmp_path):
    path = tmp_path / "tiny-gpu.json"
    path.write_text(_profile_text(name="tiny-gpu", maxStorageBufferRange=2**27, maxPushConstantsSize=128))
    with dml.create_device(profile=path) as device:
        assert device.adapter.profile == "tiny-gpu" and device.adapter.max_push_constants_size == 128


def test_an_operator_binding_more_buffers_than_the_device_allows_is_unsupported(tmp_path):
    """Vulkan's least maxPerStageDescriptorStorageBuffers is 4; ADAM binds eight tensors. The
    error names the count, the device's limit and the limit's Vulkan name; a four-tensor
    operator still runs there."""
    path = tmp_path / "four-buffers.json"
    path.write_text(_profile_text(name="four-buffers", maxPerStageDescriptorStorageBuffers=4))
    tensor = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 2, 8))
    step = dml.BufferTensorDesc(T.FLOAT32, (1, 1, 1, 1))
    adam = dml.AdamOptimizerOperatorDesc(tensor, tensor, tensor, tensor, step, tensor, tensor, tensor,
                                         learning_rate=0.01)
    with dml.create_device(profile=path) as device:
        with pytest.raises(dml.UnsupportedError, match=r"binds \d+ storage buffers; the device allows 4 "
                                                       r"\(maxPerStageDescriptorStorageBuffers\)"):
            device.compile_operator(device.create_operator(adam))
        x = np.array([1.0, -2.0, 3.0], np.float32)
        assert np.array_equal(dml.where(x > 0, x, -x, device=device), np.abs(x))


def test_the_schema_covers_every_limit_the_issue_names():
    keys = {spec.key for spec in PROFILE_SCHEMA}
    assert {"maxStorageBufferRange", "minStorageBufferOffsetAlignment", "maxComputeWorkGroupCount",
            "maxComputeWorkGroupSize", "maxComputeWorkGroupInvocations", "maxComputeSharedMemorySize",
            "maxPushConstantsSize", "maxPerStageDescriptorStorageBuffers", "maxMemoryAllocationSize",
            "subgroupSize", "shaderDenormPreserveFloat32", "denormals"} <= keys


# Adapters by name and UUID.

def test_an_adapter_is_chosen_by_a_piece_of_its_name_or_its_uuid():
    real = dml.list_adapters()[0]
    for wanted in (real.name[:5].upper(), real.device_uuid, real.device_uuid[:8] + "-" + real.device_uuid[8:], "0"):
        with dml.create_device(adapter=wanted) as device:
            assert device.adapter.index == real.index, wanted


@pytest.mark.parametrize("adapter, message", [
    ("no such gpu", "'no such gpu' matches no adapter; the adapters are 0: "),
    ("", "matches no adapter"),
    (99, "99 is not an adapter index"),
    ("-1", "matches no adapter"),
    (True, "must be an adapter index, name or UUID"),
    (1.5, "must be an adapter index, name or UUID"),
])
def test_an_adapter_that_matches_nothing_is_invalid(adapter, message):
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.create_device(adapter=adapter)


def test_the_adapter_environment_takes_a_name():
    name = dml.list_adapters()[0].name.split()[0]
    code = "import dmlpy; print(dmlpy.create_device().adapter.index)"
    result = subprocess.run([sys.executable, "-c", code], env={**os.environ, "DMLPY_ADAPTER": name},
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "0", result.stderr


# Float controls: which arithmetic a kernel gets.

@pytest.mark.parametrize("changes, expected", [
    ({"denorm_preserve_float32": True, "denormals": "flush"}, {"DENORM_PRESERVE"}),
    ({"denormals": "preserve"}, set()),
    ({"denormals": "flush"}, {"DENORMALS_EXACT"}),
    ({"denormals": "unknown"}, {"DENORMALS_EXACT"}),
    ({"denormals": "flush", "profile": "nvidia-h100"}, {"DENORMALS_EXACT", "EMULATE_FLUSH"}),
    ({"denormals": "preserve", "signed_zero_inf_nan_preserve_float32": True}, {"SIGNED_ZERO_INF_NAN_PRESERVE"}),
])
def test_float_controls_follow_the_device(changes, expected):
    base = dataclasses.replace(dml.list_adapters()[0], denorm_preserve_float32=False,
                               signed_zero_inf_nan_preserve_float32=False)
    assert set(float_controls_defines(dataclasses.replace(base, **changes))) == expected


def test_a_kernel_asking_for_denorm_preserve_carries_the_execution_mode():
    adapter = dataclasses.replace(dml.list_adapters()[0], denorm_preserve_float32=True)
    x = dml.BufferTensorDesc(T.FLOAT32, (4,))
    desc = dml.ActivationLinearOperatorDesc(x, x, alpha=0.5, beta=0.0)
    from dmlpy.runtime.shader_compiler import compile_desc
    _, (shader, _) = compile_desc(desc, adapter)  # the main and tail stages: one shader, two specialisations
    from dmlpy.runtime.shader_compiler import find_tool
    text = subprocess.run([find_tool("spirv-dis"), "-"], input=shader.spirv, capture_output=True,
                          check=True).stdout.decode()
    assert "OpExecutionMode %main DenormPreserve 32" in text and 'OpExtension "SPV_KHR_float_controls"' in text


def test_the_probe_decides_between_the_hardware_and_the_exact_arithmetic(device):
    assert device.adapter.denormals in ("preserve", "flush")
    kernel_defines = float_controls_defines(device.adapter)
    assert ("DENORMALS_EXACT" in kernel_defines) == (device.adapter.denormals == "flush"
                                                     and not device.adapter.denorm_preserve_float32)


def test_the_probe_finds_that_lavapipe_keeps_subnormals(device):
    """llvmpipe's additions and multiplications run in the CPU's default floating-point mode,
    which keeps subnormal operands and results: all four of the probe's cases come out exact,
    so lavapipe takes the hardware's arithmetic, not the slower exact one."""
    if device.adapter.profile is not None or "llvmpipe" not in device.adapter.name:
        pytest.skip("a fact about lavapipe itself, unprofiled")
    assert device.adapter.denormals == "preserve"


# Exact results under every profile.

def _special_floats(count=4096, seed=7):
    rng = np.random.default_rng(seed)
    bits = np.concatenate([
        rng.integers(1, 0x00800000, count // 4),  # subnormals
        rng.integers(0x00800000, 0x0C000000, count // 4),  # tiny normals, products of which are subnormal
        rng.integers(0, 0x7F800000, count // 4),  # anything finite
        np.array([0, 0x00000001, 0x007FFFFF, 0x00800000, 0x7F800000, 0x7FC00000, 0x3F800000], np.int64),
    ]).astype(np.uint32)
    signs = rng.integers(0, 2, bits.size).astype(np.uint32) << 31
    return (bits | signs).view(np.float32)


def _bits(a):
    """The elements' bits, every NaN as one pattern: a NaN is a NaN on every device, but its
    sign and payload are the hardware's where the hardware's arithmetic runs (lavapipe's x86
    gives 0 * inf a negative NaN; dmlpy's exact arithmetic a positive one; docs/numerics.md)."""
    a = np.ascontiguousarray(a)
    bits = a.view(f"u{a.dtype.itemsize}").copy()
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        bits[np.isnan(a.astype(np.float32))] = np.array(np.nan, a.dtype).view(bits.dtype)
    return bits


@pytest.mark.parametrize("alpha, beta", [(0.25, 0.0), (2.0**-60, 2.0**-140), (3.0, -1.0e-45), (-2.0**-30, 0.0)])
def test_multiply_add_is_exact_with_subnormals(profiled, alpha, beta):
    x = _special_floats()
    with np.errstate(all="ignore"):
        expected = (np.float32(alpha) * x).astype(np.float32) + np.float32(beta)
    got = dml.linear(x, alpha, beta, device=profiled)
    np.testing.assert_array_equal(_bits(got), _bits(expected.astype(np.float32)))


def test_hard_sigmoid_grad_keeps_subnormal_products(profiled):
    dy = _special_floats(seed=3)
    x = np.zeros_like(dy)  # inside the linear part: dx = dy * alpha
    with np.errstate(all="ignore"):
        expected = (dy * np.float32(0.2)).astype(np.float32)
    np.testing.assert_array_equal(_bits(dml.hard_sigmoid_grad(x, dy, device=profiled)), _bits(expected))


@pytest.mark.parametrize("name", ["tanh", "elu", "gelu", "softplus", "sigmoid", "tanh_grad", "sigmoid_grad",
                                  "swish", "softmax"])
def test_transcendentals_give_the_same_bits_under_every_profile(device, profiled, name):
    values = _special_floats(1024, seed=11)
    values = values[np.isfinite(values)][:768]
    inputs = [values.reshape(-1, 16)]
    if name.endswith("_grad"):
        inputs.append(np.flip(values).reshape(-1, 16))
    function = getattr(dml, name)
    np.testing.assert_array_equal(_bits(function(*inputs, device=profiled)), _bits(function(*inputs, device=device)))


def test_reductions_give_the_same_bits_under_every_profile(device, profiled):
    """Every REDUCE function over rows of one chunk and of several (10,000 elements), ARGMAX
    from the end, the running sums and products, and TOP_K: subnormals, tiny normals whose
    squares underflow, and large values, as the default device gives them; and INT64's sums,
    extremes, running sums and selection (the 64-bit kernels, chunked as each profile plans)."""
    rng = np.random.default_rng(13)
    tiny = _special_floats(4096, seed=3)
    tiny = tiny[np.isfinite(tiny)][:3000].reshape(3, 1000)
    wide = (rng.standard_normal((2, 10000)) * 100).astype(np.float32)
    near_one = (1 + rng.standard_normal((2, 3000)) * 0.01).astype(np.float32)
    integers = rng.integers(-2**63, 2**63, (3, 10000), dtype=np.int64)
    for function in dml.ReduceFunction:
        for x in (tiny, wide, near_one.astype(np.float16)):
            np.testing.assert_array_equal(_bits(dml.reduce(x, function, 1, device=profiled)),
                                          _bits(dml.reduce(x, function, 1, device=device)), err_msg=function.name)
    for call in (lambda d: dml.argmax(np.round(wide / 50), axis=1, device=d),
                 lambda d: dml.cumsum(tiny, axis=1, device=d), lambda d: dml.cumprod(near_one, axis=1, device=d),
                 lambda d: dml.top_k(wide, 7, device=d)[0], lambda d: dml.sum(dml.asarray(wide, device=d), 0).numpy(),
                 lambda d: dml.sum(integers, axis=1, device=d), lambda d: dml.argmin(integers, axis=1, device=d),
                 lambda d: dml.cumprod(integers, axis=1, device=d), lambda d: dml.top_k(integers, 3, device=d)[1]):
        np.testing.assert_array_equal(_bits(call(profiled)), _bits(call(device)))


def test_conversions_give_the_same_bits_under_every_profile(device, profiled):
    """CAST to and from FLOAT64 and INT64 arithmetic (integer arithmetic alone) and the
    mixed-width path (casts, comparisons, IF over subnormals): no profile's float controls
    reach them."""
    x = _special_floats(4096, seed=11)
    ints = (x.view(np.uint32).astype(np.int64) << 24) - (1 << 54)
    wide = x.astype(np.float64) * np.float64(2.0**-20)  # below FP32's subnormals too
    condition = (np.arange(x.size) % 3 == 0).astype(np.uint8)
    with np.errstate(over="ignore"):
        halves = x.astype(np.float16)
    for call in (lambda d: dml.cast(wide, np.float32, device=d), lambda d: dml.cast(wide, np.float16, device=d),
                 lambda d: dml.cast(x, np.float64, device=d), lambda d: dml.cast(wide, np.int64, device=d),
                 lambda d: dml.cast(x, np.float16, device=d), lambda d: dml.less(x, x[::-1].copy(), device=d),
                 lambda d: dml.where(condition, halves, halves[::-1].copy(), device=d),
                 lambda d: dml.multiply(ints, ints[::-1].copy(), device=d),
                 lambda d: dml.divide(ints, ints[::-1] >> 20, device=d),
                 lambda d: dml.clip(ints, -2.5e-40, 3.0e15, device=d)):
        np.testing.assert_array_equal(_bits(call(profiled)), _bits(call(device)))


def test_layouts_and_fusion_are_exact_under_every_profile(profiled):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((64, 48)) * 4).astype(np.float32)
    dy = rng.standard_normal((48, 64)).astype(np.float32).T  # a transposed operand: the strided path
    expected = np.where(x > 0, dy, np.float32(0))
    np.testing.assert_array_equal(dml.relu_grad(x, dy, device=profiled), expected)
    chained = dml.relu(dml.linear(dml.asarray(x, device=profiled), 0.5, -1.0))  # a fused chain
    np.testing.assert_array_equal(chained.numpy(), np.maximum(x * np.float32(0.5) - np.float32(1.0), 0))


def test_a_binding_offset_unaligned_for_the_device_is_exact():
    """16 bytes is legal in DirectML; the Mali profile's minStorageBufferOffsetAlignment is 256.
    dmlpy binds whole buffer segments (always at offset 0) and starts each tensor at its element
    offset inside the shader, so no descriptor ever carries the unaligned offset."""
    with dml.create_device(profile="arm-mali-g710") as device:
        alignment = device.adapter.min_storage_buffer_offset_alignment
        assert alignment == 256
        desc = dml.BufferTensorDesc(T.FLOAT32, (3, 7))
        compiled = device.compile_operator(device.create_operator(dml.ActivationReluGradOperatorDesc(desc, desc, desc)))
        rng = np.random.default_rng(1)
        x, dy = (rng.standard_normal(21).astype(np.float32) for _ in range(2))
        buffer = device.create_buffer(1024)
        buffer.write(np.full(1024, 0xA5, np.uint8))
        offsets = (16, 112, 336)  # none a multiple of 256
        assert all(o % 16 == 0 and o % alignment for o in offsets)
        buffer.write(x, offset=offsets[0])
        buffer.write(dy, offset=offsets[1])
        table = device.create_binding_table(compiled, inputs=[dml.BufferBinding(buffer, offsets[0], 84),
                                                              dml.BufferBinding(buffer, offsets[1], 84)],
                                            outputs=[dml.BufferBinding(buffer, offsets[2], 84)])
        device.execute(table)
        np.testing.assert_array_equal(buffer.read(np.float32, 21, offset=offsets[2]), np.where(x > 0, dy, 0))
        untouched = buffer.read(np.uint8, 1024)
        assert (untouched[offsets[2] + 84:] == 0xA5).all() and (untouched[offsets[1] + 84:offsets[2]] == 0xA5).all()
