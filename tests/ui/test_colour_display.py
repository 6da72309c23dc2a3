"""The colour-managed window: pictures of an image with an ICC profile (Display P3, Adobe RGB)
are painted converted to the screen's space, within two levels of littlecms' conversion of the
file's pixels, while filtering and saving keep the file's own pixels and profile."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageCms
from PySide6.QtGui import QColorSpace, QImage

from blurapp.io import read_image
from blurapp.ui.convert import to_qimage
from blurapp.ui.image_view import (
    DISPLAY_PROFILE_ENV,
    DisplayColour,
    ImageView,
    _lcms_convert,
    _lcms_transform,
)

WAIT_MS = 60000


def _profile(name: str) -> bytes:
    """A real matrix/TRC ICC profile of a named space, as Qt writes it (littlecms reads it)."""
    return bytes(QColorSpace(getattr(QColorSpace.NamedColorSpace, name)).iccProfile())


def _saturated(shape: tuple[int, int] = (48, 64)) -> np.ndarray:
    """Saturated colours, ramps and a random field: what moves most between P3 and sRGB."""
    rng = np.random.default_rng(11)
    img = rng.integers(0, 256, (*shape, 3)).astype(np.uint8)
    img[:8, :16] = (230, 40, 30)
    img[:8, 16:32] = (40, 200, 60)
    img[:8, 32:48] = (30, 60, 220)
    img[8:16] = np.linspace(0, 255, shape[1]).astype(np.uint8)[None, :, None]
    return img


def _lcms_to_srgb(pixels: np.ndarray, icc: bytes) -> np.ndarray:
    mode = "RGBA" if pixels.shape[2] == 4 else "RGB"
    src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
    dst = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))
    out = ImageCms.profileToProfile(
        Image.fromarray(pixels, mode), src, dst,
        renderingIntent=ImageCms.Intent.RELATIVE_COLORIMETRIC, outputMode=mode,
    )  # fmt: skip
    return np.asarray(out)


def _array(image: QImage, channels: int = 3) -> np.ndarray:
    fmt = QImage.Format.Format_RGBA8888 if channels == 4 else QImage.Format.Format_RGB888
    image = image.convertToFormat(fmt)
    width, height = image.width(), image.height()
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(height, image.bytesPerLine())
    return rows[:, : width * channels].reshape(height, width, channels).copy()


def _painted(view: ImageView, channels: int = 3) -> np.ndarray:
    return _array(view._item.pixmap().toImage(), channels)


@pytest.mark.parametrize("space", ["DisplayP3", "AdobeRgb", "ProPhotoRgb"])
def test_pictures_are_converted_as_littlecms_converts_them(qtbot, space: str) -> None:
    icc = _profile(space)
    pixels = _saturated()
    view = ImageView()
    qtbot.addWidget(view)
    view.set_colour_profile(icc)
    assert view.colour().managed
    view.set_image(to_qimage(pixels))
    painted = _painted(view)
    expected = _lcms_to_srgb(pixels, icc)
    assert np.abs(painted.astype(int) - expected).max() <= 2
    # And it is a real change: a saturated P3 or Adobe RGB colour is not the same sRGB numbers.
    assert np.abs(painted.astype(int) - pixels).max() > 10
    # Patches and the "before" picture go through the same conversion.
    view.set_patch(to_qimage(pixels[:8, :16]), 0, 0)
    patch = _array(view._patches[0].pixmap().toImage())
    assert np.abs(patch.astype(int) - expected[:8, :16]).max() <= 2
    view.set_before(to_qimage(pixels))
    before = _array(view._before.toImage())
    assert np.abs(before.astype(int) - expected).max() <= 2


def test_alpha_is_kept_and_colour_converted(qtbot) -> None:
    icc = _profile("DisplayP3")
    rgba = np.dstack(
        [_saturated(), np.linspace(0, 255, 64).astype(np.uint8)[None, :].repeat(48, 0)]
    )
    rgba[..., 3] = np.maximum(rgba[..., 3], 255)  # opaque: premultiplied storage keeps colours
    view = ImageView()
    qtbot.addWidget(view)
    view.set_colour_profile(icc)
    view.set_image(to_qimage(rgba))
    painted = _painted(view, 4)
    expected = _lcms_to_srgb(rgba, icc)
    assert np.abs(painted.astype(int) - expected).max() <= 2
    assert (painted[..., 3] == 255).all()


def test_no_profile_or_srgb_leaves_pictures_as_they_are(qtbot) -> None:
    pixels = _saturated()
    for icc in (None, b"", ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()):
        view = ImageView()
        qtbot.addWidget(view)
        view.set_colour_profile(icc)
        view.set_image(to_qimage(pixels))
        painted = _painted(view)
        assert np.abs(painted.astype(int) - pixels).max() <= 1, icc and len(icc)


def test_an_unreadable_profile_shows_the_pixels_unmanaged(qtbot) -> None:
    colour = DisplayColour(b"not an ICC profile at all")
    assert not colour.managed
    image = to_qimage(_saturated())
    assert colour.convert(image) is image


def test_littlecms_fallback_converts_as_littlecms(qtbot) -> None:
    """The path for profiles Qt does not read: the QImage plumbing (strides, alpha) around
    littlecms gives littlecms' own result."""
    icc = _profile("AdobeRgb")
    transforms = _lcms_transform(icc, QColorSpace(QColorSpace.NamedColorSpace.SRgb))
    assert transforms is not None and "Adobe" in transforms[2]
    pixels = _saturated((37, 51))  # odd width: QImage rows are padded to 4 bytes
    out = _array(_lcms_convert(to_qimage(pixels), transforms))
    # Qt's sRGB profile as the target against Pillow's own sRGB: the same space, ±1 in rounding.
    assert np.abs(out.astype(int) - _lcms_to_srgb(pixels, icc)).max() <= 1


