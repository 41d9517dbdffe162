"""The buffers and binding table a front-end call shape keeps in its device's
front_end_cache, so that a loop of identical calls rebuilds nothing."""

from __future__ import annotations

import threading

import numpy as np

from ..runtime.device import CompiledOperator, Device


class CallBinding:
    """Buffers and a binding table kept for one (desc, in-place) shape of call in the
    device's front_end_cache, so a loop of identical calls rebuilds nothing.

    `lock` is held while a call uses the entry. The cache evicts by calling `retire()`, which
    frees the buffers once no call uses them (waiting for the one in progress, if any). A
    call that finds its entry already freed builds a new one."""

    def __init__(self, device: Device, compiled: CompiledOperator, in_place: int | None):
        tensors = [getattr(compiled.desc, f.name) for f in compiled.desc.schema.tensors]
        inputs = len(compiled.desc.schema.inputs)
        # An optional input the desc leaves out (None) has no buffer, and binds None.
        self.buffers = [None if t is None else device.create_buffer(t.total_tensor_size_in_bytes) for t in tensors]
        if in_place is not None:  # the output is bound over that input's buffer
            self.buffers[-1].destroy()
            self.buffers[-1] = self.buffers[in_place]
        temporary_size = compiled.binding_properties.temporary_resource_size
        self.temporary = device.create_buffer(temporary_size) if temporary_size else None
        self.table = device.create_binding_table(compiled, inputs=self.buffers[:inputs], outputs=self.buffers[inputs:],
                                                 temporary=self.temporary)
        self.nbytes = sum(b.size_in_bytes for b in {id(b): b for b in self.buffers if b is not None}.values()) \
            + temporary_size
        self.lock = threading.Lock()
        self.device = device
        self.freed = False
        self.retired = False
        self._round_trips = {}

    def run(self, spans: list[np.ndarray], upload_output: bool) -> np.ndarray:
        """Upload the input spans (and the output's, where its gaps must survive), run, and
        return the output buffer's bytes. An operator whose buffers are single segments takes
        one submission: the uploads, its stages and the download recorded together once,
        unless the kernel writes a buffer it uploads (the output's gaps, or an output bound
        in place): kp's barrier after an upload orders shader reads only, and a shader write
        racing the copy could land before it on a GPU, so those take a submission each."""
        device, table = self.device, self.table
        inputs, output = self.buffers[:-1], self.buffers[-1]
        uploaded = [*inputs, output] if upload_output else inputs
        single = not device.guarded and all(len(b.segments) == 1 for b in self.buffers) \
            and all(b is not output for b in uploaded)
        if not single:
            for buffer, span in zip(uploaded, spans):
                buffer.write(span)
            device.execute(table)
            return output.read(np.uint8, output.size_in_bytes)
        context = device.context
        with device.using():
            device.check_open()
            round_trip = self._round_trips.get(upload_output)
            if round_trip is None:
                round_trip = self._round_trips[upload_output] = context.record_round_trip(
                    list({id(b): b.segments[0] for b in uploaded}.values()), table.steps, [output.segments[0]])
            return context.run_round_trip(round_trip, [(b.segments[0], np.ascontiguousarray(span))
                                                       for b, span in zip(uploaded, spans)],
                                          output.segments[0], output.size_in_bytes)

    def retire(self) -> None:
        """Evicted from the cache (after the cache's lock is released): free the buffers once
        the call using them, if any, ends. Only `with` takes the lock: an interrupt landing
        between a bare acquire() and its try would leave it held, and the next call on this
        entry waiting forever."""
        self.retired = True
        with self.lock:
            self.free_if_retired()

    def forget(self) -> None:
        """The device is closing and frees everything itself."""
        self.freed = True

    def free_if_retired(self) -> None:
        """Called holding `lock`, at the end of a call."""
        if self.retired and not self.freed:
            self.freed = True
            for buffer in (*self.buffers, self.temporary):
                if buffer is not None:
                    buffer.destroy()


def run_bound(device: Device, compiled: CompiledOperator, in_place: int | None, work):
    """work(binding) with the device's cached binding for this call shape, built when
    missing or freed by an eviction. `with binding.lock` (not acquire/try) so that an
    interrupt cannot leave the lock held."""
    key = (compiled.computation, in_place)
    while True:
        binding = device.front_end_cache.get(key)
        if binding is None:
            binding = device.front_end_cache.put(key, CallBinding(device, compiled, in_place))
        with binding.lock:
            if not binding.freed:
                try:
                    return work(binding)
                finally:
                    binding.free_if_retired()
        with device.using():  # freed by close(): using() says so; else it was evicted, retry
            device.check_open()


