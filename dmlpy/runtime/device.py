"""The device: feature levels, operator creation and compilation, binding, execution."""

from __future__ import annotations

import atexit
import dataclasses
import functools
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import numpy as np

from ..base.adapter import AdapterInfo, AdapterType
from ..base.errors import DeviceRemovedError, DmlError, InstallationError, InvalidArgumentError, UnsupportedError, shown
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import DATA_TYPES, RUNTIME_FEATURE_LEVEL, ExecutionFlags, Feature, FeatureLevel, TensorDataType
from ..kernels.codegen import CompiledKernel, KernelPlan, KernelTensor
from ..kernels.glsl import shader_source
from ..ops.fusion import plan_graph
from ..ops.graph import GraphDesc
from ..ops.graph_aliasing import graph_aliasing, operator_aliasing
from ..ops.schema import Operator, OperatorDesc, describe, schema_of
from .binding import BindingProperties, BindingTable, Bound, Buffer
from .caches import BufferPool, CacheLimits, LruCache
from .command_list import CommandList
from .device_profiles import load_profile
from .guard import Guard
from .kompute import GpuContext, Launch
from .shader_compiler import CompiledShader, compile_desc, compile_glsl
from .vulkan_info import NO_DRIVER_HINT, default_adapter, find_adapter, list_adapters

LOG = logging.getLogger(__name__)

# How long a synchronous submission on a GPU polls its fence before sleeping on it: work
# shorter than a sleep-and-wake-up (hundreds of microseconds on a virtualised GPU) returns as
# soon as it finishes. A CPU device (lavapipe) never polls: the poll would take a core from
# the threads that run the work.
FENCE_SPIN_NS = 200_000


def _as_feature_level(value, what: str) -> FeatureLevel:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{what} {value!r} is not a FeatureLevel (LEVEL_1_0 .. LEVEL_6_4)")
    value = int(value)
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

    aliasable = operator_aliasing  # (output_index, input_index): an Aliasing, in place where the schema allows

    @functools.cached_property
    def computation(self) -> tuple:
        """What identifies the computation (OperatorSchema.key), computed once: the front
        end's buffers are cached under it."""
        return self.desc.schema.key(self.desc)

    def __repr__(self) -> str:
        stages = f", stages {'+'.join(s.name for s in self.plan.stages)}" if len(self.plan.stages) > 1 else ""
        return f"<dmlpy.CompiledOperator {describe(self.desc)}, path {self.plan.path}{stages}>"

    @property
    def binding_properties(self) -> BindingProperties:
        return _binding_properties(self)

    # What binding tables need of a compiled operator (a CompiledGraph offers the same).
    @property
    def name(self) -> str:
        return self.desc.schema.dml_name

    @property
    def input_tensors(self) -> tuple[tuple[str, BufferTensorDesc], ...]:
        """(DirectML's member name, desc) of each input, in binding order."""
        return tuple((f.dml_name, getattr(self.desc, f.name)) for f in self.desc.schema.inputs)

    @property
    def output_tensors(self) -> tuple[tuple[str, BufferTensorDesc], ...]:
        return tuple((f.dml_name, getattr(self.desc, f.name)) for f in self.desc.schema.outputs)

    @property
    def temporary_size(self) -> int:
        return self.plan.temporary_size

    @property
    def kernels(self) -> tuple[CompiledKernel, ...]:
        schema = self.desc.schema
        present = schema.present(self.desc)  # an optional tensor left out binds nothing
        tensors = [*(KernelTensor("input", k) for k, f in enumerate(schema.inputs) if f in present),
                   *(KernelTensor("output", k) for k, f in enumerate(schema.outputs) if f in present)]
        if self.plan.temporary_size:
            tensors.append(KernelTensor("temporary", size=self.plan.temporary_size))
        return (CompiledKernel(self.plan, self.sources, self.spirv, tuple(tensors)),)


