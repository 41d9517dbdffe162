"""The one module that touches Kompute (`kp`): buffers, pipelines, submission.

Everything else in dmlpy speaks in descs, compiled operators and binding tables; every
kp workaround lives here with the reason for it.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ..base.errors import DeviceRemovedError, InstallationError
from .caches import LruCache
from .vulkan_info import check_drivers_usable_here

# dmlpy imports without kp: descs, validation and shader generation need no Vulkan, and
# creating a device says how to install it. The kp tools/setup.sh builds carries dmlpy's patch
# (kp.dmlpy_patch): Manager.clear, no validation layer unless the environment names one (stock
# kp turns it on whenever it is installed, which slows every submission), the GIL released while
# a submission runs, a truly asynchronous eval_async, Sequence.is_complete, OpComputeBarrier
# (dependent dispatches in one command buffer), Sequence.eval_spin and
# Manager.algorithm_sharing (an algorithm running another's pipeline over its own buffers), and
# the device created with shaderInt64 where it has it.
# kp's module initialisation calls logging.basicConfig(), which would give the application's
# root logger a handler behind its back (and make the application's own basicConfig a no-op):
# whatever handlers it adds are taken off again.
_ROOT_HANDLERS = list(logging.getLogger().handlers)
try:
    import kp
except ImportError as error:
    kp = None
    _KP_IMPORT_ERROR = str(error)
finally:
    for _handler in set(logging.getLogger().handlers) - set(_ROOT_HANDLERS):
        logging.getLogger().removeHandler(_handler)
KP_PATCH_LEVEL = 6
KP_INSTALL_HINT = ("build it with dmlpy's patch into this Python's environment: `make setup` in a dmlpy checkout "
                   "for its .venv, or `tools/setup.sh --venv PATH` for any venv (README, Installing)")

# The validation layer is on when the loader is told to load it (VK_INSTANCE_LAYERS, or kp's
# own KOMPUTE_ENV_DEBUG_LAYERS); kp 0.9 then cannot use its timestamps (see GpuContext).
VALIDATION = any("VK_LAYER_KHRONOS_validation" in os.environ.get(name, "")
                 for name in ("VK_INSTANCE_LAYERS", "KOMPUTE_ENV_DEBUG_LAYERS"))


def check_kp() -> None:
    """Raise InstallationError unless kp, with dmlpy's patch, can be imported."""
    if kp is None:
        raise InstallationError(f"Kompute (kp) cannot be imported ({_KP_IMPORT_ERROR}): {KP_INSTALL_HINT}")
    if getattr(kp, "dmlpy_patch", 0) < KP_PATCH_LEVEL:
        where = getattr(kp, "__file__", "kp")
        raise InstallationError(f"the installed kp ({where}) lacks dmlpy's patch level {KP_PATCH_LEVEL}: "
                                f"{KP_INSTALL_HINT}")

# kp's `algorithm` has a float-list overload that pybind11 picks when given Python lists,
# which turns uint32 push constants into float bits: always pass uint32 NumPy arrays.
_NO_SPECIALIZATION = np.array([], dtype=np.uint32)

# kp objects a forked child inherited from its parent: referenced for good, so that no
# destructor of theirs ever runs (it would act on the parent's Vulkan device, and under the
# validation layer abort the child). A module global alone is not enough: interpreter
# shutdown clears module dicts and would free the list, so it holds one reference that no
# Python code owns and nothing ever drops.
_KEPT_FOREVER: list = []
ctypes.pythonapi.Py_IncRef(ctypes.py_object(_KEPT_FOREVER))


@dataclass(frozen=True)
class Launch:
    """One vkCmdDispatch: the device words bound in binding order, the grid, the push constants."""

    buffers: list[DeviceWords]
    workgroups: tuple[int, int, int]
    push_constants: np.ndarray


class Dispatch:
    """Pipelines bound to their buffers, recorded once into a command buffer."""

    def __init__(self, algorithms, sequence):
        self.algorithms = algorithms
        self.sequence = sequence


class DeviceWords:
    """One kp tensor: a device buffer of 32-bit words and kp's host staging copy of it."""

    def __init__(self, tensor):
        self.tensor = tensor


