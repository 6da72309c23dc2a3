"""Undo and redo on the window's QUndoStack: one :class:`SetKernelCommand` per kernel edit, with
a run of quick parameter steps (a spin box held down, a slider dragged) merged into one, and one
:class:`SetSpecCommand` per change of another setting that decides pixels (border, strategy,
tile, range, alpha, linear light, convolve, output type), quick steps of one setting merged."""

from __future__ import annotations

import dataclasses
import time
from typing import Protocol

from PySide6.QtGui import QUndoCommand

from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel

__all__ = ["PARAM_MERGE_S", "KernelTarget", "SetKernelCommand", "SetSpecCommand", "SpecTarget"]

#: Where an edit came from the spec field: "typing" a keystroke that made a valid spec (applied
#: at once), "typed" its Enter or the pause after it.
TYPED = ("typing", "typed")
PARAM_MERGE_S = 1.0  # spin-box steps within this many seconds are one undo step


class KernelTarget(Protocol):
    """What a kernel edit changes: the window, which hands the kernel to its model."""

    def apply_kernel(self, kernel: Kernel, *, set_text: bool = True) -> None: ...


class SpecTarget(Protocol):
    """What a settings change changes: the window, which hands the spec to its model."""

    def apply_spec(self, spec: FilterSpec) -> None: ...


#: How the undo menu names a field of the spec.
FIELD_NAMES = {"range_mode": "range", "dtype": "output type", "linear": "linear light"}


def changed_fields(old: FilterSpec, new: FilterSpec) -> tuple[str, ...]:
    """The names of the fields of the spec that differ between ``old`` and ``new``."""
    return tuple(
        f.name
        for f in dataclasses.fields(FilterSpec)
        if getattr(old, f.name) != getattr(new, f.name)
    )


def _describe(spec: FilterSpec, fields: tuple[str, ...]) -> str:
    parts = []
    for name in fields:
        value = getattr(spec, name)
        if name == "border":
            value = spec.border.name
        elif name == "kernel":
            value = spec.kernel.name
        elif name == "channels":
            value = value or "all"
        elif value is None:
            value = "auto" if name == "tile" else "as input"
        parts.append(f"{FIELD_NAMES.get(name, name)} {value}")
    return ", ".join(parts) or "settings"


class SetKernelCommand(QUndoCommand):
    """One kernel edit; consecutive parameter tweaks of one family merge into one step, and so
    do the kernels a spec passes through while it is typed (each keystroke that makes a valid
    spec applies at once).

    ``source`` says where the edit came from: ``typing`` or ``typed`` (the spec field: a
    keystroke, or Enter and the pause), ``params`` (the family's spin boxes), ``grid``, ``file``
    or ``code``.
    """

    ID = 1

    def __init__(
        self,
        target: KernelTarget,
        old: Kernel,
        new: Kernel,
        source: str,
        before: FilterSpec | None = None,
    ) -> None:
        super().__init__(f"kernel {new.spec if len(new.spec) < 40 else new.name}")
        self.target, self.old, self.new, self.source = target, old, new, source
        # The whole spec before the edit: a kernel the strategy cannot run moves the strategy
        # to auto, and undo must bring the strategy back with the kernel.
        self.before = before
        self.stamp = time.monotonic()
        self._first = True

    def id(self) -> int:
        return self.ID

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 (Qt override)
        if not isinstance(other, SetKernelCommand):
            return False
        # the keystrokes of one spec, up to its Enter (or pause): "typing" edits stay open
        typing = self.source == "typing" and other.source in TYPED
        if not (
            typing or (self.source == other.source == "params" and self.new.name == other.new.name)
        ):
            return False
        if other.stamp - self.stamp > PARAM_MERGE_S:
            return False
        self.new, self.stamp = other.new, other.stamp
        if typing:
            self.source = other.source
        self.setText(other.text())
        return True

    def redo(self) -> None:
        # The first redo of a typed edit must not rewrite what the user is typing.
        self.target.apply_kernel(self.new, set_text=not (self._first and self.source in TYPED))
        self._first = False

    def undo(self) -> None:
        if self.before is not None and hasattr(self.target, "apply_spec"):
            self.target.apply_spec(self.before)  # type: ignore[attr-defined]
        else:
            self.target.apply_kernel(self.old, set_text=True)


class SetSpecCommand(QUndoCommand):
    """One change of the settings that decide pixels, made already when it is pushed (the
    widgets write the model directly); quick steps that change the same settings merge."""

    ID = 2

    def __init__(self, target: SpecTarget, old: FilterSpec, new: FilterSpec) -> None:
        self.fields = changed_fields(old, new)
        super().__init__(_describe(new, self.fields))
        self.target, self.old, self.new = target, old, new
        self.stamp = time.monotonic()
        self._first = True

    def id(self) -> int:
        return self.ID

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 (Qt override)
        if not isinstance(other, SetSpecCommand) or other.fields != self.fields:
            return False
        if other.stamp - self.stamp > PARAM_MERGE_S or other.old != self.new:
            return False
        self.new, self.stamp = other.new, other.stamp
        self.setText(other.text())
        self.setObsolete(self.new == self.old)  # stepped back to where it started: no step
        return True

    def redo(self) -> None:
        if self._first:  # pushed after the change: it is on screen already
            self._first = False
            return
        self.target.apply_spec(self.new)

    def undo(self) -> None:
        self.target.apply_spec(self.old)
