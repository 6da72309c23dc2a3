"""Issue 18's attacks through the Python API (blurapp.filter_image): what the command line
refuses in one line, the API refuses with one BlurappError."""

from __future__ import annotations

import numpy as np
import pytest

import blurapp
from blurapp.core.errors import BlurappError, ImageError, StrategyError


def test_a_masked_array_is_refused_not_its_mask_ignored() -> None:
    image = np.ma.masked_array(np.zeros((5, 5)), mask=np.eye(5, dtype=bool))
    with pytest.raises(ImageError, match="mask would be ignored"):
        blurapp.filter_image(image, "box:3", strategy="cpu")
    # What the message suggests works.
    blurapp.filter_image(image.filled(0.0), "box:3", strategy="cpu")


@pytest.mark.parametrize("dtype", [">f4", ">f8", ">u2"])
def test_big_endian_arrays_are_named_clearly(dtype: str) -> None:
    image = np.zeros((4, 4), dtype)
    with pytest.raises(ImageError, match="non-native byte order") as info:
        blurapp.filter_image(image, "box:3", strategy="cpu")
    assert "astype" in str(info.value)


@pytest.mark.parametrize("tile", [16.0, "16", True])
def test_a_tile_that_is_not_an_integer_is_one_line(tile: object) -> None:
    with pytest.raises(StrategyError, match="tile must be an integer") as info:
        blurapp.filter_image(np.zeros((4, 4)), "box:3", strategy="tiled", tile=tile)
    assert "\n" not in str(info.value)


def test_every_refusal_is_a_blurapp_error() -> None:
    for bad in (
        dict(kernel="gaussian:sigma=1e-200"),
        dict(kernel="matrix:1x1:1e39"),
        dict(kernel="box:3", border="constant=1e300"),
    ):
        with pytest.raises(BlurappError):
            blurapp.filter_image(np.zeros((4, 4)), **bad)
