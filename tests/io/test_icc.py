"""blurapp.io.icc: the transfer curves of real and hand-built ICC profiles, and --linear
following them through apply and batch (the file's own linear light, not sRGB's)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageCms

from blurapp.core.colour import SRGB, TransferCurve
from blurapp.core.filterspec import FilterSpec
from blurapp.core.reference import correlate
from blurapp.io import read_image
from blurapp.io.icc import profile_curves, transfer_curves
from blurapp.pipeline import filter_pixels


def _profile(tags: dict[bytes, bytes], colour_space: bytes = b"RGB ") -> bytes:
    """A minimal ICC v2 profile with these tags (enough for the tag table and TRCs)."""
    header_size, count = 128, len(tags)
    offset = header_size + 4 + 12 * count
    table, body = b"", b""
    for sig, data in tags.items():
        data += b"\0" * (-len(data) % 4)
        table += struct.pack(">4sII", sig, offset + len(body), len(data))
        body += data
    size = offset + len(body)
    header = struct.pack(">I4sI4s4s4s", size, b"lcms", 0x02100000, b"mntr", colour_space, b"XYZ ")
    header += b"\0" * 12 + b"acsp"
    header += b"\0" * (header_size - len(header))
    return header + struct.pack(">I", count) + table + body


def _curv(values: list[int]) -> bytes:
    return b"curv" + b"\0" * 4 + struct.pack(f">I{len(values)}H", len(values), *values)


def _para(function: int, params: list[float]) -> bytes:
    raw = [round(p * 65536) for p in params]
    return b"para" + b"\0" * 4 + struct.pack(f">HH{len(raw)}i", function, 0, *raw)


def test_curv_gamma_table_and_identity() -> None:
    gamma = _profile({b"rTRC": _curv([563]), b"gTRC": _curv([563]), b"bTRC": _curv([563])})
    curves = transfer_curves(gamma)
    assert curves.curves == (TransferCurve.gamma(563 / 256),)
    table = [round(65535 * (i / 255) ** 2.4) for i in range(256)]
    sampled = transfer_curves(
        _profile({b"rTRC": _curv(table), b"gTRC": _curv([256]), b"bTRC": _curv([])})
    )
    red, green, blue = sampled.curves
    x = np.linspace(0, 1, 101)
    np.testing.assert_allclose(red.to_linear(x), x**2.4, atol=5e-5)
    np.testing.assert_allclose(green.to_linear(x), x)  # gamma 1.0
    np.testing.assert_allclose(blue.to_linear(x), x)  # no entries: identity


def test_para_curves_and_a_grey_profile() -> None:
    p3_like = _para(3, [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045])
    srgb = transfer_curves(_profile({b"rTRC": p3_like, b"gTRC": p3_like, b"bTRC": p3_like}))
    assert srgb.curves == (SRGB,)  # sRGB's curve as s15Fixed16 is sRGB's
    grey = transfer_curves(_profile({b"kTRC": _para(0, [1.8])}, b"GRAY"))
    assert grey.curves[0].function == 0 and abs(grey.curves[0].params[0] - 1.8) < 1e-4


@pytest.mark.parametrize(
    ("name", "expected"),
    [("DisplayP3", SRGB), ("AdobeRgb", TransferCurve.gamma(563 / 256)), ("SRgb", SRGB)],
)
def test_real_profiles(name: str, expected: TransferCurve) -> None:
    """The profiles Qt writes for named spaces (littlecms reads them as Display P3 etc.)."""
    from PySide6.QtGui import QColorSpace

    icc = bytes(QColorSpace(getattr(QColorSpace.NamedColorSpace, name)).iccProfile())
    assert transfer_curves(icc).curves == (expected,)


def test_pillows_srgb_and_profiles_without_curves() -> None:
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    assert transfer_curves(srgb).curves == (SRGB,)
    lab = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()
    assert transfer_curves(lab) is None  # no TRC tags: sRGB's curve is used
    assert profile_curves(lab).curves == (SRGB,)
    for broken in (None, b"", b"junk" * 40, srgb[:140]):
        assert transfer_curves(broken) is None


ADOBE_RGB_TRC = _curv([563])  # Adobe RGB (1998): gamma 2.19921875 in every channel


def _adobe_photo(tmp_path: Path, shape=(40, 52, 3)) -> tuple[Path, np.ndarray, bytes]:
    icc = _profile({b"rTRC": ADOBE_RGB_TRC, b"gTRC": ADOBE_RGB_TRC, b"bTRC": ADOBE_RGB_TRC})
    pixels = np.random.default_rng(9).integers(0, 256, shape).astype(np.uint8)
    # Black beside a dark grey: where sRGB's curve and a 2.2 gamma differ most.
    pixels[:, : shape[1] // 2] = 0
    pixels[:, shape[1] // 2 :] = 40
    path = tmp_path / "adobe.png"
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG", icc_profile=icc)
    path.write_bytes(buf.getvalue())
    return path, pixels, icc


def _gamma_reference(pixels: np.ndarray, kernel: str, g: float) -> np.ndarray:
    lin = (pixels / 255.0) ** g
    out = correlate(lin, kernel, border="mirror") ** (1 / g)
    return np.clip(np.rint(out * 255), 0, 255).astype(np.uint8)


def test_linear_follows_the_profile_curve(tmp_path: Path) -> None:
    _, pixels, icc = _adobe_photo(tmp_path)
    spec = FilterSpec.create("box:5", "mirror", "cpu", linear=True)
    ours = filter_pixels(pixels, spec, curves=profile_curves(icc)).image
    expected = _gamma_reference(pixels, "box:5", 563 / 256)
    assert np.abs(ours.astype(int) - expected).max() <= 1
    srgb_way = filter_pixels(pixels, spec).image
    assert np.abs(srgb_way.astype(int) - expected).max() >= 2  # sRGB's curve is another result


def test_apply_and_batch_linear_use_the_files_profile(tmp_path: Path) -> None:
    from blurapp.cli import main

    path, pixels, icc = _adobe_photo(tmp_path, (700, 60, 3))  # taller than a band tile
    expected = _gamma_reference(pixels, "box:5", 563 / 256)
    out = tmp_path / "applied.png"
    args = ["-k", "box:5", "--border", "mirror", "--strategy", "cpu", "--linear"]
    assert main(["apply", str(path), "-o", str(out), *args]) == 0
    assert np.abs(read_image(out).pixels.astype(int) - expected).max() <= 1
    assert read_image(out).icc_profile == icc
    folder = tmp_path / "batch"
    assert main(["batch", str(path), "-o", str(folder), *args, "--quiet"]) == 0
    batched = read_image(folder / "adobe.png")
    np.testing.assert_array_equal(batched.pixels, read_image(out).pixels)
    assert batched.icc_profile == icc
