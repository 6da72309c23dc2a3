"""The transfer curves an ICC profile states (its rTRC, gTRC and bTRC tags, or a grey profile's
kTRC), for filtering in the file's own linear light (``--linear``).

Photos' profiles are matrix/TRC profiles (sRGB, Display P3, Adobe RGB, ProPhoto, most cameras'):
each channel's curve is an ICC ``curv`` (identity, one gamma, or a sampled table) or ``para``
(one of five parametric functions) tag, read here from the tag table (ICC.1:2010 sections 7.3,
10.6 and 10.18); littlecms (Pillow's ImageCms) converts pixels but does not give these curves.
A profile without them (a lookup-table profile), or one that cannot be read, gives ``None``:
the caller falls back to sRGB's curve.
"""

from __future__ import annotations

import struct

import numpy as np

from blurapp.core.colour import SRGB, ChannelCurves, TransferCurve

__all__ = ["profile_curves", "transfer_curves"]

_HEADER = 128


def _tags(icc: bytes) -> dict[bytes, tuple[int, int]]:
    """The tag table: signature → (offset, size)."""
    if len(icc) < _HEADER + 4 or icc[36:40] != b"acsp":
        raise ValueError("not an ICC profile")
    (count,) = struct.unpack_from(">I", icc, _HEADER)
    if count > 1000 or _HEADER + 4 + 12 * count > len(icc):
        raise ValueError("a broken tag table")
    found = {}
    for i in range(count):
        sig, offset, size = struct.unpack_from(">4sII", icc, _HEADER + 4 + 12 * i)
        if offset + size > len(icc) or size < 8:
            raise ValueError(f"tag {sig!r} runs past the profile")
        found[sig] = (offset, size)
    return found


def _curve(icc: bytes, offset: int, size: int) -> TransferCurve:
    """One ``curv`` or ``para`` tag."""
    kind = icc[offset : offset + 4]
    if kind == b"curv":
        (n,) = struct.unpack_from(">I", icc, offset + 8)
        if 12 + 2 * n > size:
            raise ValueError("a curv tag runs past its size")
        if n == 0:
            return TransferCurve.gamma(1.0)
        if n == 1:
            (fixed,) = struct.unpack_from(">H", icc, offset + 12)
            return TransferCurve.gamma(fixed / 256.0)  # u8Fixed8Number
        values = np.frombuffer(icc, ">u2", n, offset + 12).astype(np.float64) / 65535.0
        return TransferCurve.sampled(values)
    if kind == b"para":
        (function,) = struct.unpack_from(">H", icc, offset + 8)
        counts = {0: 1, 1: 3, 2: 4, 3: 5, 4: 7}
        if function not in counts or 12 + 4 * counts[function] > size:
            raise ValueError(f"a para tag of function {function}")
        raw = struct.unpack_from(f">{counts[function]}i", icc, offset + 12)
        return TransferCurve.parametric(function, tuple(v / 65536.0 for v in raw))
    raise ValueError(f"a TRC tag of type {kind!r}")


def transfer_curves(icc: bytes | None) -> ChannelCurves | None:
    """The profile's per-channel transfer curves (sRGB's taken for exactly sRGB's: see
    :meth:`TransferCurve.snapped`), or ``None`` when it has none that can be read."""
    if not icc:
        return None
    try:
        tags = _tags(icc)
        if all(t in tags for t in (b"rTRC", b"gTRC", b"bTRC")):
            curves = tuple(_curve(icc, *tags[t]).snapped() for t in (b"rTRC", b"gTRC", b"bTRC"))
            if curves[0] == curves[1] == curves[2]:
                curves = curves[:1]
            return ChannelCurves(curves)
        if b"kTRC" in tags:
            return ChannelCurves((_curve(icc, *tags[b"kTRC"]).snapped(),))
    except (ValueError, struct.error):
        return None
    return None


def profile_curves(icc: bytes | None) -> ChannelCurves:
    """The curves ``--linear`` decodes an image with: its profile's, else sRGB's (no profile,
    or one without readable curves)."""
    return transfer_curves(icc) or ChannelCurves((SRGB,))
