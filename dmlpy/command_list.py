"""Recorded command lists: many dispatches recorded once, replayed without re-recording.

kp records no barrier from one dispatch's shader writes to the next one's reads, so the
barriers a chain of dependent operators needs become boundaries between batches: a
dispatch that touches bytes an earlier dispatch of the current batch wrote (or writes
bytes it read) starts a new batch, and so does each stage of a multi-stage operator.
Each batch is one command buffer; replay submits the batches in order and waits for each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .binding import BindingTable, BoundTensor
from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from .device import Device


def _overlaps(a: BoundTensor, b: BoundTensor) -> bool:
    return a.buffer is b.buffer and a.offset < b.end and b.offset < a.end


class CommandList:
    """Dispatches of binding tables, in order; create with `device.create_command_list()`."""

    def __init__(self, device: Device):
        self.device = device
        self.closed = False
        self._batches: list[list] = [[]]  # kp algorithms per batch
        self._reads: list[BoundTensor] = []  # what the open batch reads and writes
        self._writes: list[BoundTensor] = []
        self._tables: list[BindingTable] = []
        self._recorded = None

    def record_dispatch(self, table: BindingTable) -> None:
        """Append the table's dispatch (all its stages) to the list."""
        self.device.check_open()
        self.device._check_owned(table, BindingTable, "table")
        if self.closed:
            raise InvalidArgumentError("this CommandList is closed: it was executed or closed; record a new one")
        table.check_usable()
        reads, writes = table.inputs, [*table.outputs, *table.scratch]
        for stage, dispatch in enumerate(table.dispatches):
            depends = stage > 0 or any(_overlaps(w, t) for w in self._writes for t in (*reads, *writes)) \
                or any(_overlaps(r, w) for r in self._reads for w in writes)
            if depends and self._batches[-1]:
                self._batches.append([])
                self._reads, self._writes = [], []
            self._batches[-1].extend(dispatch.algorithms)
            self._reads += reads
            self._writes += writes
        self._tables.append(table)

    @property
    def batch_count(self) -> int:
        """How many command buffers (submissions) one replay takes."""
        return len([b for b in self._batches if b])

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<dmlpy.CommandList {len(self._tables)} dispatches, {self.batch_count} batches, {state}>"

    def close(self) -> None:
        """Finish recording: the command buffers are recorded now, once."""
        with self.device.using():
            self.device.check_open()
            if self._recorded is None:
                self._recorded = [self.device.context.record(batch) for batch in self._batches if batch]
                self.closed = True

    def tables(self) -> list[BindingTable]:
        return list(self._tables)

    def submissions(self) -> list:
        """What `execute` submits, in order: one per batch (closing the list first)."""
        self.close()
        for table in self._tables:
            table.check_usable()
        return self._recorded