@dataclass(frozen=True)
class CompiledGraph:
    """IDMLCompiledOperator of a graph (IDMLDevice1::CompileGraph): inputs bind in graph-input
    order, outputs in graph-output order; its kernels run one after another, each fusing a
    chain of element-wise nodes (see fusion.py). An output may be bound over an input every
    kernel reading it has read by then, or in place within one (graph_aliasing.py's rule)."""

    device: Device
    graph: GraphDesc
    flags: ExecutionFlags
    kernels: tuple[CompiledKernel, ...]
    temporary_size: int
    cache_hit: bool

    name = "graph"
    aliasable = graph_aliasing  # (output_index, input_index): an Aliasing, from the order its kernels run in

    def __repr__(self) -> str:
        return (f"<dmlpy.CompiledGraph {len(self.graph.nodes)} nodes in {len(self.kernels)} "
                f"kernel{'s' if len(self.kernels) != 1 else ''}>")

    @property
    def input_tensors(self) -> tuple[tuple[str, BufferTensorDesc], ...]:
        return tuple((f"graph input {k}", self.graph.input_desc(k)) for k in range(self.graph.input_count))

    @property
    def output_tensors(self) -> tuple[tuple[str, BufferTensorDesc], ...]:
        edges = [self.graph.output_edge(k) for k in range(self.graph.output_count)]
        return tuple((f"graph output {k}", self.graph.node_output_desc(edge.from_node, edge.from_node_output_index))
                     for k, edge in enumerate(edges))

    @property
    def binding_properties(self) -> BindingProperties:
        return _binding_properties(self)

    @property
    def sources(self) -> tuple[str, ...]:
        """The GLSL of every stage of every kernel, in the order they run."""
        return tuple(source for kernel in self.kernels for source in kernel.sources)


def _binding_properties(compiled) -> BindingProperties:
    temporary = compiled.temporary_size
    count = len(compiled.input_tensors) + len(compiled.output_tensors) + (1 if temporary else 0)
    return BindingProperties(required_descriptor_count=count, temporary_resource_size=temporary,
                             persistent_resource_size=0)


class Execution:
    """What `device.execute` returns: work that is running or has finished."""

    def __init__(self, device: Device, submission: object):
        self.device = device
        self._submission = submission  # None: finished when execute returned

    def __repr__(self) -> str:
        return f"<dmlpy.Execution {'done' if self.done else 'running'}>"

    @property
    def done(self) -> bool:
        """Whether the work has finished (asked of the device without waiting)."""
        return self._submission is None or self.device.context.finished(self._submission, wait=False)

    def wait(self) -> None:
        """Return once the work has finished (at once if it has)."""
        if self._submission is not None:
            self.device.context.finished(self._submission, wait=True)


