"""Recorded command lists: many dispatches recorded once, replayed without re-recording.

The whole list is one command buffer, submitted once per replay. Dispatches that share no
bytes run without a barrier between them (the GPU may overlap them); a dispatch that
touches bytes an earlier dispatch of the current step wrote (or writes bytes it read)
starts a new step behind a compute-to-compute memory barrier, and so does each stage of a
multi-stage operator.
"""

from __future__ import annotations

from ..base.errors import DeviceRemovedError, InvalidArgumentError
from .binding import BindingTable, BoundTensor, Device


def _overlaps(a: BoundTensor, b: BoundTensor) -> bool:
    return a.buffer is b.buffer and a.offset < b.end and b.offset < a.end


class CommandList:
    """Dispatches of binding tables, in order; create with `device.create_command_list()`."""

    def __init__(self, device: Device):
        self.device = device
        self.closed = False
        self._steps: list[list] = [[]]  # kp algorithms per step; a barrier between steps
        self._reads: list[BoundTensor] = []  # what the open step reads and writes
        self._writes: list[BoundTensor] = []
        self._tables: list[BindingTable] = []
        self._recorded = None

    def record_dispatch(self, table: BindingTable) -> None:
        """Append the table's dispatch (all its stages) to the list."""
        with self.device.using():  # the list is the caller's; the lock keeps two recording threads apart
            self.device.check_open()
            self.device.check_owned(table, BindingTable, "table")
            if self.closed:
                raise InvalidArgumentError("this CommandList is closed: it was executed or closed; record a new one")
            table.check_usable()
            reads, writes = table.inputs, [*table.outputs, *table.scratch]
            for stage, algorithms in enumerate(table.steps):
                depends = stage > 0 or any(_overlaps(w, t) for w in self._writes for t in (*reads, *writes)) \
                    or any(_overlaps(r, w) for r in self._reads for w in writes)
                if depends and self._steps[-1]:
                    self._steps.append([])
                    self._reads, self._writes = [], []
                self._steps[-1].extend(algorithms)
                self._reads += reads
                self._writes += writes
            self._tables.append(table)

    @property
    def batch_count(self) -> int:
        """How many command buffers (submissions) one replay takes: 1, or 0 when empty."""
        return 1 if self._steps[0] else 0

    @property
    def barrier_count(self) -> int:
        """How many memory barriers the list's dependencies put between its dispatches."""
        return len(self._steps) - 1

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<dmlpy.CommandList {len(self._tables)} dispatches, {self.barrier_count} barriers, {state}>"

    def close(self) -> None:
        """Finish recording: the command buffers are recorded now, once. Every buffer the
        list binds is checked first, under the device lock that Buffer.destroy() takes too:
        a command buffer is never recorded over a destroyed buffer (DeviceRemovedError)."""
        with self.device.using():
            self.device.check_open()
            if self._recorded is None:
                self._check_buffers()
                self._recorded = [self.device.context.record(self._steps)] if self._steps[0] else []
                self.closed = True

    def tables(self) -> list[BindingTable]:
        return list(self._tables)

    def submissions(self) -> list:
        """What `execute` submits: the list's one command buffer (closing the list first), once
        every buffer it binds is known to be alive (execute holds the device lock throughout)."""
        with self.device.using():
            self.close()
            self._check_buffers()
            return self._recorded

    def _check_buffers(self) -> None:
        for k, table in enumerate(self._tables):
            try:
                table.check_usable()
            except DeviceRemovedError as error:
                raise DeviceRemovedError(f"dispatch {k} of this CommandList ({table.compiled.name}): "
                                         f"{error.message}") from None
