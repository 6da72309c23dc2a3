"""Cancellation points inside one long run: a check that the code running on this thread calls
between pieces of work (a GPU run's bands of rows), so that a cancel (the GUI's, or a tile loop
stopping on Ctrl-C) takes effect within one piece rather than after the whole run.

The caller that owns the run installs the check for the thread that runs it::

    with checking(cancel.raise_if_set):
        run(...)

and the engine calls :func:`check_now` between pieces (with how many are done, for a
progress callback installed beside the check). On the main thread, Ctrl-C needs no check:
Python raises KeyboardInterrupt as soon as a piece's call returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["check_now", "checking"]

_local = threading.local()


@contextmanager
def checking(
    check: Callable[[], None] | None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[None]:
    """Install ``check`` (it raises to cancel) and ``progress`` (called with pieces done and
    pieces in all) for this thread's runs inside the block."""
    previous = getattr(_local, "check", None), getattr(_local, "progress", None)
    _local.check, _local.progress = check, progress
    try:
        yield
    finally:
        _local.check, _local.progress = previous


def check_now(done: int | None = None, total: int | None = None) -> None:
    """Call this thread's installed check, if any (it raises to cancel), then its progress
    with ``done`` of ``total`` pieces when both are given."""
    check = getattr(_local, "check", None)
    if check is not None:
        check()
    progress = getattr(_local, "progress", None)
    if progress is not None and done is not None and total is not None:
        progress(done, total)