class Device:
    """IDMLDevice on one Vulkan adapter. Create it with `create_device`.

    The device owns its Vulkan context (and the one lock that guards it), the compiled
    operators its front ends reuse and the front end's buffers: see docs/ownership.md.
    """

    def __init__(self, adapter: AdapterInfo, feature_level: FeatureLevel, strict_directml: bool,
                 guarded: bool = False, cache_limits: CacheLimits | None = None):
        self.adapter = adapter
        self.feature_level = feature_level
        self.strict_directml = strict_directml
        self.guarded = guarded
        self.cache_limits = cache_limits or CacheLimits()
        float_controls = adapter.denorm_preserve_float32 or adapter.signed_zero_inf_nan_preserve_float32
        self.context = GpuContext(adapter.index, adapter.timestamp_period_ns,
                                  ("VK_KHR_shader_float_controls",) if float_controls else (),
                                  spin_ns=0 if adapter.adapter_type == AdapterType.CPU else FENCE_SPIN_NS,
                                  pipeline_limit=self.cache_limits.pipelines)
        self.segment_size = adapter.segment_size  # tests shrink it to exercise windows
        self.compiled_operators: LruCache[CompiledOperator] = LruCache(self.cache_limits.compiled_operators)
        self.shaders: LruCache[CompiledShader] = LruCache(self.cache_limits.shaders)
        # Kept for the NumPy front end (numpy_api.py says what an entry is and how it retires).
        self.front_end_cache: LruCache = LruCache(
            self.cache_limits.front_end_bindings, self.cache_limits.front_end_bytes,
            cost=lambda entry: entry.nbytes, on_evict=lambda entry: entry.retire())
        # Buffers of device arrays nobody references, for the next ones (device_array.py).
        self.free_arrays = BufferPool(self.cache_limits.free_array_bytes, on_evict=lambda buffer: buffer.destroy())
        # Binding tables of front-end calls on device arrays, by compiled operator and buffers.
        self.device_array_tables: LruCache = LruCache(self.cache_limits.device_array_tables)
        self.constant_arrays: LruCache = LruCache(self.cache_limits.constant_arrays)  # Python numbers (arrays.py)
        # Guards the state of every device array of this device: deferred recipes, who reads
        # whom, buffers being computed and written (device_array.py). Taken before the device
        # lock, never after; no finalizer takes it.
        self.array_lock = threading.RLock()
        # A real device's treatment of subnormals is probed, and so is a profile's "preserve":
        # a profile never makes a device keep what it flushes.
        if adapter.denormals != "flush" and not adapter.denorm_preserve_float32:
            try:
                self.adapter = dataclasses.replace(adapter, denormals=self._probe_denormals())
            except BaseException:
                self.context.close()
                raise
        _LIVE_DEVICES.add(self)

    def _probe_denormals(self) -> str:
        """"preserve" if the hardware's FP32 additions and multiplications keep subnormal
        operands and results with no execution mode asking them to, else "flush" (kernels
        then use dmlpy's exact arithmetic; shaders/denormal_probe.comp)."""
        tiny = np.float32(2.0**-126)
        operands = np.array([1.5 * 2.0**-100, 2.0**-30, 3 * 2.0**-149, 5 * 2.0**-149, 1.0,
                             tiny * np.float32(1 + 2.0**-23), tiny, 0.0], dtype=np.float32)
        expected = np.array([1.5 * 2.0**-130, 8 * 2.0**-149, 3 * 2.0**-149, 2.0**-149], dtype=np.float32)
        words = self.context.create_words(12)
        try:
            self.context.write(words, 0, operands.view(np.uint32))
            spirv = self._compile_glsl(shader_source("denormal_probe.comp", {})).spirv
            dispatch = self.context.create_dispatch(spirv, [Launch([words], (1, 1, 1), np.zeros(0, np.uint32))])
            self.context.run(dispatch)
            results = self.context.read(words, 32, 16).view(np.uint32)
        finally:
            self.context.destroy_words(words)
        return "preserve" if np.array_equal(results, expected.view(np.uint32)) else "flush"

    @property
    def adapter_name(self) -> str:
        return self.adapter.name

    @property
    def max_storage_buffer_range(self) -> int:
        return self.adapter.max_storage_buffer_range

    @property
    def closed(self) -> bool:
        """True once close() ran, or in a forked child for a device of its parent."""
        return self.context.closed or self.context.pid != os.getpid()

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<dmlpy.Device {self.adapter_name!r} {self.feature_level}{state}>"

    def using(self) -> AbstractContextManager:
        """The device lock: everything that touches the GPU runs under it, and its first
        statement is check_open(). `with` takes the lock in C, so no interrupt can leave it
        held."""
        return self.context.using()

    def check_open(self) -> None:
        """Raise DeviceRemovedError if the device was closed or belongs to another process."""
        with self.context.using():
            self.context.check_open()

    def check_owned(self, obj: object, kind: type, what: str) -> None:
        if not isinstance(obj, kind):
            article = "an" if kind.__name__[0] in "AEIOU" else "a"
            raise InvalidArgumentError(f"{what} must be {article} {kind.__name__}, not {type(obj).__name__}")
        if obj.device is not self:
            raise InvalidArgumentError(f"{what} belongs to another device")

    def check_feature_support(self, feature: Feature, query: TensorDataType | Sequence[FeatureLevel]
                              ) -> FeatureDataTensorDataTypeSupport | FeatureDataFeatureLevels:
        """DirectML's CheckFeatureSupport for TENSOR_DATA_TYPE_SUPPORT and FEATURE_LEVELS."""
        self.check_open()
        if feature == Feature.TENSOR_DATA_TYPE_SUPPORT:
            if isinstance(query, bool) or not isinstance(query, (int, np.integer)):
                raise InvalidArgumentError(f"query {query!r} is not a TensorDataType")
            try:
                data_type = TensorDataType(int(query))
            except ValueError:
                raise InvalidArgumentError(f"query {query!r} is not a TensorDataType") from None
            info = DATA_TYPES.get(data_type)
            return FeatureDataTensorDataTypeSupport(
                info is not None and info.device_supported and info.introduced <= self.feature_level
                and not (info.extension and self.strict_directml))
        if feature == Feature.FEATURE_LEVELS:
            if isinstance(query, (str, bytes)) or not isinstance(query, Sequence) or not query:
                raise InvalidArgumentError("query must be a non-empty list of FeatureLevels")
            levels = [_as_feature_level(level, "query item") for level in query]
            supported = [level for level in levels if level <= self.feature_level]
            return FeatureDataFeatureLevels(max(supported) if supported else None)
        raise InvalidArgumentError(f"feature {feature!r} is not a Feature this device answers")

    def create_operator(self, desc: OperatorDesc) -> Operator:
        """Validate `desc` for this device and keep a copy of it (DirectML copies the desc
        too): later changes to the caller's objects never reach the operator."""
        self.check_open()
        schema = schema_of(desc)
        if schema is None:
            raise InvalidArgumentError(f"desc must be an operator desc, not {type(desc).__name__}", "type")
        own = schema.copy(desc)
        schema.check_device(own, self.feature_level, self.strict_directml)
        return Operator(self, own)

    def compile_operator(self, op: Operator, flags: ExecutionFlags = ExecutionFlags.NONE) -> CompiledOperator:
        """Specialise the operator's shader for its descs and this device, and compile it.

        The flags are accepted and recorded; none changes the result of these operators.
        """
        self.check_open()
        self.check_owned(op, Operator, "op")
        flags = _as_flags(flags)
        started = time.perf_counter()
        plan, shaders = compile_desc(op.desc, self.adapter, self._compile_glsl)
        compiled = CompiledOperator(self, op.desc, flags, plan, tuple(s.source for s in shaders),
                                    tuple(s.spirv for s in shaders), all(s.cache_hit for s in shaders))
        # The first call on a new layout pays for this (GLSL generation, glslang unless the
        # SPIR-V cache has it): say so, since nothing else explains the pause.
        LOG.info("compiled %s in %.0f ms (%d shader%s, %s)", describe(op.desc), 1000 * (time.perf_counter() - started),
                 len(shaders), "" if len(shaders) == 1 else "s",
                 "all from the SPIR-V cache" if compiled.cache_hit else "compiled by glslang")
        return compiled

    def compile_graph(self, graph_desc: GraphDesc, flags: ExecutionFlags = ExecutionFlags.NONE) -> CompiledGraph:
        """IDMLDevice1::CompileGraph: one compiled operator running the graph's nodes, element-wise
        chains fused into single kernels with the same bits as the nodes run one by one.

        Every node's desc is checked against the device here, as create_operator checks it
        (feature level and strict_directml included, each error naming the node); operators
        must be this device's."""
        self.check_open()
        if not isinstance(graph_desc, GraphDesc):
            raise InvalidArgumentError(f"graph_desc must be a GraphDesc, not {type(graph_desc).__name__}")
        flags = _as_flags(flags)
        # Checked again, each node's desc copied: nothing changed since it was built (an
        # Operator's desc can be reassigned) reaches the plan.
        graph = graph_desc.copy()
        for k, node in enumerate(graph.nodes):
            if isinstance(node, Operator) and getattr(node, "device", None) is not self:
                raise InvalidArgumentError(f"GraphDesc.nodes[{k}] is an operator of another device", "nodes")
            desc = graph.desc_of(k)
            try:
                desc.schema.check_device(desc, self.feature_level, self.strict_directml)
            except DmlError as error:
                raise type(error)(f"GraphDesc.nodes[{k}] ({desc.schema.dml_name}): {error.message}",
                                  error.field) from None
        plan = plan_graph(graph, self.adapter, self.segment_size)
        kernels, hits = [], []
        for kernel in plan.kernels:
            shaders = [self._compile_glsl(stage.source()) for stage in kernel.plan.stages]
            hits += [s.cache_hit for s in shaders]
            kernels.append(CompiledKernel(kernel.plan, tuple(s.source for s in shaders),
                                          tuple(s.spirv for s in shaders), kernel.tensors, kernel.nodes))
        return CompiledGraph(self, graph, flags, tuple(kernels), plan.temporary_size, all(hits))

    def _compile_glsl(self, source: str) -> CompiledShader:
        """SPIR-V for a shader source, remembered per device (a packed desc of any size
        shares its shader, so most compiles of a loop are found here)."""
        shader = self.shaders.get(source)
        if shader is None:
            shader = self.shaders.put(source, compile_glsl(source))
            return shader
        return CompiledShader(source, shader.spirv, cache_hit=True)

    def compile_cached(self, desc: OperatorDesc) -> CompiledOperator:
        """create_operator + compile_operator, reusing this device's compiled operator for an
        identical desc (same tensors, same scalar bits); least recently used dropped first."""
        schema = schema_of(desc)
        if schema is None:
            raise InvalidArgumentError(f"desc must be an operator desc, not {type(desc).__name__}", "type")
        op = self.create_operator(desc)
        key = schema.key(op.desc)
        compiled = self.compiled_operators.get(key)
        if compiled is None:
            compiled = self.compiled_operators.put(key, self.compile_operator(op))
        elif LOG.isEnabledFor(logging.DEBUG):  # describe() only when it is shown: this is every call's path
            LOG.debug("reusing the compiled %s", describe(op.desc))
        return compiled

    def create_buffer(self, size_in_bytes: int | None = None, *, tensor: BufferTensorDesc | None = None) -> Buffer:
        """Device memory, zero-filled: `size_in_bytes` of raw bytes, or a buffer made for
        `tensor` (sized by its TotalTensorSizeInBytes unless `size_in_bytes` says more),
        whose read() and write() check dtypes against it."""
        self.check_open()
        return Buffer(self, size_in_bytes, tensor)

    def create_binding_table(self, compiled: CompiledOperator | CompiledGraph, inputs: Sequence[Bound],
                             outputs: Sequence[Bound], temporary: Bound = None, persistent: Bound = None
                             ) -> BindingTable:
        """Bind buffers to the compiled operator's tensors; every binding rule is checked here."""
        self.check_open()
        if isinstance(compiled, CompiledGraph):
            self.check_owned(compiled, CompiledGraph, "compiled")
        else:
            self.check_owned(compiled, CompiledOperator, "compiled")
        with self.using():  # no buffer is destroyed between its check and the recording over it
            self.check_open()
            return BindingTable(self, compiled, inputs, outputs, temporary, persistent)

    def create_command_list(self) -> CommandList:
        """A list of dispatches recorded once and replayed by `execute` (see command_list.py)."""
        self.check_open()
        return CommandList(self)

    def execute(self, work: BindingTable | CommandList, wait: bool = True) -> Execution:
        """Run a bound operator (or graph), or replay a command list; returns an Execution.

        wait=True (the default) returns when the work has finished. wait=False returns once
        the last submission is running: `execution.done` says whether it has finished,
        `execution.wait()` waits for it. Until then anything else that touches the device's
        memory or queue (a buffer's read, write or destroy, another execute, close) first
        waits for it, so no buffer in use is read, changed or freed under it. The work is one
        submission: a table's stages, and a command list's dispatches, are recorded into one
        command buffer with barriers where they depend on each other (command_list.py). A
        guarded device always waits (its check reads the buffers after the work).

        The device lock is held while submitting (and on a guarded device throughout), so
        close() never pulls work from under the GPU."""
        if not isinstance(work, (BindingTable, CommandList)):
            raise InvalidArgumentError(f"work must be a BindingTable or a CommandList, not {type(work).__name__}")
        if not isinstance(wait, bool):
            raise InvalidArgumentError(f"wait {wait!r} must be a bool")
        self.check_owned(work, type(work), "work")
        with self.using():
            self.check_open()
            submissions = work.submissions()
            if self.guarded:
                with Guard(work.tables()):
                    for submission in submissions:
                        self.context.run(submission)
                return Execution(self, None)
            for submission in submissions[:-1] if not wait else submissions:
                self.context.run(submission)
            if wait or not submissions:
                return Execution(self, None)
            self.context.run_async(submissions[-1])
            return Execution(self, submissions[-1])

    def close(self) -> None:
        """Release the Vulkan device once the call in flight on another thread returns; every
        object made from it becomes unusable (DeviceRemovedError). Safe to call twice."""
        self._close(-1)

    def _close(self, timeout: float) -> bool:
        for entry in self.front_end_cache.clear():
            entry.forget()
        self.compiled_operators.clear()
        self.shaders.clear()
        self.constant_arrays.clear()  # before the pool: their buffers come back to it as they go
        self.free_arrays.clear()
        self.device_array_tables.clear()
        return self.context.close(timeout)

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _as_flags(flags) -> ExecutionFlags:
    if isinstance(flags, bool) or not isinstance(flags, (int, np.integer)) or not 0 <= int(flags) <= _ALL_FLAGS \
            or int(flags) & ~_ALL_FLAGS:
        raise InvalidArgumentError(f"flags {shown(flags)} is not a combination of ExecutionFlags", "flags")
    return ExecutionFlags(int(flags))


