"""The options of ``blurapp apply`` and ``blurapp batch`` (DESIGN.md "Command line").

This module imports nothing heavy: it runs for every ``blurapp --help``. The filter's options
are :func:`blurapp.core.filterspec.add_filter_arguments`, so that the command line and the GUI's
"Export CLI" build the same :class:`FilterSpec`; values are checked when the command runs.
"""

from __future__ import annotations

import argparse
import math
import os

from blurapp.core.filterspec import add_filter_arguments
from blurapp.io import codecs


def _int_in(lo: int, hi: int | None, what: str) -> type[int]:
    """An argparse type: an integer in [lo, hi] (hi None: no upper bound)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, not {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            bound = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
            raise argparse.ArgumentTypeError(f"{what} must be {bound}, not {value}")
        return value

    parse.__name__ = what  # argparse names the type in its messages
    return parse  # type: ignore[return-value]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if not (value > 0 and math.isfinite(value)):  # inf: int(inf * 1e6) raises later
        raise argparse.ArgumentTypeError(f"expected a positive finite number, not {text!r}")
    return value


def _names(option: str) -> str:
    """The formats (from the codec registry) whose quality note names ``option``."""
    names = [c.label for c in codecs.CODECS.values() if option in c.quality_note]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def _add_filter_options(p: argparse.ArgumentParser) -> None:
    """Options shared by apply and batch: the filter (a FilterSpec), the numbers, the encoders."""
    add_filter_arguments(p.add_argument_group("filter"))
    p.add_argument(
        "--max-tile-side",
        type=_int_in(2, None, "max tile side"),
        metavar="N",
        help="run in tiles of at most N×N pixels, halo included (default: images larger than "
        "the GPU takes are tiled to fit it): for small GPUs",
    )
    e = p.add_argument_group("files")
    e.add_argument(
        "--quality",
        type=_int_in(1, 100, "quality"),
        default=95,
        help=f"{_names('--quality')} quality, 1..100 (default: 95)",
    )
    e.add_argument(
        "--compress-level",
        type=_int_in(0, 9, "compress level"),
        default=6,
        help="PNG and TIFF deflate level, 0..9 (default: 6). PNG 1..6: Paeth row filter with "
        "run-length deflate (fast; as small as full deflate on photos; Up when written a band "
        "at a time); 7..9: every row filter and full deflate (slower, smaller on graphics); "
        "0: stored",
    )
    e.add_argument(
        "--lossless", action="store_true", help=f"write {_names('--lossless')} losslessly"
    )
    e.add_argument(
        "--frame",
        type=_int_in(0, None, "frame"),
        metavar="N",
        help="filter frame N only (0-based) of an animation or a multi-page file (default: "
        "every frame, timing and order kept)",
    )
    e.add_argument(
        "--raw-linear",
        action="store_true",
        help="develop camera raw to linear 16-bit light (default: sRGB, as LibRaw develops it)",
    )
    e.add_argument(
        "--max-megapixels",
        type=_positive_float,
        default=250.0,
        metavar="MP",
        help="refuse images larger than this, before decoding them (default: 250)",
    )


def add_apply_options(p: argparse.ArgumentParser) -> None:
    """Add the options of ``blurapp apply IN -o OUT --kernel SPEC ...`` to ``p``."""
    p.add_argument("input", metavar="IN", help=f"image to filter ({codecs.labels()})")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output file; its extension picks the format",
    )
    _add_filter_options(p)
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.add_argument(
        "--timing",
        action="store_true",
        help="print strategy, reason, per-pass times, Mpix/s and modelled GB/s on stderr",
    )
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bar (drawn on a terminal when the filter runs over a second)",
    )


def add_batch_options(p: argparse.ArgumentParser) -> None:
    """Add the options of ``blurapp batch IN... -o DIR --kernel SPEC ...`` to ``p``."""
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="IN",
        help="image files, folders (their images; --recursive for subfolders) or globs",
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="folder for the outputs (created)"
    )
    _add_filter_options(p)
    f = p.add_argument_group("outputs")
    f.add_argument(
        "--format",
        choices=codecs.writable_formats(),
        help="output format (default: each input's own; 16-bit TIFF for camera raw)",
    )
    f.add_argument(
        "--suffix", default="", metavar="S", help="added to each output's stem (default: none)"
    )
    mode = f.add_mutually_exclusive_group()
    mode.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    mode.add_argument(
        "--skip-existing", action="store_true", help="leave existing outputs alone (resume a run)"
    )
    f.add_argument("--recursive", "-r", action="store_true", help="descend into subfolders")
    f.add_argument("--report", metavar="FILE.json", help="write a JSON report of every file")
    r = p.add_argument_group("run")
    r.add_argument(
        "--jobs",
        "-j",
        type=_int_in(1, 256, "jobs"),
        default=os.cpu_count() or 1,
        metavar="N",
        help="decoding and encoding threads (default: the number of cores)",
    )
    r.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    r.add_argument(
        "--scheduler",
        metavar="local:N|HOST:PORT",
        help="run on Dask distributed, one task per file: local:N starts N worker processes "
        "here, HOST:PORT uses a running `dask scheduler` (paths shared by every worker); "
        "needs pip install 'blurapp[dask]'",
    )
