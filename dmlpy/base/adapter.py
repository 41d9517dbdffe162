"""What a plan needs to know of a Vulkan adapter: its type and limits, as read from the loader
(dmlpy/runtime/vulkan_info.py) or stated by a device profile."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class AdapterType(enum.IntEnum):
    """VkPhysicalDeviceType."""

    OTHER = 0
    INTEGRATED_GPU = 1
    DISCRETE_GPU = 2
    VIRTUAL_GPU = 3
    CPU = 4


# VkSubgroupFeatureFlagBits
SUBGROUP_BASIC = 0x1
SUBGROUP_VOTE = 0x2
SUBGROUP_BALLOT = 0x8
SUBGROUP_SHUFFLE = 0x10


@dataclass(frozen=True)
class AdapterInfo:
    """One Vulkan physical device, in the loader's enumeration order (kp's device index)."""

    index: int
    name: str
    adapter_type: AdapterType
    api_version: str
    vendor_id: int
    max_storage_buffer_range: int
    max_compute_work_group_count: tuple[int, int, int]
    max_compute_work_group_invocations: int
    max_compute_work_group_size: tuple[int, int, int]
    max_push_constants_size: int
    min_storage_buffer_offset_alignment: int
    timestamp_period_ns: float
    subgroup_size: int
    max_memory_allocation_size: int
    device_local_heap_size: int  # the largest DEVICE_LOCAL heap
    max_compute_shared_memory_size: int = 16384
    max_per_stage_descriptor_storage_buffers: int = 4
    device_uuid: str = ""  # VkPhysicalDeviceIDProperties.deviceUUID, 32 hex digits
    driver: str = ""  # driverName and driverInfo (Vulkan 1.2), or "" where the driver has none
    # VkPhysicalDeviceFloatControlsProperties, FP32 (Vulkan 1.2 or VK_KHR_shader_float_controls)
    denorm_preserve_float32: bool = False
    signed_zero_inf_nan_preserve_float32: bool = False
    # What the device does with subnormal FP32 operands and results when a shader asks
    # nothing: "unknown" for a real adapter (dmlpy probes it, see Device.denormals);
    # a device profile states it ("preserve" or "flush").
    denormals: str = "unknown"
    profile: str | None = None  # the device profile planned for (dmlpy.list_device_profiles())
    # VkPhysicalDeviceSubgroupProperties.supportedOperations where compute shaders have them
    # (SUBGROUP_* bits), else 0. A device profile keeps the real device's: the shaders it
    # plans run there.
    subgroup_operations: int = 0
    # VkPhysicalDeviceFeatures.shaderInt64, which kp (with dmlpy's patch) enables where the
    # device has it; a device profile keeps the real device's, as for subgroup_operations.
    shader_int64: bool = False

    def has_subgroup_operations(self, bits: int) -> bool:
        return self.subgroup_operations & bits == bits

    @property
    def segment_size(self) -> int:
        """Bytes per buffer segment: the most one binding (and one allocation) can cover, in
        whole 16-byte units (a device starts from this; see windows.py)."""
        return min(self.max_storage_buffer_range, self.max_memory_allocation_size) // 16 * 16

    @property
    def survives_fork(self) -> bool:
        """Whether a forked child may load this driver again once its parent has loaded it.
        Mesa's drivers may (lavapipe, RADV, ANV, turnip and the rest name Mesa in their driver
        info); NVIDIA's aborts the child in vkCreateInstance. A driver that reports no name
        counts as unsafe."""
        return "mesa" in self.driver.lower()