_ALL_FLAGS = int(ExecutionFlags.ALLOW_HALF_PRECISION_COMPUTATION | ExecutionFlags.DISABLE_META_COMMANDS
                 | ExecutionFlags.DESCRIPTORS_VOLATILE)

# Every open device of this process, held weakly: what fork() and interpreter exit must
# settle. Not a cache: a device leaves it when it is collected.
_LIVE_DEVICES: weakref.WeakSet[Device] = weakref.WeakSet()
_FORK_WAIT_SECONDS = 10.0
_EXIT_WAIT_SECONDS = 5.0
# Set once, by the exit handler, before it closes the devices: a device opened after it (the
# front end's default device, reopened by a daemon thread that keeps calling) would still be
# running kp when the interpreter tears down the threads, which aborts the process.
_EXITING = threading.Event()
_held_across_fork: list[threading.RLock] = []


def _before_fork() -> None:
    """Let no dmlpy thread be inside Vulkan while the process is copied."""
    for device in list(_LIVE_DEVICES):
        lock = device.context.lock
        if device.context.pid == os.getpid() and lock.acquire(timeout=_FORK_WAIT_SECONDS):
            _held_across_fork.append(lock)


def _after_fork_in_parent() -> None:
    while _held_across_fork:
        _held_across_fork.pop().release()


