"""NumPy ``.npy`` arrays: H×W or H×W×C of uint8, uint16, float32 or float64, kept exactly."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import numpy as np

from blurapp.core.errors import ImageError
from blurapp.io.codecs.base import Codec, ImageData, ImageInfo, ReadOptions, WriteOptions


class NpyCodec(Codec):
    name = "npy"
    label = ".npy"
    extensions = (".npy",)
    magic = "93 4E 55 4D 50 59 (\\x93NUMPY)"
    dtypes = ("uint8", "uint16", "float32", "float64")
    description = "NumPy array"
    library = "numpy"

    def sniff(self, head: bytes, path: Path) -> bool:
        return head.startswith(b"\x93NUMPY")

    def probe(self, path: Path) -> ImageInfo:
        # A memory map reads the header only; the pixels stay on disk.
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        shape, dtype = tuple(arr.shape), arr.dtype
        del arr
        if len(shape) not in (2, 3):
            raise ImageError(f"cannot read {path}: an image array is H×W or H×W×C, not {shape}")
        channels = 1 if len(shape) == 2 else shape[2]
        return ImageInfo("npy", int(shape[1]), int(shape[0]), int(channels), np.dtype(dtype))

    def read(self, path: Path, options: ReadOptions) -> ImageData:
        arr = np.load(path, allow_pickle=False)
        if arr.dtype.kind in "fu" and arr.dtype.byteorder not in ("=", "|"):
            arr = arr.astype(arr.dtype.newbyteorder("="))  # big-endian files: native order
        return ImageData(np.ascontiguousarray(arr), "npy")

    def fit_channels(self, pixels: np.ndarray) -> np.ndarray:
        return pixels  # an array is kept as it is, H×W×1 included

    def encode(self, fh: IO[bytes], data: ImageData, options: WriteOptions) -> None:
        np.save(fh, data.pixels, allow_pickle=False)


CODEC = NpyCodec()