def test_the_screen_profile_can_be_named(qtbot, tmp_path: Path, monkeypatch) -> None:
    """A calibrated monitor's profile as the target: P3 pixels on a P3 screen stay as they are."""
    screen = tmp_path / "monitor.icc"
    screen.write_bytes(_profile("DisplayP3"))
    monkeypatch.setenv(DISPLAY_PROFILE_ENV, str(screen))
    assert not DisplayColour(_profile("DisplayP3")).managed
    assert DisplayColour(_profile("AdobeRgb")).managed


def test_window_shows_a_p3_photo_converted_and_saves_its_own_pixels_and_profile(
    qtbot, window, tmp_path: Path, save_and_wait
) -> None:
    icc = _profile("DisplayP3")
    pixels = _saturated()
    photo = tmp_path / "phone.png"
    Image.fromarray(pixels).save(photo, icc_profile=icc)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        assert window.open_path(photo)
    view = window.compare.result_view
    assert view.colour().managed and "P3" in view.colour().description
    assert "Display P3 shown as the screen's" in window.image_label.text()
    expected = _lcms_to_srgb(np.asarray(window.result.image), icc)
    qtbot.waitUntil(lambda: view.picture_size() == (64, 48), timeout=WAIT_MS)
    assert np.abs(_painted(view).astype(int) - expected).max() <= 2  # converted once
    # ... by the worker that made the picture (littlecms lets the GIL go), not the UI thread
    from blurapp.ui.convert import CONVERTED_KEY

    assert window.result.display.text(CONVERTED_KEY) == view.colour().key != ""
    # Filtering ran on the file's own pixels, and the save keeps them and the profile.
    out = tmp_path / "saved.png"
    save_and_wait(window, out)
    saved = read_image(out)
    assert saved.icc_profile == icc
    np.testing.assert_array_equal(saved.pixels, window.result.image)
    import blurapp

    np.testing.assert_array_equal(
        saved.pixels, blurapp.filter_image(pixels, window.model.spec).image
    )


def test_window_linear_light_follows_the_files_curve_as_apply_does(
    qtbot, window, tmp_path: Path, save_and_wait
) -> None:
    """An Adobe RGB photo with Linear light: the window's result and its save are what
    ``blurapp apply --linear`` writes (the profile's 2.2 gamma), not the sRGB-curve result."""
    from blurapp.cli import main
    from blurapp.io.icc import profile_curves
    from blurapp.pipeline import filter_pixels

    icc = _profile("AdobeRgb")
    pixels = np.zeros((40, 60, 3), np.uint8)
    pixels[:, 30:] = 40  # black beside dark grey: where sRGB's curve and 2.2 differ most
    photo = tmp_path / "adobe.png"
    Image.fromarray(pixels).save(photo, icc_profile=icc)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        assert window.open_path(photo)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.run_panel.linear_check.setChecked(True)
    spec = window.model.spec
    assert spec.linear
    expected = filter_pixels(pixels, spec, curves=profile_curves(icc)).image
    np.testing.assert_array_equal(window.result.image, expected)
    assert np.abs(filter_pixels(pixels, spec).image.astype(int) - expected).max() >= 2
    out = tmp_path / "saved.png"
    save_and_wait(window, out)
    applied = tmp_path / "applied.png"
    assert main(["apply", str(photo), "-o", str(applied), *spec.to_argv()]) == 0
    np.testing.assert_array_equal(read_image(out).pixels, read_image(applied).pixels)


def test_the_comparison_views_decode_with_the_files_curve(qtbot) -> None:
    """run_strategies' reference pane (and so every pane's error) and run_borders' panes take
    the same curves as the main result: the cpu pane equals filter_pixels with them."""
    from blurapp.core.filterspec import FilterSpec
    from blurapp.io.icc import profile_curves
    from blurapp.pipeline import filter_pixels
    from blurapp.ui.jobs import run_borders, run_strategies

    curves = profile_curves(_profile("AdobeRgb"))
    pixels = np.zeros((24, 30, 3), np.uint8)
    pixels[:, 15:] = 40
    spec = FilterSpec.create("box:5", "mirror", "cpu", linear=True)
    expected = filter_pixels(pixels, spec, curves=curves).image
    assert np.abs(filter_pixels(pixels, spec).image.astype(int) - expected).max() >= 2
    found = run_strategies(pixels, spec, lambda: None, lambda _: None, curves=curves)
    cpu = next(r for r in found.runs if r.strategy == "cpu")
    np.testing.assert_array_equal(_array(cpu.qimage), expected)
    borders = run_borders(pixels, spec, "top-left", 64, "mirror", lambda: None, lambda _: None,
                          curves=curves)  # fmt: skip
    mirror = next(p for p in borders.panes if p.mode == "mirror")  # the crop is the image
    np.testing.assert_array_equal(_array(mirror.qimage), expected)