def _after_fork_in_child() -> None:
    """The child inherits the parent's devices as closed: it creates its own."""
    _held_across_fork.clear()
    for device in list(_LIVE_DEVICES):
        device.context.abandon()
        device.array_lock = threading.RLock()  # another thread may have held it at fork time
        for cache in (device.compiled_operators, device.shaders, device.front_end_cache, device.free_arrays,
                      device.device_array_tables, device.constant_arrays):  # their entries are the parent's
            cache.reset_after_fork()
    _LIVE_DEVICES.clear()


def _close_all_at_exit() -> None:
    """Close every device before the interpreter tears down kp; a device another thread keeps
    busy past the wait is left to the operating system rather than pulled from under it. No
    device opens from here on; a second pass closes one that was opening at the moment."""
    _EXITING.set()
    for _ in range(2):
        for device in list(_LIVE_DEVICES):
            if device.context.pid == os.getpid() and not device.closed:
                device._close(_EXIT_WAIT_SECONDS)


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)
atexit.register(_close_all_at_exit)


def create_device(min_feature_level: FeatureLevel | None = None, max_feature_level: FeatureLevel | None = None,
                  adapter: int | str | None = None, strict_directml: bool = False, guarded: bool = False,
                  cache_limits: CacheLimits | None = None, profile: str | os.PathLike | None = None) -> Device:
    """Open a device on a Vulkan adapter.

    adapter: an index into `list_adapters()`, a piece of an adapter's name (case ignored;
    it must match one adapter) or its device UUID (32 hex digits, dashes allowed); default
    `DMLPY_ADAPTER`, else the first discrete or integrated GPU, else the CPU device.
    min_feature_level: fail with UnsupportedError unless the device offers at least this
    level. max_feature_level: cap the device, to check a program against an older DirectML.
    strict_directml: accept only what DirectML itself accepts (no dmlpy extensions).
    guarded: a test mode that reads back every bound buffer around each dispatch and raises
    GuardViolationError if a byte outside the outputs' elements changed (see guard.py);
    slow. cache_limits: budgets of the caches the device owns (CacheLimits). profile: a
    device profile's name (`list_device_profiles()`) or a profile file's path; default
    `DMLPY_DEVICE_PROFILE`: plan as if the device had that GPU's limits (the stricter of its
    and the real device's) and float controls; `device.adapter` shows the result.
    """
    if _EXITING.is_set():
        raise DeviceRemovedError("the interpreter is exiting: dmlpy opens no new device (a thread still calling "
                                 "dmlpy at exit gets this error)")
    if cache_limits is not None and not isinstance(cache_limits, CacheLimits):
        raise InvalidArgumentError(f"cache_limits must be a CacheLimits, not {type(cache_limits).__name__}")
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
    what_profile = "profile"
    if profile is None and os.environ.get("DMLPY_DEVICE_PROFILE"):
        profile, what_profile = os.environ["DMLPY_DEVICE_PROFILE"], "DMLPY_DEVICE_PROFILE"
    device_profile = load_profile(profile, what_profile) if profile is not None else None
    adapters = list_adapters()
    if not adapters:
        raise InstallationError(f"the Vulkan loader reports no adapter: {NO_DRIVER_HINT}")
    what = "adapter"
    if adapter is None and os.environ.get("DMLPY_ADAPTER"):
        adapter, what = os.environ["DMLPY_ADAPTER"], "DMLPY_ADAPTER"
    chosen = default_adapter(adapters) if adapter is None else find_adapter(adapters, adapter, what)
    if device_profile is not None:
        chosen = device_profile.apply(chosen)
    device = Device(chosen, ceiling, strict_directml, guarded, cache_limits)
    LOG.info("device on adapter %d %r (%s), %s, device profile %s, FP32 subnormals %s", chosen.index, chosen.name,
             "chosen by " + what if adapter is not None else "the default", device.feature_level,
             f"{device_profile.name!r} (from {what_profile})" if device_profile is not None else "none",
             device.adapter.denormals)
    return device
