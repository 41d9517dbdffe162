"""Device profiles: plan as if the device were another GPU.

A profile (dmlpy/profiles/NAME.json, package data) holds the Vulkan limits and float
controls of one GPU as its driver reports them. `create_device(profile=NAME_OR_PATH)` (or
`DMLPY_DEVICE_PROFILE`) makes dmlpy plan every kernel, binding and dispatch as if the device
had them: each limit is the stricter of the profile's and the real device's, the adapter
type and subgroup size are the profile's, and a profile of a GPU that flushes subnormals
makes the kernels take the exact arithmetic that GPU needs. So lavapipe, in CI, takes the
paths a phone or a data-centre GPU takes, with exact results.

Every profile is checked against PROFILE_SCHEMA when it is loaded: an unknown key, a
missing one, a wrong type or a value outside what Vulkan allows is an InvalidArgumentError
naming the file, the key, the value and the rule.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

from ..base.adapter import AdapterInfo, AdapterType
from ..base.errors import InvalidArgumentError, shown

MAX_PROFILE_BYTES = 64 * 1024
U32_MAX, U64_MAX = 2**32 - 1, 2**64 - 1


def _power_of_two(value) -> bool:
    return value > 0 and value & (value - 1) == 0


@dataclass(frozen=True)
class ProfileField:
    """One key of a profile: the AdapterInfo field it sets, its JSON type, the rule its
    value obeys (with the words an error quotes), and how it meets the real device's value."""

    key: str
    field: str | None  # the AdapterInfo field, None for documentation keys
    json_type: type | tuple[type, ...]
    rule: Callable[[object], bool]
    rule_text: str
    combine: Callable[[object, object], object] | None = None  # (real, profile) -> effective


def _stricter_max(real, profiled):
    return tuple(map(min, real, profiled)) if isinstance(real, tuple) else min(real, profiled)


def _triple(low: tuple[int, int, int]):
    def rule(value) -> bool:
        return (isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value)
                and all(lo <= v <= U32_MAX for v, lo in zip(value, low)))
    return rule


# Vulkan's required minimums (the spec's "Required Limits" table) bound what a profile may say.
PROFILE_SCHEMA: tuple[ProfileField, ...] = (
    ProfileField("name", None, str, lambda v: v.replace("-", "").isalnum() and v == v.lower(),
                 "lower-case letters, digits and '-', the vendor's name first"),
    ProfileField("description", None, str, lambda v: 0 < len(v) <= 200, "1 to 200 characters"),
    ProfileField("source", None, str, lambda v: v.startswith("https://"),
                 "the public source of the values, an https:// address"),
    ProfileField("adapter_type", "adapter_type", str, lambda v: v in AdapterType.__members__,
                 f"one of {', '.join(AdapterType.__members__)}"),
    ProfileField("maxStorageBufferRange", "max_storage_buffer_range", int, lambda v: 2**27 <= v <= U32_MAX,
                 "2^27 to 2^32 - 1", _stricter_max),
    ProfileField("minStorageBufferOffsetAlignment", "min_storage_buffer_offset_alignment", int,
                 lambda v: _power_of_two(v) and v <= 256, "a power of two, at most 256", max),
    ProfileField("maxComputeWorkGroupCount", "max_compute_work_group_count", list, _triple((65535, 65535, 65535)),
                 "three integers, each 65535 to 2^32 - 1", _stricter_max),
    ProfileField("maxComputeWorkGroupSize", "max_compute_work_group_size", list, _triple((128, 128, 64)),
                 "three integers, at least 128, 128 and 64", _stricter_max),
    ProfileField("maxComputeWorkGroupInvocations", "max_compute_work_group_invocations", int,
                 lambda v: 128 <= v <= U32_MAX, "128 to 2^32 - 1", _stricter_max),
    ProfileField("maxComputeSharedMemorySize", "max_compute_shared_memory_size", int,
                 lambda v: 16384 <= v <= U32_MAX, "16384 to 2^32 - 1", _stricter_max),
    ProfileField("maxPushConstantsSize", "max_push_constants_size", int, lambda v: 128 <= v <= U32_MAX,
                 "128 to 2^32 - 1", _stricter_max),
    ProfileField("maxPerStageDescriptorStorageBuffers", "max_per_stage_descriptor_storage_buffers", int,
                 lambda v: 4 <= v <= U32_MAX, "4 to 2^32 - 1", _stricter_max),
    ProfileField("maxMemoryAllocationSize", "max_memory_allocation_size", int, lambda v: 2**30 <= v <= U64_MAX,
                 "2^30 to 2^64 - 1", _stricter_max),
    ProfileField("subgroupSize", "subgroup_size", int, lambda v: _power_of_two(v) and v <= 128,
                 "a power of two, 1 to 128"),
    ProfileField("shaderDenormPreserveFloat32", "denorm_preserve_float32", bool, lambda v: True, "true or false",
                 lambda real, profiled: real and profiled),
    ProfileField("shaderSignedZeroInfNanPreserveFloat32", "signed_zero_inf_nan_preserve_float32", bool,
                 lambda v: True, "true or false", lambda real, profiled: real and profiled),
    ProfileField("denormals", "denormals", str, lambda v: v in ("preserve", "flush"),
                 '"preserve" or "flush": what the GPU does with FP32 subnormals when a shader asks nothing'),
)


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    description: str
    source: str
    values: dict  # AdapterInfo field -> the profile's value

    def apply(self, adapter: AdapterInfo) -> AdapterInfo:
        """`adapter` as dmlpy plans for it under this profile."""
        changes = {}
        for spec in PROFILE_SCHEMA:
            if spec.field is None:
                continue
            profiled = self.values[spec.field]
            changes[spec.field] = spec.combine(getattr(adapter, spec.field), profiled) if spec.combine else profiled
        if adapter.denormals == "flush":  # a profile never makes a device keep what it flushes
            changes["denormals"] = "flush"
        return dataclasses.replace(adapter, profile=self.name, **changes)


