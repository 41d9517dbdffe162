"""Vulkan adapters and their limits, read from the loader with ctypes.

Kompute reports neither the device type nor limits such as maxStorageBufferRange, and
dmlpy must choose an adapter and respect its limits before creating anything on it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import operator
import os
from dataclasses import dataclass

from ..base.adapter import AdapterInfo, AdapterType
from ..base.errors import InstallationError, InvalidArgumentError, UnsupportedError, shown

VK_SUCCESS = 0
VK_STRUCTURE_TYPE_APPLICATION_INFO = 0
VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES = 1000094000
VK_SHADER_STAGE_COMPUTE_BIT = 0x20
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES = 1000168000
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES = 1000071004
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES = 1000196000
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES = 1000197000
VK_MEMORY_HEAP_DEVICE_LOCAL_BIT = 1
VK_API_VERSION_1_1 = (1 << 22) | (1 << 12)


u32, i32, f32, u64, size_t = ctypes.c_uint32, ctypes.c_int32, ctypes.c_float, ctypes.c_uint64, ctypes.c_size_t

# VkPhysicalDeviceLimits, field for field (vulkan_core.h).
_LIMITS = [
    ("maxImageDimension1D", u32), ("maxImageDimension2D", u32), ("maxImageDimension3D", u32),
    ("maxImageDimensionCube", u32), ("maxImageArrayLayers", u32), ("maxTexelBufferElements", u32),
    ("maxUniformBufferRange", u32), ("maxStorageBufferRange", u32), ("maxPushConstantsSize", u32),
    ("maxMemoryAllocationCount", u32), ("maxSamplerAllocationCount", u32),
    ("bufferImageGranularity", u64), ("sparseAddressSpaceSize", u64), ("maxBoundDescriptorSets", u32),
    ("maxPerStageDescriptorSamplers", u32), ("maxPerStageDescriptorUniformBuffers", u32),
    ("maxPerStageDescriptorStorageBuffers", u32), ("maxPerStageDescriptorSampledImages", u32),
    ("maxPerStageDescriptorStorageImages", u32), ("maxPerStageDescriptorInputAttachments", u32),
    ("maxPerStageResources", u32), ("maxDescriptorSetSamplers", u32),
    ("maxDescriptorSetUniformBuffers", u32), ("maxDescriptorSetUniformBuffersDynamic", u32),
    ("maxDescriptorSetStorageBuffers", u32), ("maxDescriptorSetStorageBuffersDynamic", u32),
    ("maxDescriptorSetSampledImages", u32), ("maxDescriptorSetStorageImages", u32),
    ("maxDescriptorSetInputAttachments", u32), ("maxVertexInputAttributes", u32),
    ("maxVertexInputBindings", u32), ("maxVertexInputAttributeOffset", u32),
    ("maxVertexInputBindingStride", u32), ("maxVertexOutputComponents", u32),
    ("maxTessellationGenerationLevel", u32), ("maxTessellationPatchSize", u32),
    ("maxTessellationControlPerVertexInputComponents", u32),
    ("maxTessellationControlPerVertexOutputComponents", u32),
    ("maxTessellationControlPerPatchOutputComponents", u32),
    ("maxTessellationControlTotalOutputComponents", u32),
    ("maxTessellationEvaluationInputComponents", u32), ("maxTessellationEvaluationOutputComponents", u32),
    ("maxGeometryShaderInvocations", u32), ("maxGeometryInputComponents", u32),
    ("maxGeometryOutputComponents", u32), ("maxGeometryOutputVertices", u32),
    ("maxGeometryTotalOutputComponents", u32), ("maxFragmentInputComponents", u32),
    ("maxFragmentOutputAttachments", u32), ("maxFragmentDualSrcAttachments", u32),
    ("maxFragmentCombinedOutputResources", u32), ("maxComputeSharedMemorySize", u32),
    ("maxComputeWorkGroupCount", u32 * 3), ("maxComputeWorkGroupInvocations", u32),
    ("maxComputeWorkGroupSize", u32 * 3), ("subPixelPrecisionBits", u32), ("subTexelPrecisionBits", u32),
    ("mipmapPrecisionBits", u32), ("maxDrawIndexedIndexValue", u32), ("maxDrawIndirectCount", u32),
    ("maxSamplerLodBias", f32), ("maxSamplerAnisotropy", f32), ("maxViewports", u32),
    ("maxViewportDimensions", u32 * 2), ("viewportBoundsRange", f32 * 2), ("viewportSubPixelBits", u32),
    ("minMemoryMapAlignment", size_t), ("minTexelBufferOffsetAlignment", u64),
    ("minUniformBufferOffsetAlignment", u64), ("minStorageBufferOffsetAlignment", u64),
    ("minTexelOffset", i32), ("maxTexelOffset", u32), ("minTexelGatherOffset", i32),
    ("maxTexelGatherOffset", u32), ("minInterpolationOffset", f32), ("maxInterpolationOffset", f32),
    ("subPixelInterpolationOffsetBits", u32), ("maxFramebufferWidth", u32), ("maxFramebufferHeight", u32),
    ("maxFramebufferLayers", u32), ("framebufferColorSampleCounts", u32),
    ("framebufferDepthSampleCounts", u32), ("framebufferStencilSampleCounts", u32),
    ("framebufferNoAttachmentsSampleCounts", u32), ("maxColorAttachments", u32),
    ("sampledImageColorSampleCounts", u32), ("sampledImageIntegerSampleCounts", u32),
    ("sampledImageDepthSampleCounts", u32), ("sampledImageStencilSampleCounts", u32),
    ("storageImageSampleCounts", u32), ("maxSampleMaskWords", u32), ("timestampComputeAndGraphics", u32),
    ("timestampPeriod", f32), ("maxClipDistances", u32), ("maxCullDistances", u32),
    ("maxCombinedClipAndCullDistances", u32), ("discreteQueuePriorities", u32),
    ("pointSizeRange", f32 * 2), ("lineWidthRange", f32 * 2), ("pointSizeGranularity", f32),
    ("lineWidthGranularity", f32), ("strictLines", u32), ("standardSampleLocations", u32),
    ("optimalBufferCopyOffsetAlignment", u64), ("optimalBufferCopyRowPitchAlignment", u64),
    ("nonCoherentAtomSize", u64),
]


class _Limits(ctypes.Structure):
    _fields_ = _LIMITS


class _Properties(ctypes.Structure):
    _fields_ = [("apiVersion", u32), ("driverVersion", u32), ("vendorID", u32), ("deviceID", u32),
                ("deviceType", u32), ("deviceName", ctypes.c_char * 256), ("pipelineCacheUUID", ctypes.c_ubyte * 16),
                ("limits", _Limits), ("sparseProperties", u32 * 5)]


class _SubgroupProperties(ctypes.Structure):
    _fields_ = [("sType", u32), ("pNext", ctypes.c_void_p), ("subgroupSize", u32),
                ("supportedStages", u32), ("supportedOperations", u32), ("quadOperationsInAllStages", u32)]


# VkPhysicalDeviceFeatures: 55 VkBool32s, shaderInt64 the 41st.
VK_PHYSICAL_DEVICE_FEATURE_COUNT = 55
SHADER_INT64_FEATURE = 40


class _Maintenance3Properties(ctypes.Structure):
    _fields_ = [("sType", u32), ("pNext", ctypes.c_void_p), ("maxPerSetDescriptors", u32),
                ("maxMemoryAllocationSize", u64)]


class _IdProperties(ctypes.Structure):
    _fields_ = [("sType", u32), ("pNext", ctypes.c_void_p), ("deviceUUID", ctypes.c_ubyte * 16),
                ("driverUUID", ctypes.c_ubyte * 16), ("deviceLUID", ctypes.c_ubyte * 8), ("deviceNodeMask", u32),
                ("deviceLUIDValid", u32)]


class _DriverProperties(ctypes.Structure):
    _fields_ = [("sType", u32), ("pNext", ctypes.c_void_p), ("driverID", u32), ("driverName", ctypes.c_char * 256),
                ("driverInfo", ctypes.c_char * 256), ("conformanceVersion", ctypes.c_ubyte * 4)]


class _FloatControlsProperties(ctypes.Structure):
    _fields_ = [("sType", u32), ("pNext", ctypes.c_void_p), ("denormBehaviorIndependence", u32),
                ("roundingModeIndependence", u32)] + [
        (f"{name}Float{bits}", u32)
        for name in ("shaderSignedZeroInfNanPreserve", "shaderDenormPreserve", "shaderDenormFlushToZero",
                     "shaderRoundingModeRTE", "shaderRoundingModeRTZ")
        for bits in (16, 32, 64)]


class _MemoryHeap(ctypes.Structure):
    _fields_ = [("size", u64), ("flags", u32)]


class _MemoryProperties(ctypes.Structure):
    _fields_ = [("memoryTypeCount", u32), ("memoryTypes", u32 * 64), ("memoryHeapCount", u32),
                ("memoryHeaps", _MemoryHeap * 16), ("_spare", ctypes.c_ubyte * 256)]


class _Properties2(ctypes.Structure):
    # Room to spare after the struct: a driver never writes past what the header declares,
    # but a mistake in this transcription must not become a heap overwrite.
    _fields_ = [("sType", u32), ("pNext", ctypes.c_void_p), ("properties", _Properties),
                ("_spare", ctypes.c_ubyte * 1024)]


class _ApplicationInfo(ctypes.Structure):
    _fields_ = [("sType", u32), ("pNext", ctypes.c_void_p), ("pApplicationName", ctypes.c_char_p),
                ("applicationVersion", u32), ("pEngineName", ctypes.c_char_p), ("engineVersion", u32),
                ("apiVersion", u32)]


class _InstanceCreateInfo(ctypes.Structure):
    _fields_ = [("sType", u32), ("pNext", ctypes.c_void_p), ("flags", u32),
                ("pApplicationInfo", ctypes.POINTER(_ApplicationInfo)), ("enabledLayerCount", u32),
                ("ppEnabledLayerNames", ctypes.c_void_p), ("enabledExtensionCount", u32),
                ("ppEnabledExtensionNames", ctypes.c_void_p)]


VK_ERROR_INCOMPATIBLE_DRIVER = -9  # what vkCreateInstance returns when the loader finds no driver
NO_DRIVER_HINT = ("install a Vulkan driver: Mesa's CPU driver lavapipe (Debian: apt-get install mesa-vulkan-drivers) "
                  "or your GPU vendor's driver; check with `vulkaninfo --summary` (package vulkan-tools) or "
                  "`python -c 'import dmlpy; print(dmlpy.list_adapters())'`")


def _load_vulkan():
    name = ctypes.util.find_library("vulkan") or "libvulkan.so.1"
    try:
        return ctypes.CDLL(name)
    except OSError:
        raise InstallationError("the Vulkan loader (libvulkan.so.1) is not installed (Debian: apt-get install "
                                f"libvulkan1), and a driver is needed too: {NO_DRIVER_HINT}") from None


@dataclass(frozen=True)
class LoadedDrivers:
    """The adapters the loader reported and the process that loaded their drivers to ask: a
    forked child inherits this record (and no Vulkan call is made again to list them)."""

    pid: int
    adapters: tuple[AdapterInfo, ...]


def list_adapters() -> tuple[AdapterInfo, ...]:
    """Every Vulkan adapter the loader sees, read once per process (a forked child keeps its
    parent's list); InstallationError when there is no loader or no driver."""
    return _loaded_drivers().adapters


def check_drivers_usable_here() -> None:
    """Refuse, before any Vulkan call, to load again in a forked child a driver that its
    parent loaded and that does not survive fork(): NVIDIA's aborts the whole child."""
    loaded = _loaded_drivers()
    if loaded.pid == os.getpid():
        return
    unsafe = sorted({adapter.driver or adapter.name for adapter in loaded.adapters if not adapter.survives_fork})
    if unsafe:
        raise UnsupportedError(
            f"this process was forked from process {loaded.pid}, which had loaded the Vulkan driver "
            f"{', '.join(map(repr, unsafe))}; that driver cannot be loaded again in a forked child (NVIDIA's aborts "
            "the process), so no device can open here: open devices in processes started with multiprocessing's "
            "'spawn' or 'forkserver' method, or fork before the parent opens a device")


@functools.cache
def _loaded_drivers() -> LoadedDrivers:
    vk = _load_vulkan()
    app = _ApplicationInfo(VK_STRUCTURE_TYPE_APPLICATION_INFO, None, b"dmlpy", 1, b"dmlpy", 1, VK_API_VERSION_1_1)
    create_info = _InstanceCreateInfo(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, None, 0, ctypes.pointer(app),
                                      0, None, 0, None)
    instance = ctypes.c_void_p()
    result = vk.vkCreateInstance(ctypes.byref(create_info), None, ctypes.byref(instance))
    if result == VK_ERROR_INCOMPATIBLE_DRIVER:
        raise InstallationError(f"the Vulkan loader found no driver (ICD) (vkCreateInstance: VkResult {result}): "
                                f"{NO_DRIVER_HINT}")
    if result != VK_SUCCESS:
        raise InstallationError(f"vkCreateInstance failed with VkResult {result}: no usable Vulkan driver; "
                                f"{NO_DRIVER_HINT}")
    try:
        count = u32(0)
        vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None)
        handles = (ctypes.c_void_p * count.value)()
        vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), handles)
        get_properties2 = vk.vkGetPhysicalDeviceProperties2
        adapters = []
        for index, handle in enumerate(handles[: count.value]):
            # Structs a driver does not know are skipped in the chain; ours stay zeroed then.
            float_controls = _FloatControlsProperties(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES, None)
            driver = _DriverProperties(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
                                       ctypes.cast(ctypes.pointer(float_controls), ctypes.c_void_p))
            ids = _IdProperties(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
                                ctypes.cast(ctypes.pointer(driver), ctypes.c_void_p))
            maintenance3 = _Maintenance3Properties(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
                                                   ctypes.cast(ctypes.pointer(ids), ctypes.c_void_p))
            subgroup = _SubgroupProperties(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                           ctypes.cast(ctypes.pointer(maintenance3), ctypes.c_void_p))
            properties2 = _Properties2(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                       ctypes.cast(ctypes.pointer(subgroup), ctypes.c_void_p))
            get_properties2(ctypes.c_void_p(handle), ctypes.byref(properties2))
            memory = _MemoryProperties()
            vk.vkGetPhysicalDeviceMemoryProperties(ctypes.c_void_p(handle), ctypes.byref(memory))
            features = (u32 * VK_PHYSICAL_DEVICE_FEATURE_COUNT)()
            vk.vkGetPhysicalDeviceFeatures(ctypes.c_void_p(handle), features)
            heaps = memory.memoryHeaps[: min(memory.memoryHeapCount, 16)]
            device_local = [h.size for h in heaps if h.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT]
            device_local = device_local or [h.size for h in heaps]
            p, limits = properties2.properties, properties2.properties.limits
            adapters.append(AdapterInfo(
                index=index,
                name=p.deviceName.decode(errors="replace"),
                adapter_type=AdapterType(p.deviceType) if p.deviceType <= 4 else AdapterType.OTHER,
                api_version=f"{p.apiVersion >> 22}.{(p.apiVersion >> 12) & 0x3FF}.{p.apiVersion & 0xFFF}",
                vendor_id=p.vendorID,
                max_storage_buffer_range=limits.maxStorageBufferRange,
                max_compute_work_group_count=tuple(limits.maxComputeWorkGroupCount),
                max_compute_work_group_invocations=limits.maxComputeWorkGroupInvocations,
                max_compute_work_group_size=tuple(limits.maxComputeWorkGroupSize),
                max_push_constants_size=limits.maxPushConstantsSize,
                min_storage_buffer_offset_alignment=limits.minStorageBufferOffsetAlignment,
                timestamp_period_ns=limits.timestampPeriod,
                subgroup_size=subgroup.subgroupSize,
                subgroup_operations=subgroup.supportedOperations
                if subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT else 0,
                shader_int64=bool(features[SHADER_INT64_FEATURE]),
                max_memory_allocation_size=maintenance3.maxMemoryAllocationSize or 2**31,
                device_local_heap_size=max(device_local, default=0),
                max_compute_shared_memory_size=limits.maxComputeSharedMemorySize,
                max_per_stage_descriptor_storage_buffers=limits.maxPerStageDescriptorStorageBuffers,
                device_uuid=bytes(ids.deviceUUID).hex(),
                driver=" ".join(part for part in (driver.driverName.decode(errors="replace"),
                                                  driver.driverInfo.decode(errors="replace")) if part),
                denorm_preserve_float32=bool(float_controls.shaderDenormPreserveFloat32),
                signed_zero_inf_nan_preserve_float32=bool(float_controls.shaderSignedZeroInfNanPreserveFloat32),
            ))
        return LoadedDrivers(os.getpid(), tuple(adapters))
    finally:
        vk.vkDestroyInstance(instance, None)


