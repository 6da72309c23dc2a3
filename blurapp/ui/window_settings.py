"""What the window remembers between runs (QSettings): the filter spec and the window's layout.

Keys: ``kernel/last``; ``run/strategy``, ``run/tile``, ``run/border``, ``run/range``,
``run/alpha``, ``run/linear``, ``run/convolve``, ``run/dtype``, ``run/channels``,
``run/tolerance``; ``window/geometry`` and
``window/state``. (``files/...`` belong to :mod:`blurapp.ui.files`.)

Every value is read through :class:`SettingsReader`: a settings file is the user's (edited by
hand, written by another version, a sync tool's merge), so a value of any type in any key (a
``@Point(1 2)`` where a list of paths should be, a number, bytes Qt cannot read) gives that
key's default and one warning, never an error at start; a value that no longer makes sense (a
strategy renamed, a kernel spec now refused) loses only itself, with its warning.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow

from blurapp.core.errors import BlurappError, one_line
from blurapp.core.filterspec import FilterSpec
from blurapp.ui.model import DEFAULT_SPEC

__all__ = [
    "SettingsReader",
    "load_spec",
    "restore_layout",
    "store_layout",
    "store_spec",
]

log = logging.getLogger("blurapp.ui.settings")


def _describe(value: object) -> str:
    """A value for a warning: its type and the start of its text."""
    text = one_line(repr(value))
    if len(text) > 48:
        text = text[:45] + "..."
    return text


class SettingsReader:
    """Reads a QSettings defensively: each accessor returns the key's value when it has the
    type the window writes there, else the default, with one warning per key (logged, and
    kept in :attr:`problems` for the window to show)."""

    def __init__(self, settings: QSettings) -> None:
        self.settings = settings
        self.problems: list[str] = []
        self._warned: set[str] = set()

    def warn(self, key: str, why: str) -> None:
        """Record that ``key`` was ignored (once per key)."""
        if key in self._warned:
            return
        self._warned.add(key)
        message = f"setting {key} ignored ({why}); the default is used"
        self.problems.append(message)
        log.warning("%s", message)

    def raw(self, key: str) -> object:
        try:
            return self.settings.value(key)
        except Exception as err:  # Qt or PySide cannot make a Python value of what is stored
            self.warn(key, f"unreadable: {type(err).__name__}")
            return None

    def _typed(self, key: str, what: str, convert: Callable[[object], object]) -> object:
        value = self.raw(key)
        if value is None or value == "":  # "key=" in a file written by hand: not set
            return None
        try:
            return convert(value)
        except (TypeError, ValueError, OverflowError):
            self.warn(key, f"{_describe(value)} is not {what}")
            return None

    def text(self, key: str, default: str | None = None) -> str | None:
        """A string (``default`` when absent or of another type)."""

        def convert(value: object) -> str:
            if not isinstance(value, str) or "\x00" in value:
                raise TypeError
            return value

        found = self._typed(key, "text", convert)
        return default if found is None else found  # type: ignore[return-value]

    def flag(self, key: str) -> bool | None:
        """A bool (IniFormat gives back "true"/"false"; native formats give bools)."""

        def convert(value: object) -> bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise TypeError

        return self._typed(key, "true or false", convert)  # type: ignore[return-value]

    def whole(self, key: str) -> int | None:
        """A whole number, or ``None`` for "" and "auto" (a tile side)."""

        def convert(value: object) -> int | None:
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise TypeError
            if value in ("", "auto"):
                return None
            return int(value)

        return self._typed(key, "a whole number", convert)  # type: ignore[return-value]

    def number(self, key: str) -> float | None:
        """A real number, or ``None`` for ""."""

        def convert(value: object) -> float | None:
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise TypeError
            return None if value == "" else float(value)

        return self._typed(key, "a number", convert)  # type: ignore[return-value]

    def blob(self, key: str) -> QByteArray | None:
        """Bytes Qt saved (window geometry and state)."""

        def convert(value: object) -> QByteArray | None:
            if not isinstance(value, QByteArray):
                raise TypeError
            return None if value.isEmpty() else value

        return self._typed(key, "saved window bytes", convert)  # type: ignore[return-value]

    def paths(self, key: str) -> list[str]:
        """A list of file paths (one path comes back from IniFormat as a string); entries of
        another type are dropped, with the key's one warning."""
        value = self.raw(key)
        if value is None:
            return []
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            self.warn(key, f"{_describe(value)} is not a list of files")
            return []
        good = [p for p in items if isinstance(p, str) and p and "\x00" not in p]
        if len(good) != len(items):
            bad = next(p for p in items if p not in good)
            self.warn(key, f"{_describe(bad)} is not a file path")
        return good


