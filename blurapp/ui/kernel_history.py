"""Undo and redo of kernel edits: one :class:`SetKernelCommand` per edit on the window's
QUndoStack, with a run of quick parameter steps (a spin box held down) merged into one."""

from __future__ import annotations

import time
from typing import Protocol

from PySide6.QtGui import QUndoCommand

from blurapp.core.kernel import Kernel

__all__ = ["PARAM_MERGE_S", "KernelTarget", "SetKernelCommand"]

PARAM_MERGE_S = 1.0  # spin-box steps within this many seconds are one undo step


class KernelTarget(Protocol):
    """What a kernel edit changes: the window, which hands the kernel to its model."""

    def apply_kernel(self, kernel: Kernel, *, set_text: bool = True) -> None: ...


class SetKernelCommand(QUndoCommand):
    """One kernel edit; consecutive parameter tweaks of one family merge into one step.

    ``source`` says where the edit came from: ``typed`` (the spec field), ``params`` (the family's
    spin boxes), ``grid``, ``file`` or ``code``.
    """

    ID = 1

    def __init__(self, target: KernelTarget, old: Kernel, new: Kernel, source: str) -> None:
        super().__init__(f"kernel {new.spec if len(new.spec) < 40 else new.name}")
        self.target, self.old, self.new, self.source = target, old, new, source
        self.stamp = time.monotonic()
        self._first = True

    def id(self) -> int:
        return self.ID

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 (Qt override)
        if not isinstance(other, SetKernelCommand):
            return False
        if not (self.source == other.source == "params" and self.new.name == other.new.name):
            return False
        if other.stamp - self.stamp > PARAM_MERGE_S:
            return False
        self.new, self.stamp = other.new, other.stamp
        self.setText(other.text())
        return True

    def redo(self) -> None:
        # The first redo of a typed edit must not rewrite what the user is typing.
        self.target.apply_kernel(self.new, set_text=not (self._first and self.source == "typed"))
        self._first = False

    def undo(self) -> None:
        self.target.apply_kernel(self.old, set_text=True)