def _profile_files() -> dict[str, object]:
    folder = resources.files("dmlpy") / "profiles"
    return {entry.name[:-5]: entry for entry in folder.iterdir() if entry.name.endswith(".json")}


def list_device_profiles() -> tuple[str, ...]:
    """The names of the device profiles dmlpy ships, sorted."""
    return tuple(sorted(_profile_files()))


def parse_profile(text: str, where: str) -> DeviceProfile:
    """A profile from its JSON text, checked against PROFILE_SCHEMA; `where` names it in errors."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise InvalidArgumentError(f"device profile {where}: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise InvalidArgumentError(f"device profile {where}: must be a JSON object, not {type(data).__name__}")
    known = {spec.key for spec in PROFILE_SCHEMA}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InvalidArgumentError(f"device profile {where}: unknown key {unknown[0]!r}; the keys are {sorted(known)}")
    values = {}
    for spec in PROFILE_SCHEMA:
        if spec.key not in data:
            raise InvalidArgumentError(f"device profile {where}: {spec.key} is missing ({spec.rule_text})")
        value = data[spec.key]
        type_ok = isinstance(value, spec.json_type) and (spec.json_type is bool or not isinstance(value, bool))
        if not type_ok or not spec.rule(value):
            raise InvalidArgumentError(f"device profile {where}: {spec.key} {value!r} is invalid: {spec.rule_text}")
        if spec.field is not None:
            values[spec.field] = (AdapterType[value] if spec.field == "adapter_type"
                                  else tuple(value) if isinstance(value, list) else value)
    return DeviceProfile(data["name"], data["description"], data["source"], values)


def load_profile(name_or_path, what: str = "profile") -> DeviceProfile:
    """A shipped profile by name, or a profile file by path (str or os.PathLike)."""
    if not isinstance(name_or_path, str | os.PathLike):
        raise InvalidArgumentError(f"{what} must be a profile name or a path, not {type(name_or_path).__name__}")
    shipped = _profile_files()
    if isinstance(name_or_path, str) and name_or_path in shipped:
        profile = parse_profile(shipped[name_or_path].read_text(), name_or_path)
        if profile.name != name_or_path:
            raise InvalidArgumentError(f"device profile {name_or_path}: its name is {profile.name!r}")
        return profile
    try:
        path = os.fspath(name_or_path)
    except Exception as error:  # whatever the object's __fspath__ raises
        raise InvalidArgumentError(f"{what}.__fspath__() failed: {error}") from None
    if not isinstance(path, str):
        raise InvalidArgumentError(f"{what} {shown(name_or_path)} is a path of {type(path).__name__}: give a str path")
    if not (isinstance(name_or_path, os.PathLike) or os.sep in path or path.endswith(".json")):
        raise InvalidArgumentError(f"{what} {shown(path)} is not a device profile; the profiles are "
                                   f"{', '.join(sorted(shipped))} (or give a path to a profile's .json file)")
    text = read_regular_file(path, what, MAX_PROFILE_BYTES, "a device profile")
    return parse_profile(text.decode("utf-8", errors="replace"), path)


FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_regular_file(path: str, what: str, max_bytes: int, content: str) -> bytes:
    """The bytes of a file dmlpy reads on a user's behalf (`content`: what it should hold), at
    most `max_bytes`. Opened without blocking (open() waits forever for a FIFO's writer) and
    read only if it is a regular file (a device such as /dev/zero never ends, a terminal waits
    for input); every failure is an InvalidArgumentError naming `what`."""
    if "\0" in path:
        raise InvalidArgumentError(f"{what} {shown(path)} contains a NUL byte: no file has that name")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise InvalidArgumentError(f"{what} {shown(path)} cannot be read: {error.strerror}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = next((kind for test, kind in FILE_KINDS if test(mode)), f"of file type {stat.S_IFMT(mode):#o}")
            raise InvalidArgumentError(f"{what} {shown(path)} is {kind}: {content} must be a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            text = file.read(max_bytes + 1)
    except OSError as error:
        raise InvalidArgumentError(f"{what} {shown(path)} cannot be read: {error.strerror}") from None
    finally:
        os.close(descriptor)
    if len(text) > max_bytes:
        raise InvalidArgumentError(f"{content} {path}: larger than {max_bytes} bytes")
    return text
