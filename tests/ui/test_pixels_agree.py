"""One pixel pipeline (issue 12, "Done when"): the GUI's save, ``blurapp apply``, ``blurapp batch``
and ``blurapp.filter_image`` give the same pixels for the same settings, on grey, RGB, RGBA with
partial alpha, 16-bit and float images, with the planner's choice and with the reference."""

from __future__ import annotations

import numpy as np
import pytest

import blurapp
from blurapp import cli
from blurapp.io import read_image, write_image

WAIT_MS = 30000
SPEC = "gaussian:sigma=3"


def _texture(shape: tuple[int, ...], dtype: type, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.random(shape, dtype=np.float32)
    top = np.iinfo(dtype).max
    img = rng.integers(0, top + 1, size=shape, dtype=dtype)
    img[: shape[0] // 2, shape[1] // 3 : shape[1] // 2] = top // 5 * 4  # an edge to blur
    return img


def _edge_rgba() -> np.ndarray:
    """Transparent red | opaque green, then partial alpha over texture: blurring straight alpha
    drags red into the green (issue 12's [78, 177, 0, 177])."""
    img = _texture((26, 34, 4), np.uint8, 5)
    img[:13, :17] = (255, 0, 0, 0)
    img[:13, 17:] = (0, 255, 0, 255)
    img[13:, :, 3] = np.linspace(0, 255, 34).astype(np.uint8)
    return img


IMAGES = {
    "grey-uint8.png": lambda: _texture((27, 35), np.uint8, 1),
    "rgb-uint8.png": lambda: _texture((27, 35, 3), np.uint8, 2),
    "rgba-uint8.png": _edge_rgba,
    "rgb-uint16.png": lambda: _texture((21, 29, 3), np.uint16, 3),
    "rgb-float32.npy": lambda: _texture((19, 23, 3), np.float32, 4),
}


@pytest.mark.parametrize("strategy", ["auto", "cpu"])
@pytest.mark.parametrize("name", list(IMAGES))
def test_gui_save_apply_batch_and_filter_image_agree(
    qtbot, window, tmp_path, name, strategy, save_and_wait
) -> None:
    pixels = IMAGES[name]()
    source = tmp_path / "in" / name
    source.parent.mkdir()
    write_image(source, pixels)
    stored = read_image(source).pixels
    options = ["--kernel", SPEC, "--strategy", strategy]

    assert cli.main(["apply", str(source), "-o", str(tmp_path / f"apply-{name}"), *options]) == 0
    applied = read_image(tmp_path / f"apply-{name}").pixels

    batch_dir = tmp_path / "batch"
    assert cli.main(["batch", str(source), "-o", str(batch_dir), "--quiet", *options]) == 0
    (batch_file,) = batch_dir.iterdir()
    batched = read_image(batch_file).pixels

    api = blurapp.filter_image(stored, SPEC, strategy=strategy).image

    window.strategy_combo.setCurrentText(strategy)
    window.request_spec(SPEC, "code")
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        assert window.open_path(source)
    assert window.result is not None and window.result.spec == window.model.spec
    save_and_wait(window, tmp_path / f"gui-{name}")
    saved = read_image(tmp_path / f"gui-{name}").pixels

    assert applied.dtype == stored.dtype
    for other in (batched, api, window.result.image, saved):
        assert other.dtype == applied.dtype and other.shape == applied.shape
        assert np.array_equal(other, applied)
    if name.startswith("rgba"):
        # Premultiplied: where alpha is partial at the transparent-red | green edge, the colour
        # is the green's alone, not a red fringe.
        edge = saved[0, 10:17]
        partial = (edge[:, 3] > 0) & (edge[:, 3] < 255)
        assert partial.any()
        assert (edge[partial, 0] == 0).all() and (edge[partial, 1] == 255).all()


@pytest.mark.parametrize("suffix", [".bmp", ".jpg"])
def test_saving_16_bit_as_8_bit_rounds_once_like_apply(
    qtbot, window, tmp_path, monkeypatch, suffix, save_and_wait
) -> None:
    """A 16-bit source saved as an 8-bit format is filtered straight into uint8, as ``apply``
    does, not rounded to 16 bits first and then to 8."""
    from blurapp.ui import files

    calls: list[object] = []
    filter_pixels = files.pipeline.filter_pixels

    def spy(pixels, spec, **kwargs):
        calls.append(kwargs.get("dtype"))
        return filter_pixels(pixels, spec, **kwargs)

    source = tmp_path / "in.png"
    write_image(source, _texture((33, 41, 3), np.uint16, 8))
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        assert window.open_path(source)
    assert window.result.image.dtype == np.uint16
    out = tmp_path / f"apply{suffix}"
    assert cli.main(["apply", str(source), "-o", str(out), "--kernel", window.kernel.spec,
                     "--strategy", "cpu"]) == 0  # fmt: skip
    monkeypatch.setattr(files.pipeline, "filter_pixels", spy)
    save_and_wait(window, tmp_path / f"gui{suffix}")
    monkeypatch.undo()
    assert calls == [np.dtype(np.uint8)]  # from the stored pixels, not from the 16-bit result
    gui = read_image(tmp_path / f"gui{suffix}").pixels
    assert gui.dtype == np.uint8
    assert np.array_equal(gui, read_image(out).pixels)


def test_save_never_writes_a_stale_result(
    qtbot, window, small_image, tmp_path, save_and_wait
) -> None:
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.set_image(small_image)
    old = window.result
    window.border_combo.setCurrentText("wrap")  # its live run is still to come
    assert window.result is old and old.spec != window.model.spec
    save_and_wait(window, tmp_path / "now.png")
    expected = blurapp.filter_image(small_image, window.model.spec).image
    assert np.array_equal(read_image(tmp_path / "now.png").pixels, expected)
    assert not np.array_equal(expected, old.image)
