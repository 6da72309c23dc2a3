"""The error types every layer raises; the command line shows each as one line and an exit code."""

from __future__ import annotations

import re

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """``text`` as one line that a terminal shows as it is: control characters (a newline or
    an escape sequence in a file name), line separators and bidirectional overrides are
    written as Python escapes (``\\n``, ``\\x1b``, ``\\u202e``). Every message of the
    command line goes through it, so an error stays one line whatever the names in it."""
    return _CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def readable(x: float) -> str:
    """A number for a message, cut to a readable length: whole numbers as they are up to 15
    digits, anything larger (or fractional) to 6 significant digits (``1e+300``, not 301 digits
    of it)."""
    if isinstance(x, int) and abs(x) < 10**15:
        return str(x)
    try:
        return f"{float(x):.6g}"
    except OverflowError:  # an int beyond float64: its sign and length
        digits = len(str(abs(x)))
        return f"about {'-' if x < 0 else ''}1e+{digits - 1}"


_LONG_WHOLE = re.compile(r"(?<![\d.])\d{16,}(?![\d.])")


def readable_text(text: str) -> str:
    """``text`` with every whole number of more than 15 digits written :func:`readable`
    (a spec echoed back with ``box:99999999999999999999x3`` in it: ``box:1e+20x3``)."""
    return _LONG_WHOLE.sub(lambda m: readable(int(m.group())), text)


class BlurappError(Exception):
    """A problem the user can act on. ``str(err)`` is the one line shown to them.

    ``exit_code`` follows DESIGN.md: 2 for a usage error, 1 for a failure while working.
    """

    exit_code = 1


class UsageError(BlurappError, ValueError):
    """Bad input from the user: a spec, an option, a combination that cannot run (exit 2)."""

    exit_code = 2


class KernelSpecError(UsageError):
    """A kernel spec string, JSON file or weight matrix that does not describe a valid kernel."""


class BorderError(UsageError):
    """An unknown border mode or a bad ``constant=V`` value."""


class StrategyError(UsageError):
    """A strategy that cannot run this kernel or image (for example rank > 1 to separable)."""


class ImageError(BlurappError):
    """An image that cannot be read, written or filtered (unreadable, truncated, too large)."""


class ArrayError(UsageError, ImageError):
    """An array the Python API cannot filter (its pixel type, its shape, or the memory its
    filtered copy would need): a ``ValueError``, as numpy and scipy raise for such arrays, and
    an :class:`ImageError` for callers that catch those."""


class ArrayTypeError(ArrayError, TypeError):
    """What the Python API was given is not an array it takes (a list of pixels, an object or
    a string array): also a ``TypeError``."""


class OutputError(BlurappError):
    """A file that cannot be written: it appeared meanwhile (without ``--overwrite``), it is not a
    regular file, or the write itself failed. Found before any work, the same problems are
    :class:`UsageError` (see ``blurapp.io.check_output``)."""


class GpuUnavailableError(BlurappError):
    """No WebGPU adapter could be found, ``BLURAPP_ADAPTER`` matches none, or a device could not
    be created: an environment error, found before any work (exit 2, DESIGN.md)."""

    exit_code = 2
