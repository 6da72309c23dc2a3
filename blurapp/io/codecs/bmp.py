"""BMP through Pillow: 8-bit grey and RGB, no metadata (its 32-bit alpha is read back as
padding by most readers, so alpha is not written)."""

from __future__ import annotations

from pathlib import Path

from blurapp.io.codecs.pillow import PillowCodec


class BmpCodec(PillowCodec):
    name = "bmp"
    label = "BMP"
    extensions = (".bmp", ".dib")
    magic = "42 4D (BM)"
    dtypes = ("uint8",)
    channels = (1, 3)
    pillow_format = "BMP"

    def sniff(self, head: bytes, path: Path) -> bool:
        return head[:2] == b"BM"


CODEC = BmpCodec()
