"""The device: feature levels, operator creation and compilation, binding, execution."""

from __future__ import annotations

import contextlib
import operator
import os
from collections.abc import Sequence
from dataclasses import dataclass

from .binding import BindingProperties, BindingTable, Buffer
from .codegen import KernelPlan, compile_desc
from .command_list import CommandList
from .errors import DeviceRemovedError, InvalidArgumentError, UnsupportedError
from .guard import Guard
from .kompute import GpuContext
from .schema import OperatorDesc
from .types import DATA_TYPES, RUNTIME_FEATURE_LEVEL, ExecutionFlags, Feature, FeatureLevel, TensorDataType
from .vulkan_info import AdapterInfo, default_adapter, list_adapters


def _as_feature_level(value, what: str) -> FeatureLevel:
    try:
        return FeatureLevel(value)
    except (ValueError, TypeError):
        pass
    if isinstance(value, int) and not isinstance(value, bool) and value > RUNTIME_FEATURE_LEVEL:
        # A level from a newer DirectML: well-formed, but more than this runtime offers.
        raise UnsupportedError(f"{what} 0x{value:X} is above {RUNTIME_FEATURE_LEVEL}, the highest dmlpy offers")
    raise InvalidArgumentError(f"{what} {value!r} is not a FeatureLevel (LEVEL_1_0 .. LEVEL_6_4)")


@dataclass(frozen=True)
class FeatureDataTensorDataTypeSupport:
    is_supported: bool


@dataclass(frozen=True)
class FeatureDataFeatureLevels:
    max_supported_feature_level: FeatureLevel | None


class Operator:
    """IDMLOperator: a validated desc, accepted by this device's feature level."""

    def __init__(self, device: Device, desc: OperatorDesc):
        self.device = device
        self.desc = desc


@dataclass(frozen=True)
class CompiledOperator:
    """IDMLCompiledOperator: the desc's shader compiled for this device."""

    device: Device
    desc: OperatorDesc
    flags: ExecutionFlags
    plan: KernelPlan
    sources: tuple[str, ...]  # the exact GLSL compiled for each stage
    spirv: tuple[bytes, ...]
    cache_hit: bool  # True when every stage's SPIR-V came from the on-disk cache

    @property
    def binding_properties(self) -> BindingProperties:
        temporary = self.plan.temporary_size
        return BindingProperties(required_descriptor_count=len(self.desc.schema.tensors) + (1 if temporary else 0),
                                 temporary_resource_size=temporary, persistent_resource_size=0)


