"""The "Export CLI" command by construction: it parses back to the window's spec, and running
it writes the pixels that "Save result" writes."""

from __future__ import annotations

import shlex

import numpy as np
import pytest

from blurapp import cli
from blurapp.core.filterspec import FilterSpec
from blurapp.io import read_image, write_image

WAIT_MS = 30000


def _rgba() -> np.ndarray:
    """An RGBA image with texture, an edge and partial alpha (so alpha and range matter)."""
    rng = np.random.default_rng(11)
    img = rng.integers(0, 256, size=(24, 30, 4), dtype=np.uint8)
    img[:, :12] = (255, 0, 0, 0)  # transparent red beside opaque colour: the fringe test
    img[:, 12:20, 3] = 255
    return img


def _set_tiled_16(w) -> None:
    w.strategy_combo.setCurrentText("tiled")
    w.tile_combo.setCurrentIndex(w.tile_combo.findData(16))


# Each: how a user sets it in the window, and what the spec must then say.
SETTINGS = {
    "tiled-16": (_set_tiled_16, {"strategy": "tiled", "tile": 16}),
    "mirror": (lambda w: w.border_combo.setCurrentText("mirror"), {"border": "mirror"}),
    "constant": (lambda w: w.model.set_border("constant=0.25"), {"border": "constant=0.25"}),
    "offset": (
        lambda w: (w.request_spec("sobel:x", "code"), w.range_combo.setCurrentText("offset")),
        {"range_mode": "offset"},
    ),
    "straight": (lambda w: w.alpha_combo.setCurrentText("straight"), {"alpha": "straight"}),
    "linear": (lambda w: w.linear_check.setChecked(True), {"linear": True}),
    "convolve": (
        lambda w: (
            w.request_spec("motion:length=7,angle=30", "code"),
            w.convolve_check.setChecked(True),
        ),
        {"convolve": True},
    ),
    "uint16": (
        lambda w: w.dtype_combo.setCurrentIndex(w.dtype_combo.findData("uint16")),
        {"dtype": "uint16"},
    ),
}


@pytest.mark.parametrize("strategy", ["cpu", "auto"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_exported_command_reproduces_the_saved_pixels(
    qtbot, window, tmp_path, name, strategy, save_and_wait
) -> None:
    source = tmp_path / "in.png"
    write_image(source, _rgba())
    window.strategy_combo.setCurrentText(strategy)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        assert window.open_path(source)
    set_it, expected = SETTINGS[name]
    set_it(window)
    spec = window.model.spec
    for field, value in expected.items():
        got = spec.border.name if field == "border" else getattr(spec, field)
        assert got == value

    command = window.export_cli()
    argv = shlex.split(command)
    assert argv[:5] == ["blurapp", "apply", str(source), "-o", str(tmp_path / "in_filtered.png")]
    assert FilterSpec.from_argv(argv[5:]) == spec
    assert cli.main(argv[1:]) == 0

    saved = tmp_path / "gui.png"
    save_and_wait(window, saved)
    exported = read_image(argv[4]).pixels
    assert exported.dtype == read_image(saved).pixels.dtype
    np.testing.assert_array_equal(exported, read_image(saved).pixels)