class GpuContext:
    """A kp Manager on one adapter, and the lock that guards every kp object made from it.

    Every method holds `lock` while it touches kp and first checks, under it, that the
    context is open and belongs to this process: `close()` takes the same lock, so it waits
    for the call in flight and every later call raises DeviceRemovedError. A forked child
    never touches its parent's Vulkan objects: `abandon()` marks the context foreign and
    keeps every kp object it made alive for good, so no destructor runs in the child.
    """

    def __init__(self, adapter_index: int, timestamp_period_ns: float, extensions: tuple[str, ...] = (),
                 spin_ns: int = 0, pipeline_limit: int = 64):
        check_kp()
        check_drivers_usable_here()
        # Device extensions dmlpy's shaders need (VK_KHR_shader_float_controls where they ask
        # for float controls: kp's instance is Vulkan 1.1, where it is not core).
        self.manager = kp.Manager(adapter_index, [], list(extensions)) if extensions else kp.Manager(adapter_index)
        self.lock = threading.RLock()
        self.pid = os.getpid()
        self.closed = False
        self.timestamp_period_ns = timestamp_period_ns
        self.spin_ns = spin_ns
        # kp 0.9 writes timestamps into a query pool it never resets, which the validation
        # layer reports as an error: under validation, time on the host instead.
        self.timestamps_usable = timestamp_period_ns > 0 and not VALIDATION
        # Every wrapper of kp objects made here, so a forked child can keep them alive.
        self._owners: weakref.WeakSet = weakref.WeakSet()
        self._made_since_clear = 0
        # Submissions of execute(wait=False) not awaited yet, oldest first (see ready()).
        self._in_flight: list[Dispatch] = []
        # The pipeline of each (SPIR-V, binding count, push-constant words) lately used: a kp
        # Algorithm over a placeholder buffer, whose pipeline the algorithms of binding tables
        # run (Manager.algorithm_sharing). Binding a compiled operator to new buffers then
        # builds a descriptor set, not a pipeline (on lavapipe an LLVM compile: tens of
        # milliseconds and megabytes). An algorithm keeps the pipeline it runs alive, so
        # eviction only stops new tables from finding it.
        self._pipelines: LruCache = LruCache(pipeline_limit)
        self._placeholder = None  # one word: what the pipelines' own descriptor sets bind

    def using(self) -> threading.RLock:
        """The lock itself, so that `with context.using():` takes it in C: a Python __enter__
        could be interrupted (KeyboardInterrupt) after acquiring and before returning, and
        the lock would stay held for good. The first statement under it is check_open()."""
        return self.lock

    def check_open(self) -> None:
        """Raise DeviceRemovedError unless the context is open in the process that made it
        (called holding the lock, which close() takes too)."""
        if self.pid != os.getpid():
            raise DeviceRemovedError("the device was created in another process: after fork(), create a new one")
        if self.closed:
            raise DeviceRemovedError("the device was closed")

    def ready(self) -> None:
        """check_open(), then wait for the submissions still in flight (execute with
        wait=False): every method that touches kp objects calls it first, holding the lock, so
        nothing reads, writes, destroys or submits again what running work uses."""
        self.check_open()
        while self._in_flight:
            self._in_flight.pop(0).sequence.eval_await()

    def run_async(self, dispatch: Dispatch) -> None:
        """Submit the recorded dispatch and return while it runs."""
        with self.using():
            self.ready()
            dispatch.sequence.eval_async()
            self._in_flight.append(dispatch)

    def finished(self, dispatch: Dispatch, wait: bool) -> bool:
        """Whether an asynchronous submission has finished; with `wait`, wait until it has.
        A closed context waited for everything when it closed."""
        with self.using():
            if dispatch not in self._in_flight:
                return True
            if not wait and not dispatch.sequence.is_complete():
                return False
            while self._in_flight:  # one queue: what was submitted before it is done too
                done = self._in_flight.pop(0)
                done.sequence.eval_await()
                if done is dispatch:
                    return True
            return True

    def close(self, timeout: float = -1) -> bool:
        """Destroy every kp object once the call in flight returns; False if `timeout` ran out."""
        if self.pid != os.getpid():
            self.closed = True
            return True
        if not self.lock.acquire(timeout=timeout):
            return False
        try:
            if not self.closed:
                while self._in_flight:
                    self._in_flight.pop(0).sequence.eval_await()
                self.closed = True
                self.manager.destroy()
                self._pipelines.clear()
        finally:
            self.lock.release()
        return True

    def abandon(self) -> None:
        """In a forked child: never use or destroy the parent's kp objects."""
        self.closed = True
        self._in_flight = []  # the parent's work: never awaited here
        self.lock = threading.RLock()  # the parent's may have been held at fork time
        # The pipeline cache whole, entries and all: its lock may have been held at fork time.
        _KEPT_FOREVER.append([self.manager, *self._owners, self._pipelines, self._placeholder])

    def _own(self, wrapper):
        """Track a new wrapper (called holding the lock). The Manager keeps a weak record of
        every object it ever made, and with it each object's memory: prune it now and then."""
        self._owners.add(wrapper)
        self._made_since_clear += 1
        if self._made_since_clear >= 256:
            self._made_since_clear = 0
            self.manager.clear()
        return wrapper

    def create_words(self, word_count: int) -> DeviceWords:
        """A zero-filled device buffer of `word_count` 32-bit words.

        `tensor_t` keeps uint32 data as is (`tensor` would convert to float32). The device
        copy is not initialised by kp until a sync, so zeroes are synced at once.
        """
        with self.using():
            self.ready()
            words = self.manager.tensor_t(np.zeros(word_count, dtype=np.uint32))
            self.manager.sequence().eval(kp.OpTensorSyncDevice([words]))
            return self._own(DeviceWords(words))

    def destroy_words(self, words: DeviceWords) -> None:
        with self.using():
            self.ready()
            words.tensor.destroy()

    def write(self, words: DeviceWords, byte_offset: int, data: np.ndarray) -> None:
        """Copy raw bytes into the device buffer at byte_offset."""
        with self.using():
            self.ready()
            staging = words.tensor.data().view(np.uint8)  # a view of kp's mapped staging memory
            if data.nbytes != staging.nbytes:
                # The staging copy may be older than what a shader wrote: refresh it so the
                # sync below does not put stale bytes back around the written range.
                self.manager.sequence().eval(kp.OpTensorSyncLocal([words.tensor]))
            staging[byte_offset:byte_offset + data.nbytes] = data.reshape(-1).view(np.uint8)
            self.manager.sequence().eval(kp.OpTensorSyncDevice([words.tensor]))

    def read(self, words: DeviceWords, byte_offset: int, byte_count: int, into: np.ndarray | None = None) -> np.ndarray:
        """A copy of `byte_count` bytes of the device buffer from byte_offset: into `into` (a
        uint8 array of that many bytes) where given, else a new array."""
        with self.using():
            self.ready()
            self.manager.sequence().eval(kp.OpTensorSyncLocal([words.tensor]))
            staged = words.tensor.data().view(np.uint8)[byte_offset:byte_offset + byte_count]
            if into is None:
                return staged.copy()
            into[...] = staged
            return into

    def create_algorithms(self, spirv: bytes, launches: list[Launch]) -> list:
        """A kp Algorithm per launch of `spirv` (an Algorithm is tied to the buffers it was
        created with), each running the one pipeline of `spirv`; the launches of one stage
        touch disjoint elements."""
        with self.using():
            self.ready()
            algorithms = []
            for launch in launches:
                push_constants = np.ascontiguousarray(launch.push_constants, dtype=np.uint32)
                source = self._pipeline(spirv, len(launch.buffers), push_constants.size)
                algorithms.append(self.manager.algorithm_sharing(source, [w.tensor for w in launch.buffers],
                                                                 list(launch.workgroups), push_constants))
            return algorithms

    def _pipeline(self, spirv: bytes, binding_count: int, push_constant_words: int):
        """The algorithm owning the pipeline of `spirv` with this many bindings and push
        constants (called holding the lock)."""
        key = (spirv, binding_count, push_constant_words)
        source = self._pipelines.get(key)
        if source is None:
            if self._placeholder is None:
                self._placeholder = self.create_words(1)
            source = self.manager.algorithm([self._placeholder.tensor] * binding_count, spirv, [1, 1, 1],
                                            _NO_SPECIALIZATION, np.zeros(push_constant_words, dtype=np.uint32))
            source = self._pipelines.put(key, source)
        return source

    def create_dispatch(self, spirv: bytes, launches: list[Launch]) -> Dispatch:
        """Every launch of `spirv` recorded into one command buffer, with no barrier between them."""
        return self.record([self.create_algorithms(spirv, launches)])

    @staticmethod
    def _record_steps(sequence, steps: list[list]) -> None:
        """The dispatches of each step, with a compute-to-compute memory barrier before every
        step but the first: a step may read or overwrite what any earlier one wrote, and
        dispatches within a step run in any order (or at once)."""
        for index, algorithms in enumerate(steps):
            if index:
                sequence.record(kp.OpComputeBarrier())
            for algorithm in algorithms:
                sequence.record(kp.OpAlgoDispatch(algorithm))

    def record(self, steps: list[list], timestamped: bool = False) -> Dispatch:
        """One command buffer dispatching the algorithms of `steps` in order, a barrier between
        steps (so one submission runs a chain of dependent dispatches). Timestamped ones latch
        GPU time around each recorded operation."""
        with self.using():
            self.ready()
            operations = sum(len(step) for step in steps) + max(0, len(steps) - 1)
            sequence = self.manager.sequence(0, operations + 1) if timestamped else self.manager.sequence()
            self._record_steps(sequence, steps)
            return self._own(Dispatch([a for step in steps for a in step], sequence))

    def record_round_trip(self, uploads: list, steps: list[list], downloads: list) -> Dispatch:
        """One command buffer: staging-to-device copies of `uploads`, the steps' dispatches,
        device-to-staging copies of `downloads`. kp records the barriers around the copies
        (transfer write -> shader read before the first dispatch; shader write -> transfer
        read -> host read around a download), so one submission replaces three."""
        with self.using():
            self.ready()
            sequence = self.manager.sequence()
            sequence.record(kp.OpTensorSyncDevice([w.tensor for w in uploads]))
            self._record_steps(sequence, steps)
            sequence.record(kp.OpTensorSyncLocal([w.tensor for w in downloads]))
            return self._own(Dispatch([a for step in steps for a in step], sequence))

    def run_round_trip(self, dispatch: Dispatch, uploads: list, download: DeviceWords, byte_count: int) -> np.ndarray:
        """Put each (words, array) of `uploads` in its buffer's staging copy, run a round
        trip recorded by record_round_trip, and return a copy of the first byte_count bytes
        of `download`'s staging copy: one lock, one submission."""
        with self.using():
            self.ready()
            for words, data in uploads:
                words.tensor.data().view(np.uint8)[:data.nbytes] = data.reshape(-1).view(np.uint8)
            self.run(dispatch)
            return download.tensor.data().view(np.uint8)[:byte_count].copy()

    def record_buffer_copy(self, source: DeviceWords, destination: DeviceWords, timestamped: bool) -> Dispatch:
        """vkCmdCopyBuffer from source to destination (a benchmark yardstick)."""
        with self.using():
            self.ready()
            sequence = self.manager.sequence(0, 2) if timestamped else self.manager.sequence()
            sequence.record(kp.OpTensorCopy([source.tensor, destination.tensor]))
            return self._own(Dispatch([], sequence))

    def run(self, dispatch: Dispatch) -> None:
        """Submit the recorded dispatch and wait for it; re-submitting re-records nothing.
        On a GPU the fence is polled for up to `spin_ns` first: short work finishes before
        a blocking wait's sleep and wake-up would (see docs/benchmarks.md, host cost)."""
        with self.using():
            self.ready()
            if self.spin_ns:
                dispatch.sequence.eval_spin(self.spin_ns)
            else:
                dispatch.sequence.eval()

    def gpu_seconds(self, dispatch: Dispatch) -> float:
        """GPU time of the last run of a timestamped dispatch, first to last timestamp."""
        stamps = dispatch.sequence.get_timestamps()
        return (stamps[-1] - stamps[0]) * self.timestamp_period_ns * 1e-9
