"""GIMP's Convolution Matrix in the grid editor (issue 19, item 2): the same pixels as GIMP's
formula, computed here with numpy; normalise kept through edits and resizes; real cell values."""

from __future__ import annotations

import numpy as np
import pytest

import blurapp

WAIT_MS = 30000

SHARPEN_5 = -np.ones((5, 5))
SHARPEN_5[2, 2] = 25.0  # sums to 1
EMBOSS_5 = np.array(
    [
        [-1, -1, -1, -1, 0],
        [-1, -1, -1, 0, 1],
        [-1, -1, 0, 1, 1],
        [-1, 0, 1, 1, 1],
        [0, 1, 1, 1, 1],
    ],
    dtype=np.float64,
)


def gimp_convolution_matrix(
    image: np.ndarray, matrix: np.ndarray, divisor: float, offset: float
) -> np.ndarray:
    """GIMP's formula per channel: sum(matrix · neighbourhood) / divisor + offset, the
    neighbourhood read with the edge pixels extended (GIMP's "Extend" border), rounded and
    clamped to 0..255."""
    r = matrix.shape[0] // 2
    src = np.pad(image.astype(np.float64), ((r, r), (r, r), (0, 0)), mode="edge")
    h, w = image.shape[:2]
    acc = np.zeros(image.shape, dtype=np.float64)
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            acc += matrix[i, j] * src[i : i + h, j : j + w]
    return np.clip(np.floor(acc / divisor + offset + 0.5), 0, 255).astype(np.uint8)


def _run(qtbot, window, image, matrix, *, divisor=1.0, offset=False):
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.set_image(image)
    editor = window.grid_editor
    window.kernel_tabs.setCurrentWidget(editor)
    editor.border.setCurrentText("clamp")
    editor.offset.setChecked(offset)
    editor.set_matrix(matrix, divisor)
    qtbot.waitUntil(
        lambda: window.result is not None and window.result.spec == window.spec, timeout=WAIT_MS
    )
    return window.result.image


def test_sharpen_5x5_as_gimp(qtbot, window, small_image) -> None:
    result = _run(qtbot, window, small_image, SHARPEN_5)
    assert window.spec.range_mode == "clamp" and window.spec.border.name == "clamp"
    np.testing.assert_array_equal(result, gimp_convolution_matrix(small_image, SHARPEN_5, 1, 0))
    # The same pixels from the command line's spec: the grid is a matrix spec.
    again = blurapp.filter_image(small_image, window.kernel.spec, strategy="cpu").image
    np.testing.assert_array_equal(result, again)


def test_emboss_with_offset_128_as_gimp(qtbot, window, small_image) -> None:
    result = _run(qtbot, window, small_image, EMBOSS_5, offset=True)
    assert window.spec.range_mode == "offset"
    gimp = gimp_convolution_matrix(small_image, EMBOSS_5, 1, 128)
    # blurapp's mid-grey is 127.5 (half of 255), GIMP's 128: at most one level apart.
    diff = result.astype(int) - gimp.astype(int)
    assert np.abs(diff).max() <= 1
    assert (diff == 0).mean() > 0.4


def test_divisor_divides_the_matrix(qtbot, window, small_image) -> None:
    box = np.ones((3, 3))
    result = _run(qtbot, window, small_image, box, divisor=9.0)
    np.testing.assert_allclose(window.kernel.weights, box / 9)
    gimp = gimp_convolution_matrix(small_image, box, 9, 0)
    assert np.abs(result.astype(int) - gimp.astype(int)).max() <= 1  # ties: rint vs floor+0.5


def test_normalise_persists_through_edits_and_resizes(qtbot, window) -> None:
    editor = window.grid_editor
    window.kernel_tabs.setCurrentWidget(editor)
    editor.set_matrix(np.ones((3, 3)))
    editor.normalise.setChecked(True)
    assert editor.divisor.value() == pytest.approx(9.0) and not editor.divisor.isEnabled()
    np.testing.assert_allclose(window.kernel.weights.sum(), 1.0)
    editor.set_cell(0, 0, 5.0)
    np.testing.assert_allclose(window.kernel.weights.sum(), 1.0)
    editor.cols.setValue(5)
    editor.rows.setValue(1)
    assert window.kernel.shape == (1, 5)
    np.testing.assert_allclose(window.kernel.weights.sum(), 1.0)
    # Off: the divisor stays as it was and resizing drops what falls outside.
    editor.normalise.setChecked(False)
    assert editor.divisor.isEnabled()


def test_cells_show_their_real_value(qtbot, window) -> None:
    editor = window.grid_editor
    window.kernel_tabs.setCurrentWidget(editor)
    editor.set_matrix(np.array([[4.47e-08, 1.0, 4.47e-08]]))
    item = editor.table.item(0, 0)
    assert item.text() == "4.47e-08"
    width = editor.table.columnWidth(0)
    assert editor.table.fontMetrics().horizontalAdvance(item.text()) < width


def test_alpha_weighting_and_border_are_the_specs(qtbot, window) -> None:
    editor = window.grid_editor
    editor.alpha_weighting.setChecked(False)
    assert window.spec.alpha == "straight"
    editor.alpha_weighting.setChecked(True)
    assert window.spec.alpha == "premultiply"
    editor.border.setCurrentText("wrap")
    assert window.spec.border.name == "wrap"
    window.border_combo.setCurrentText("mirror")
    assert editor.border.currentText() == "mirror"
    # Every channel is filtered until one is unchecked (the spec's channels: None).
    assert all(box.isChecked() and box.isEnabled() for box in editor.channels.values())


def test_channel_toggles_choose_what_is_filtered(qtbot, window, small_image) -> None:
    """Unchecking A keeps alpha as it was (the spec's channels are "rgb"); checking it again
    filters every channel; the boxes follow the spec."""
    from blurapp.core.filterspec import FilterSpec as Spec

    editor = window.grid_editor
    editor.channels["A"].setChecked(False)
    assert window.model.spec.channels == "rgb"
    assert Spec.from_argv(window.model.spec.to_argv()).channels == "rgb"
    editor.channels["A"].setChecked(True)
    assert window.model.spec.channels is None
    window.model.update(channels="gb")
    assert [box.isChecked() for box in editor.channels.values()] == [False, True, True, False]
