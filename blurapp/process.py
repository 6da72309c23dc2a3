"""Process-wide set-up, done by the program's entry points only: the command line and the GUI.

Importing blurapp or using it as a library (:func:`blurapp.filter_image`,
:func:`blurapp.gpu.device.get_device`) changes nothing outside blurapp: no environment
variable, no patched third-party code. :func:`prepare_process` is where the ``blurapp``
command (:func:`blurapp.cli.main`, and ``blurapp-gui`` through it) and the GUI start
(:func:`blurapp.ui.app.make_app`) make the changes that help a whole process:

- ``XDG_RUNTIME_DIR``: a private one when the environment has none (see
  :func:`ensure_runtime_dir`);
- the cffi parser speed-up of :mod:`blurapp.gpu.cffi_speedup` (about 1.6 s off creating the
  device), unless ``BLURAPP_NO_CFFI_SPEEDUP=1``;
- the log records of the decoders (tifffile's "missing data offset tag" on a broken file)
  are not printed: a file that cannot be read is one line of blurapp's, and one that can
  needs no word (see :func:`quiet_decoders`).

A program that embeds blurapp and wants the same may call :func:`prepare_process` itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "NO_CFFI_SPEEDUP_ENV",
    "QUIET_LOGGERS",
    "ProcessSetup",
    "ensure_runtime_dir",
    "prepare_process",
    "quiet_decoders",
]

#: Set to 1 to keep cffi's own parser (the speed-up replaces one of its functions).
NO_CFFI_SPEEDUP_ENV = "BLURAPP_NO_CFFI_SPEEDUP"


@dataclass(frozen=True)
class ProcessSetup:
    """What :func:`prepare_process` did.

    Attributes:
        runtime_dir: the ``XDG_RUNTIME_DIR`` now in ``os.environ``.
        cffi_speedup: the cffi speed-up is installed (``False`` when opted out, or when cffi's
            code is not the one it copies).
    """

    runtime_dir: str
    cffi_speedup: bool


def ensure_runtime_dir() -> str:
    """A private ``XDG_RUNTIME_DIR`` for this process when the environment has no usable one.

    Vulkan drivers probe for a Wayland display while the instance is created, and libwayland
    prints "error: XDG_RUNTIME_DIR is invalid or not set in the environment." several times
    when the variable is missing (a root shell, ssh, cron, CI): noise in a command's output
    that says nothing about blurapp. Qt looks for it too. A folder ``blurapp-runtime-<uid>``
    in the temporary directory (mode 0700, as the XDG spec asks) is used instead, or a fresh
    one when that name is taken by someone else.

    Returns:
        The runtime directory now in ``os.environ``.
    """
    current = os.environ.get("XDG_RUNTIME_DIR", "")
    if current and os.path.isdir(current) and os.access(current, os.W_OK | os.X_OK):
        return current
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"blurapp-runtime-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise PermissionError(path)
    except OSError:
        path = tempfile.mkdtemp(prefix="blurapp-runtime-")
    os.environ["XDG_RUNTIME_DIR"] = path
    return path


#: Libraries whose log records are not printed by blurapp's programs.
QUIET_LOGGERS = ("tifffile",)


def quiet_decoders() -> None:
    """Keep the decoders' log records off stderr: Python prints a library's warnings there
    when the program configured no logging, which breaks the one-line rule of DESIGN.md.
    A handler that drops them does it without touching the root logger."""
    import logging

    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = False


def prepare_process() -> ProcessSetup:
    """Make the process-wide changes blurapp's own programs want; safe to call more than once.

    Call it at start-up, before the first GPU device or QApplication is created.

    Returns:
        A :class:`ProcessSetup` saying what was done.
    """
    runtime_dir = ensure_runtime_dir()
    quiet_decoders()
    speedup = False
    if os.environ.get(NO_CFFI_SPEEDUP_ENV, "").strip() in ("", "0"):
        from blurapp.gpu import cffi_speedup

        speedup = cffi_speedup.install()
    return ProcessSetup(runtime_dir=runtime_dir, cffi_speedup=speedup)
