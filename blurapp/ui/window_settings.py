"""What the window remembers between runs (QSettings): the filter spec and the window's layout.

Keys: ``kernel/last``; ``run/strategy``, ``run/tile``, ``run/border``, ``run/range``,
``run/alpha``, ``run/linear``, ``run/convolve``, ``run/dtype``, ``run/channels``,
``run/tolerance``; ``window/geometry`` and
``window/state``. (``files/...`` belong to :mod:`blurapp.ui.files`.) A value that no longer
makes sense (a strategy renamed, a kernel spec now refused) is skipped, never an error at start.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow

from blurapp.core.errors import BlurappError
from blurapp.core.filterspec import FilterSpec
from blurapp.ui.model import DEFAULT_SPEC

__all__ = ["load_spec", "restore_layout", "store_layout", "store_spec"]

# setting key -> FilterSpec field, for the fields stored as text
_TEXT_KEYS = {
    "run/border": "border",
    "run/range": "range_mode",
    "run/alpha": "alpha",
    "run/dtype": "dtype",
    "run/channels": "channels",
}
_BOOL_KEYS = {"run/linear": "linear", "run/convolve": "convolve"}


def _as_bool(value: object) -> bool | None:
    # IniFormat gives back "true"/"false" strings; the native formats give bools.
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _as_tile(value: object) -> int | None:
    try:
        return int(value) if value not in (None, "", "auto") else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def load_spec(settings: QSettings) -> FilterSpec:
    """The spec of the last session (each field on its own: one bad value loses only itself)."""
    try:
        spec = FilterSpec.create(str(settings.value("kernel/last", DEFAULT_SPEC)))
    except BlurappError:
        spec = FilterSpec.create(DEFAULT_SPEC)
    changes: list[dict[str, object]] = []
    strategy = settings.value("run/strategy")
    if isinstance(strategy, str):
        changes.append({"strategy": strategy, "tile": _as_tile(settings.value("run/tile"))})
    for key, field in _TEXT_KEYS.items():
        value = settings.value(key)
        if isinstance(value, str) and value:
            changes.append({field: value})
    for key, field in _BOOL_KEYS.items():
        on = _as_bool(settings.value(key))
        if on is not None:
            changes.append({field: on})
    try:
        tolerance = float(str(settings.value("run/tolerance", "")))
    except ValueError:
        tolerance = None
    if tolerance is not None:
        changes.append({"tolerance": tolerance})
    for change in changes:
        try:
            spec = spec.replace(**change)
        except BlurappError:
            continue
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
    window: QMainWindow, settings: QSettings, side_dock: QDockWidget, bottom_dock: QDockWidget
) -> None:
    """The window's size, position and docks as they were; a first start gets a size that fits
    the screen."""
    geometry = settings.value("window/geometry")
    if isinstance(geometry, QByteArray) and not geometry.isEmpty():
        window.restoreGeometry(geometry)
    else:
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
    state = settings.value("window/state")
    if isinstance(state, QByteArray) and not state.isEmpty():
        window.restoreState(state)


def store_layout(window: QMainWindow, settings: QSettings) -> None:
    settings.setValue("window/geometry", window.saveGeometry())
    settings.setValue("window/state", window.saveState())
