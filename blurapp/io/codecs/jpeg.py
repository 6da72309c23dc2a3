"""JPEG through Pillow (libjpeg-turbo): 8-bit grey and RGB, ICC, EXIF and XMP carried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from blurapp.io.codecs.base import WriteOptions
from blurapp.io.codecs.pillow import PillowCodec


class JpegCodec(PillowCodec):
    name = "jpg"
    label = "JPEG"
    extensions = (".jpg", ".jpeg", ".jpe", ".jfif")
    magic = "FF D8 FF"
    dtypes = ("uint8",)
    channels = (1, 3)
    metadata = frozenset({"exif", "icc", "xmp"})
    lossy = True
    quality_note = "--quality 1..100; 4:4:4 chroma from 90 up"
    pillow_format = "JPEG"

    def sniff(self, head: bytes, path: Path) -> bool:
        return head.startswith(b"\xff\xd8\xff")

    def save_arguments(self, options: WriteOptions) -> dict[str, Any]:
        q = options.quality
        return {"quality": q, "subsampling": 0 if q >= 90 else 2}


CODEC = JpegCodec()
