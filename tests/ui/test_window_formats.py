"""The window with issue 25's files: a HEIC, a camera raw DNG and an animation open; the frame
slider previews each frame; a save writes every frame, filtered with the same settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

import blurapp
from blurapp.io import read_image

WAIT_MS = 30000


def open_path(qtbot, window, path: Path) -> None:
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        assert window.open_path(path)
    assert window.image_path == path


def frames_of(path: Path) -> tuple[list[np.ndarray], list[int]]:
    with Image.open(path) as im:
        frames, durations = [], []
        for i in range(im.n_frames):
            im.seek(i)
            frames.append(np.asarray(im.convert("RGB")))
            durations.append(im.info.get("duration"))
        return frames, durations


def make_animation(path: Path) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, (21, 33, 3), dtype=np.uint8) for _ in range(3)]
    images = [Image.fromarray(f) for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=[30, 60, 90],
                   loop=0, lossless=True)  # fmt: skip
    return frames


def test_an_animation_shows_its_frames_and_saves_them_all(
    qtbot, window, tmp_path, save_and_wait
) -> None:
    src = tmp_path / "anim.webp"
    frames = make_animation(src)
    open_path(qtbot, window, src)
    bar = window.frame_bar
    assert not bar.isHidden() and bar.label.text() == "Frame 1/3"
    assert "3 frames" in window.image_label.text()
    np.testing.assert_array_equal(window.model.image, frames[0])
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        bar.slider.setValue(2)  # the user drags the slider to the last frame
    assert bar.label.text() == "Frame 3/3"
    np.testing.assert_array_equal(window.model.image, frames[2])
    np.testing.assert_array_equal(  # the preview is the current frame filtered
        window.result.image, blurapp.filter_image(frames[2], window.model.spec).image
    )
    out = tmp_path / "out.png"  # an APNG: lossless, so the frames compare exactly
    save_and_wait(window, out)
    got, durations = frames_of(out)
    assert durations == [30, 60, 90] and len(got) == 3
    for frame, want in zip(got, frames, strict=True):
        np.testing.assert_array_equal(frame, blurapp.filter_image(want, window.model.spec).image)
    save_and_wait(window, tmp_path / "out.webp")  # its own format: every frame, its timing
    assert frames_of(tmp_path / "out.webp")[1] == [30, 60, 90]
    # A still image afterwards hides the slider.
    still = tmp_path / "still.png"
    Image.fromarray(frames[0]).save(still)
    open_path(qtbot, window, still)
    assert bar.isHidden()


def test_a_heic_and_a_dng_open_and_save(qtbot, window, tmp_path, save_and_wait) -> None:
    import pillow_heif

    from tests.cli.test_new_formats import heif_decoded, libraw, make_dng

    rng = np.random.default_rng(5)
    pixels = np.clip(rng.normal(128, 20, (30, 44, 3)), 0, 255).astype(np.uint8)
    src = tmp_path / "IMG_0001.HEIC"
    pillow_heif.from_bytes(mode="RGB", size=(44, 30), data=pixels.tobytes()).save(src, quality=90)
    open_path(qtbot, window, src)
    decoded = heif_decoded(src)
    np.testing.assert_array_equal(window.model.image, decoded)
    save_and_wait(window, tmp_path / "heic.png")
    np.testing.assert_array_equal(
        read_image(tmp_path / "heic.png").pixels,
        blurapp.filter_image(decoded, window.model.spec).image,
    )
    dng = make_dng(tmp_path / "shot.dng")
    open_path(qtbot, window, dng)
    np.testing.assert_array_equal(window.model.image, libraw(dng))
    save_and_wait(window, tmp_path / "shot.tif")
    got = read_image(tmp_path / "shot.tif").pixels
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, blurapp.filter_image(libraw(dng), window.model.spec).image)


def test_what_the_decoder_leaves_out_is_said_in_the_status_bar(qtbot, window, tmp_path) -> None:
    frames = [Image.fromarray(np.full((16, 24, 3), 40 * i, np.uint8)) for i in range(3)]
    src = tmp_path / "sequence.avif"  # an AVIF image sequence: its primary image is read
    frames[0].save(src, save_all=True, append_images=frames[1:], duration=50)
    open_path(qtbot, window, src)
    message = window.statusBar().currentMessage()
    assert "image sequences and collections inside HEIF are not handled" in message
