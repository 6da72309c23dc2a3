"""The error types every layer raises; the command line shows each as one line and an exit code."""

from __future__ import annotations


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


class OutputError(BlurappError):
    """A file that cannot be written: it appeared meanwhile (without ``--overwrite``), it is not a
    regular file, or the write itself failed. Found before any work, the same problems are
    :class:`UsageError` (see ``blurapp.io.check_output``)."""


class GpuUnavailableError(BlurappError):
    """No WebGPU adapter could be found or a device could not be created."""