class Device:
    """IDMLDevice on one Vulkan adapter. Create it with `create_device`."""

    def __init__(self, adapter: AdapterInfo, feature_level: FeatureLevel, strict_directml: bool,
                 guarded: bool = False):
        self.adapter = adapter
        self.feature_level = feature_level
        self.strict_directml = strict_directml
        self.guarded = guarded
        self._context = GpuContext(adapter.index, adapter.timestamp_period_ns)
        self._closed = False
        # Bytes per buffer segment: the most one binding (and one allocation) can cover, in
        # whole 16-byte units.
        self.segment_size = min(adapter.max_storage_buffer_range, adapter.max_memory_allocation_size) // 16 * 16

    @property
    def adapter_name(self) -> str:
        return self.adapter.name

    @property
    def max_storage_buffer_range(self) -> int:
        return self.adapter.max_storage_buffer_range

    def __repr__(self) -> str:
        return f"<dmlpy.Device {self.adapter_name!r} {self.feature_level}>"

    def _check_open(self) -> None:
        if self._closed:
            raise DeviceRemovedError("the device was closed")

    def _check_owned(self, obj, kind: type, what: str) -> None:
        if not isinstance(obj, kind):
            article = "an" if kind.__name__[0] in "AEIOU" else "a"
            raise InvalidArgumentError(f"{what} must be {article} {kind.__name__}, not {type(obj).__name__}")
        if obj.device is not self:
            raise InvalidArgumentError(f"{what} belongs to another device")

    def check_feature_support(self, feature: Feature, query):
        """DirectML's CheckFeatureSupport for TENSOR_DATA_TYPE_SUPPORT and FEATURE_LEVELS."""
        self._check_open()
        if feature == Feature.TENSOR_DATA_TYPE_SUPPORT:
            try:
                data_type = TensorDataType(query)
            except (ValueError, TypeError):
                raise InvalidArgumentError(f"query {query!r} is not a TensorDataType") from None
            info = DATA_TYPES.get(data_type)
            return FeatureDataTensorDataTypeSupport(
                info is not None and info.device_supported and info.introduced <= self.feature_level
                and not (info.extension and self.strict_directml))
        if feature == Feature.FEATURE_LEVELS:
            if not isinstance(query, Sequence) or not query:
                raise InvalidArgumentError("query must be a non-empty list of FeatureLevels")
            levels = [_as_feature_level(level, "query item") for level in query]
            supported = [level for level in levels if level <= self.feature_level]
            return FeatureDataFeatureLevels(max(supported) if supported else None)
        raise InvalidArgumentError(f"feature {feature!r} is not a Feature this device answers")

    def create_operator(self, desc: OperatorDesc) -> Operator:
        self._check_open()
        if not isinstance(desc, OperatorDesc):
            raise InvalidArgumentError(f"desc must be an operator desc, not {type(desc).__name__}")
        desc.schema.validate(desc)
        desc.schema.check_device(desc, self.feature_level, self.strict_directml)
        return Operator(self, desc)

    def compile_operator(self, op: Operator, flags: ExecutionFlags = ExecutionFlags.NONE) -> CompiledOperator:
        """Specialise the operator's shader for its descs and this device, and compile it.

        The flags are accepted and recorded; none changes the result of these operators.
        """
        self._check_open()
        self._check_owned(op, Operator, "op")
        try:
            flags = ExecutionFlags(flags)
        except (ValueError, TypeError):
            raise InvalidArgumentError(f"flags {flags!r} is not a combination of ExecutionFlags") from None
        if int(flags) & ~int(ExecutionFlags.ALLOW_HALF_PRECISION_COMPUTATION | ExecutionFlags.DISABLE_META_COMMANDS
                             | ExecutionFlags.DESCRIPTORS_VOLATILE):
            raise InvalidArgumentError(f"flags 0x{int(flags):X} has bits that are not ExecutionFlags")
        plan, shaders = compile_desc(op.desc, self.adapter)
        return CompiledOperator(self, op.desc, flags, plan, tuple(s.source for s in shaders),
                                tuple(s.spirv for s in shaders), all(s.cache_hit for s in shaders))

    def create_buffer(self, size_in_bytes: int) -> Buffer:
        self._check_open()
        return Buffer(self, size_in_bytes)

    def create_binding_table(self, compiled: CompiledOperator, inputs, outputs,
                             temporary=None, persistent=None) -> BindingTable:
        """Bind buffers to the compiled operator's tensors; every binding rule is checked here."""
        self._check_open()
        self._check_owned(compiled, CompiledOperator, "compiled")
        return BindingTable(self, compiled, inputs, outputs, temporary, persistent)

    def create_command_list(self) -> CommandList:
        """A list of dispatches recorded once and replayed by `execute` (see command_list.py)."""
        self._check_open()
        return CommandList(self)

    def execute(self, work: BindingTable | CommandList) -> None:
        """Run a bound operator, or replay a command list, and wait for it to finish."""
        self._check_open()
        if isinstance(work, CommandList):
            self._check_owned(work, CommandList, "command list")
            work._run()
            return
        self._check_owned(work, BindingTable, "table")
        work._check_usable()
        with Guard(work) if self.guarded else contextlib.nullcontext():
            # Each stage is its own submission: kp records no barrier between dependent
            # dispatches, and waiting on one submission before the next orders them.
            for dispatch in work._dispatches:
                self._context.run(dispatch)

    def close(self) -> None:
        """Release the Vulkan device; every object made from it becomes unusable."""
        if not self._closed:
            self._closed = True
            self._context.close()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def create_device(min_feature_level: FeatureLevel | None = None, max_feature_level: FeatureLevel | None = None,
                  adapter: int | None = None, strict_directml: bool = False, guarded: bool = False) -> Device:
    """Open a device on a Vulkan adapter.

    adapter: index into `list_adapters()`; default `DMLPY_ADAPTER`, else the first discrete
    or integrated GPU, else the CPU device. min_feature_level: fail with UnsupportedError
    unless the device offers at least this level. max_feature_level: cap the device, to
    check a program against an older DirectML. strict_directml: accept only what DirectML
    itself accepts (no dmlpy extensions). guarded: a test mode that reads back every bound
    buffer around each dispatch and raises GuardViolationError if a byte outside the
    outputs' elements changed (see guard.py); slow.
    """
    ceiling = RUNTIME_FEATURE_LEVEL
    if max_feature_level is not None:
        ceiling = min(ceiling, _as_feature_level(max_feature_level, "max_feature_level"))
    if min_feature_level is not None:
        floor = _as_feature_level(min_feature_level, "min_feature_level")
        if floor > ceiling:
            raise UnsupportedError(f"min_feature_level {floor} is above the device's cap, max_feature_level {ceiling}")
    for name, flag in (("strict_directml", strict_directml), ("guarded", guarded)):
        if not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name} {flag!r} must be a bool")
    adapters = list_adapters()
    if not adapters:
        raise UnsupportedError("no Vulkan adapter was found: install mesa-vulkan-drivers for the CPU device")
    if adapter is None and os.environ.get("DMLPY_ADAPTER"):
        adapter = os.environ["DMLPY_ADAPTER"]
        what = "DMLPY_ADAPTER"
    else:
        what = "adapter"
    if adapter is None:
        chosen = default_adapter(adapters)
    else:
        try:
            index = int(adapter) if isinstance(adapter, str) else operator.index(adapter)
        except (TypeError, ValueError):
            index = -1
        if isinstance(adapter, bool) or not 0 <= index < len(adapters):
            names = ", ".join(f"{a.index}: {a.name}" for a in adapters)
            raise InvalidArgumentError(f"{what} {adapter!r} is not an adapter index; the adapters are {names}")
        chosen = adapters[index]
    return Device(chosen, ceiling, strict_directml, guarded)
