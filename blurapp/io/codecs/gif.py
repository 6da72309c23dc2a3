"""GIF through Pillow: still and animated, frames with their durations, loop count and disposal.

A GIF holds at most 256 colours per frame and one transparent one: writing one is lossy (each
frame gets its own palette, made from that frame alone, and alpha becomes on or off at 50 %).
A frame equal to the one before it is merged into it, durations added (as Pillow writes GIFs).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from blurapp.io.codecs.base import Animation, ImageData, WriteOptions
from blurapp.io.codecs.pillow import PillowCodec

#: The palette index kept for transparent pixels.
_TRANSPARENT = 255


class GifCodec(PillowCodec):
    name = "gif"
    label = "GIF"
    extensions = (".gif",)
    magic = "GIF87a / GIF89a"
    dtypes = ("uint8",)
    channels = (3, 4)
    metadata = frozenset({"timing"})
    lossy = True
    multi_frame = True
    quality_note = "256 colours per frame (a palette per frame): always lossy"
    write_note = (
        "GIF holds 256 colours per frame and alpha on or off: outputs are written with a "
        "palette per frame (lossy)"
    )
    pillow_format = "GIF"

    def sniff(self, head: bytes, path: Path) -> bool:
        return head[:6] in (b"GIF87a", b"GIF89a")

    def prepare_frame(self, pixels: np.ndarray) -> Any:
        """One frame quantised to its own palette (median cut on its own colours); with alpha,
        255 colours and one transparent index."""
        from PIL import Image

        rgb = pixels[:, :, :3] if pixels.ndim == 3 else np.repeat(pixels[:, :, None], 3, axis=2)
        has_alpha = pixels.ndim == 3 and pixels.shape[2] == 4
        colours = _TRANSPARENT if has_alpha else 256
        im = Image.fromarray(np.ascontiguousarray(rgb), mode="RGB").quantize(
            colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
        if has_alpha:
            index = np.asarray(im).copy()
            index[pixels[:, :, 3] < 128] = _TRANSPARENT
            palette = im.getpalette() or []
            palette = (palette + [0] * 768)[:768]
            im = Image.fromarray(index, mode="P")
            im.putpalette(palette)
            im.info["transparency"] = _TRANSPARENT
        return im

    def encode(self, fh: IO[bytes], data: ImageData, options: WriteOptions) -> None:
        animation = data.animation
        if animation is not None and len(animation) > 1:
            # Pillow's GIF writer merges a frame equal to the one before it into that one (and
            # fails when every frame is equal): merged here first, durations summed, so that
            # its lists of durations and disposals stay one per frame written.
            animation = merge_repeats(animation)
            data = replace(
                data,
                pixels=animation.frames[0],
                animation=animation if len(animation) > 1 else None,
            )
        super().encode(fh, data, options)

    def save_arguments(self, options: WriteOptions) -> dict[str, Any]:
        # optimize=False: Pillow's optimiser would merge palettes and crop frames.
        return {"optimize": False}

    def animation_arguments(self, animation: Animation) -> dict[str, Any]:
        kwargs = super().animation_arguments(animation)
        if animation.disposal:
            kwargs["disposal"] = list(animation.disposal)
        return kwargs


def merge_repeats(animation: Animation) -> Animation:
    """``animation`` with each frame equal to the one before it merged into that one, its
    duration added (what a viewer shows is the same)."""
    frames: list[np.ndarray] = []
    durations: list[int] = []
    disposal: list[int] = []
    for i, frame in enumerate(animation.frames):
        duration = animation.durations[i] if i < len(animation.durations) else 0
        if frames and np.array_equal(frame, frames[-1]):
            if durations:
                durations[-1] += duration
            continue
        frames.append(frame)
        durations.append(duration)
        if i < len(animation.disposal):
            disposal.append(animation.disposal[i])
    return replace(
        animation,
        frames=tuple(frames),
        durations=tuple(durations) if animation.durations else (),
        disposal=tuple(disposal) if len(disposal) == len(frames) else (),
    )


CODEC = GifCodec()