def default_adapter(adapters: tuple[AdapterInfo, ...]) -> AdapterInfo:
    """The first discrete or integrated GPU, else the first CPU device, else the first adapter."""
    for wanted in ((AdapterType.DISCRETE_GPU, AdapterType.INTEGRATED_GPU), (AdapterType.CPU,)):
        for adapter in adapters:
            if adapter.adapter_type in wanted:
                return adapter
    return adapters[0]


def find_adapter(adapters: tuple[AdapterInfo, ...], wanted, what: str) -> AdapterInfo:
    """The adapter `wanted` names: an index, a device UUID or a piece of one adapter's name."""
    listing = "; ".join(f"{a.index}: {a.name} (UUID {a.device_uuid})" for a in adapters)
    if isinstance(wanted, bool) or not isinstance(wanted, int | str) and not hasattr(wanted, "__index__"):
        raise InvalidArgumentError(f"{what} {shown(wanted)} must be an adapter index, name or UUID; the adapters are "
                                   f"{listing}")
    text = wanted.strip() if isinstance(wanted, str) else ""
    if not isinstance(wanted, str):
        try:
            index = operator.index(wanted)
        except TypeError:  # an __index__ that returns no int
            index = -1
    elif text.isascii() and text.isdigit():
        # ASCII only: str.isdigit() also accepts "²", which int() refuses. No adapter index has
        # more than 10 digits, and int() refuses strings past 4,300.
        index = int(text) if len(text) <= 10 else -1
    else:
        index = None  # a name or a UUID
    if index is not None:
        if not 0 <= index < len(adapters):
            raise InvalidArgumentError(f"{what} {shown(wanted)} is not an adapter index; the adapters are {listing}")
        return adapters[index]
    key = text.lower()
    by_uuid = [a for a in adapters if a.device_uuid and a.device_uuid == key.replace("-", "")]
    matches = by_uuid or [a for a in adapters if key and key in a.name.lower()]
    if len(matches) != 1:
        problem = "matches no adapter" if not matches else f"matches {len(matches)} adapters: give an index or UUID"
        raise InvalidArgumentError(f"{what} {shown(wanted)} {problem}; the adapters are {listing}")
    return matches[0]