# setting key -> FilterSpec field, for the fields stored as text
_TEXT_KEYS = {
    "run/border": "border",
    "run/range": "range_mode",
    "run/alpha": "alpha",
    "run/dtype": "dtype",
    "run/channels": "channels",
}
_BOOL_KEYS = {"run/linear": "linear", "run/convolve": "convolve"}


def load_spec(settings: QSettings | SettingsReader) -> FilterSpec:
    """The spec of the last session (each field on its own: one bad value loses only itself,
    with a warning in the reader's :attr:`~SettingsReader.problems`)."""
    reader = settings if isinstance(settings, SettingsReader) else SettingsReader(settings)
    spec = FilterSpec.create(DEFAULT_SPEC)
    last = reader.text("kernel/last")
    if last:
        try:
            spec = FilterSpec.create(last)
        except BlurappError as err:
            reader.warn("kernel/last", str(err))
    changes: list[tuple[str, dict[str, object]]] = []
    strategy = reader.text("run/strategy")
    if strategy:
        changes.append(("run/strategy", {"strategy": strategy, "tile": reader.whole("run/tile")}))
    for key, field in _TEXT_KEYS.items():
        value = reader.text(key)
        if value:
            changes.append((key, {field: value}))
    for key, field in _BOOL_KEYS.items():
        on = reader.flag(key)
        if on is not None:
            changes.append((key, {field: on}))
    tolerance = reader.number("run/tolerance")
    if tolerance is not None:
        changes.append(("run/tolerance", {"tolerance": tolerance}))
    for key, change in changes:
        try:
            spec = spec.replace(**change)
        except BlurappError as err:
            reader.warn(key, str(err))
    return spec


def store_spec(settings: QSettings, spec: FilterSpec) -> None:
    """Remember ``spec`` for the next session."""
    settings.setValue("kernel/last", spec.kernel.spec)
    settings.setValue("run/strategy", spec.strategy)
    settings.setValue("run/tile", "" if spec.tile is None else str(spec.tile))
    settings.setValue("run/border", spec.border.name)
    settings.setValue("run/range", spec.range_mode)
    settings.setValue("run/alpha", spec.alpha)
    settings.setValue("run/dtype", spec.dtype or "")
    settings.setValue("run/linear", spec.linear)
    settings.setValue("run/convolve", spec.convolve)
    settings.setValue("run/channels", spec.channels or "")
    settings.setValue("run/tolerance", "" if spec.tolerance is None else repr(spec.tolerance))


def restore_layout(
    window: QMainWindow,
    settings: QSettings | SettingsReader,
    side_dock: QDockWidget,
    bottom_dock: QDockWidget,
) -> None:
    """The window's size, position and docks as they were; a first start gets a size that fits
    the screen."""
    reader = settings if isinstance(settings, SettingsReader) else SettingsReader(settings)
    geometry = reader.blob("window/geometry")
    restored = geometry is not None and window.restoreGeometry(geometry)
    if geometry is not None and not restored:
        reader.warn("window/geometry", "Qt cannot read the bytes saved there")
    if not restored:
        # First start: 1440×920, but never larger than 90 % of the screen (a laptop's
        # 1366×768 must show the whole window), the docks scaled alike.
        width, height = 1440, 920
        screen = window.screen() or QApplication.primaryScreen()
        if screen is not None:
            available = screen.availableGeometry()
            width = min(width, int(available.width() * 0.9))
            height = min(height, int(available.height() * 0.9))
        window.resize(width, height)
        window.resizeDocks([side_dock], [width * 440 // 1440], Qt.Orientation.Horizontal)
        # Tall enough for a row per compared strategy (seven) without scrolling.
        window.resizeDocks([bottom_dock], [height * 250 // 920], Qt.Orientation.Vertical)
    state = reader.blob("window/state")
    if state is not None and not window.restoreState(state):
        reader.warn("window/state", "Qt cannot read the bytes saved there")


def store_layout(window: QMainWindow, settings: QSettings) -> None:
    settings.setValue("window/geometry", window.saveGeometry())
    settings.setValue("window/state", window.saveState())
