"""WebP through Pillow (libwebp): 8-bit RGB and RGBA, lossy or lossless, ICC, EXIF and XMP
carried, animated WebP frames with their durations and loop count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from blurapp.io.codecs.base import WriteOptions
from blurapp.io.codecs.pillow import PillowCodec


class WebpCodec(PillowCodec):
    name = "webp"
    label = "WebP"
    extensions = (".webp",)
    magic = "RIFF....WEBP"
    dtypes = ("uint8",)
    channels = (3, 4)  # WebP has no grey: grey is written as RGB
    metadata = frozenset({"exif", "icc", "xmp", "timing"})
    lossy = True
    multi_frame = True
    quality_note = "--quality 1..100, or --lossless"
    pillow_format = "WEBP"

    def sniff(self, head: bytes, path: Path) -> bool:
        return head[:4] == b"RIFF" and head[8:12] == b"WEBP"

    def save_arguments(self, options: WriteOptions) -> dict[str, Any]:
        lossless = options.lossless
        return {
            "quality": 100 if lossless else options.quality,
            "lossless": lossless,
            "exact": True,
        }


CODEC = WebpCodec()
