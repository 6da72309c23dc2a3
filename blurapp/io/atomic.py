"""The one atomic writer, and the never-overwrite rule of every file blurapp writes.

Images, kernels, batch reports, bench records and conv outputs all go through
:func:`atomic_output`: the bytes go to a temporary file beside the destination, which becomes the
destination in one step only when complete. On any error (Ctrl-C included) the temporary file is
removed and the destination is untouched.

- **Permissions**: the temporary file is created with ``os.open(..., 0o666)``, so the kernel
  applies the process umask (0644 under umask 022, 0600 under 077). The umask is never read or
  changed: ``os.umask`` is process-wide and would race between encoder threads.
- **Names**: the temporary name is ``.<name>.<random>.part``, with ``<name>`` cut (at a UTF-8
  character boundary) to fit the folder's file-name limit, so any legal destination name works.
- **Never overwrite** (DESIGN.md, "Command line"): without ``overwrite`` the file is published
  with a hard link, which fails if the destination exists, even if it appeared a moment ago;
  with ``overwrite`` by ``os.replace``. Something that is not a regular file (a folder, a FIFO,
  a device) is never replaced. :func:`check_output` applies the same rule before any work, and
  also refuses an output that is one of the inputs, compared by device and inode, or whose
  folder cannot take a new file (tried by creating a temporary file there, with a block of real
  disk space, and removing it).
- **A full disk, before the work**: ``atomic_output(..., reserve=N)`` allocates the temporary
  file's blocks when it is opened (:func:`allocate`), so a writer that knows a bound of its
  size (a batch's ``--report``) opens it before its work and finds a full disk then.
- **Leftovers**: a writer holds an exclusive ``flock`` on its temporary file until it is
  published or removed. A process killed with ``kill -9`` (or a power cut) leaves its temporary
  behind, unlocked: :func:`remove_stale_temporaries` removes those of the outputs a rerun is
  about to write, and never one that a live writer still holds.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from blurapp.core.errors import OutputError, UsageError

try:
    import fcntl
except ImportError:  # Windows: no flock; a temporary there is never called stale
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "PROBE_BYTES",
    "TEMP_SUFFIX",
    "allocate",
    "atomic_output",
    "check_name_length",
    "check_output",
    "file_identity",
    "remove_stale_temporaries",
    "same_file",
    "temp_name",
    "write_bytes",
    "write_text",
]

#: Temporary files are ``.<name>.<random>.part`` beside the destination (hidden, so that a batch
#: scanning the folder skips them).
TEMP_SUFFIX = ".part"

#: The file-name limit in bytes where the file system does not say (NAME_MAX of Linux, macOS
#: and Windows alike).
DEFAULT_NAME_MAX = 255

_TOKEN_BYTES = 4  # 8 hex digits: with O_EXCL and a retry, plenty against collisions
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
_CREATE_FLAGS |= getattr(os, "O_BINARY", 0)  # Windows


def _describe(err: OSError) -> str:
    return err.strerror or str(err) or type(err).__name__


def _kind(mode: int) -> str | None:
    """What a file is, when it is not a regular file (``None`` when it is)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def file_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file ``path`` names (links followed), or ``None`` when there
    is none. Two paths name the same file exactly when these agree, whatever bind mounts,
    symbolic or hard links and case-insensitive file systems make of their spelling."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether ``a`` and ``b`` are the same existing file (by device and inode)."""
    ida = file_identity(a)
    return ida is not None and ida == file_identity(b)


def check_output(
    path: str | os.PathLike[str],
    *,
    overwrite: bool,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> Path:
    """Refuse, before any work, an output that must not be written.

    Arguments:
        path: the file a command is about to write.
        overwrite: whether the user allowed replacing an existing file (``--overwrite``).
        inputs: the files the command reads; none of them is ever written.

    Returns:
        ``path`` as a Path.

    Raises:
        UsageError: one line naming the file when its folder does not exist, it is one of the
            inputs (by device and inode), it is not a regular file (a folder, a FIFO, a device:
            never replaced, even with ``overwrite``), or it exists and ``overwrite`` is false.
    """
    dest = Path(path)
    folder = dest.parent
    try:
        os.lstat(dest)
    except FileNotFoundError:
        pass
    except OSError as err:  # a name or path too long, a loop of links, a file as a folder
        if err.errno != errno.ENOTDIR:
            raise UsageError(f"cannot write {dest}: {_describe(err)}") from None
    if not folder.is_dir():
        raise UsageError(f"cannot write {dest}: the folder {folder} does not exist")
    check_name_length([dest])
    if not os.path.lexists(dest):
        check_writable(folder, str(dest))
        return dest
    ident = file_identity(dest)
    if ident is not None:
        for source in inputs:
            if file_identity(source) == ident:
                raise UsageError(
                    f"the output {dest} is the input {os.fspath(source)}; "
                    "an input is never modified"
                )
        kind = _kind(os.stat(dest).st_mode)
        if kind is not None:
            raise UsageError(f"the output {dest} is {kind}, not a file; it is never replaced")
    if not overwrite:
        raise UsageError(f"{dest} exists (use --overwrite to replace it)")
    check_writable(folder, str(dest))
    return dest


def check_name_length(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Refuse, before any work, outputs whose names are longer than their folder's file system
    takes (a long ``--suffix`` in a batch), which would fail only when written.

    The limit is asked of each folder, or of the nearest one that exists.

    Raises:
        UsageError: one line naming the first such output, the length and the limit.
    """
    limits: dict[Path, int] = {}
    for path in map(Path, paths):
        folder = path.parent if str(path.parent) else Path(".")
        if folder not in limits:
            probe = folder
            while not probe.is_dir() and probe.parent != probe:
                probe = probe.parent
            limits[folder] = _name_max(probe)
        size = len(os.fsencode(path.name))
        if size > limits[folder]:
            raise UsageError(
                f"cannot write {path}: its name is {size} bytes, longer than the "
                f"{limits[folder]} that the file system of {folder} takes"
            )


def check_writable(folder: str | os.PathLike[str], what: str) -> None:
    """Refuse, before any work, a folder where no file can be created (read-only, full,
    ``/proc``): a temporary file is created there, given :data:`PROBE_BYTES` of real disk
    blocks (an empty file needs none, so a full disk would pass) and removed at once.

    Arguments:
        folder: the folder an output goes into.
        what: the output, for the message (``"the report r.json"``).

    Raises:
        UsageError: one line naming ``what`` and the reason.
    """
    folder = Path(folder) if str(folder) else Path(".")
    probe: Path | None = folder / temp_name(folder, "blurapp-probe")
    fd = -1
    try:  # the probe goes whatever stops this (Ctrl-C right after the open included)
        fd = os.open(probe, _CREATE_FLAGS, 0o600)
        allocate(fd, PROBE_BYTES)
    except OSError as err:
        if isinstance(err, FileExistsError):
            probe = None  # someone else's file: not ours to remove
        raise UsageError(f"cannot write {what}: {_describe(err)} (in {folder})") from None
    finally:
        if fd >= 0:
            os.close(fd)
        if probe is not None:
            with contextlib.suppress(OSError):
                os.unlink(probe)


#: The disk space :func:`check_writable` allocates for a moment: one page, the block of most
#: file systems.
PROBE_BYTES = 4096

_ZEROS = bytes(2**16)


def allocate(fd: int, size: int) -> None:
    """Give the open, empty file ``fd`` ``size`` bytes of real disk blocks (its length becomes
    ``size``), so that writing up to ``size`` bytes over them later cannot find the disk full.

    ``os.posix_fallocate`` where there is one (glibc emulates it by writing where the file
    system has no ``fallocate``); otherwise, or where it says the file system cannot, zeros are
    written. On copy-on-write file systems (btrfs, ZFS) an overwrite may still need new blocks:
    there this is a check that the space is there now, not a promise.

    Raises:
        OSError: the space is not there (``ENOSPC``, ``EDQUOT``, ``EFBIG`` past ``ulimit -f``).
    """
    if size <= 0:
        return
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is not None:
        try:
            fallocate(fd, 0, size)
            return
        except OSError as err:
            if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
    os.lseek(fd, 0, os.SEEK_SET)
    left = size
    while left > 0:
        left -= os.write(fd, _ZEROS[: min(left, len(_ZEROS))])
    os.lseek(fd, 0, os.SEEK_SET)


def _name_max(folder: Path) -> int:
    """The longest file name in bytes that ``folder``'s file system takes."""
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # not said, or no pathconf (Windows)
        return DEFAULT_NAME_MAX
    return limit if limit and limit > 0 else DEFAULT_NAME_MAX


def _cut(raw: bytes, size: int) -> bytes:
    """The first ``size`` bytes of ``raw``, less a UTF-8 character that the cut would split."""
    if len(raw) <= size:
        return raw
    cut = raw[: max(size, 0)]
    start = len(cut)
    while start > 0 and cut[start - 1] & 0xC0 == 0x80:  # continuation bytes
        start -= 1
    if start > 0 and cut[start - 1] >= 0xC0:  # the lead byte of the last character
        lead = cut[start - 1]
        length = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if len(cut) - (start - 1) < length:
            return cut[: start - 1]
    return cut


def temp_name(folder: str | os.PathLike[str], name: str) -> str:
    """A fresh temporary name for ``name`` in ``folder``: ``.<name>.<random>.part``, with
    ``<name>`` cut so that the whole fits the file system's name limit (counted in bytes)."""
    token = secrets.token_hex(_TOKEN_BYTES)
    fixed = len(f"..{token}{TEMP_SUFFIX}")
    borrowed = _cut(os.fsencode(name), _name_max(Path(folder)) - fixed)
    return f".{os.fsdecode(borrowed)}.{token}{TEMP_SUFFIX}"


_TEMP_PATTERN = re.compile(
    rf"^\.(?P<name>.*)\.[0-9a-f]{{{2 * _TOKEN_BYTES}}}{re.escape(TEMP_SUFFIX)}$"
)


def _lock(fd: int) -> bool:
    """Take the exclusive lock on an open temporary file (``False`` when someone holds it)."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def remove_stale_temporaries(folder: str | os.PathLike[str], names: Iterable[str]) -> list[Path]:
    """Remove the temporary files that dead writers left for ``names`` in ``folder``.

    A temporary of a live writer is locked (see :func:`atomic_output`) and stays; one whose
    writer was killed (``kill -9``, a power cut) is not, and goes. Other files are untouched.

    Arguments:
        folder: the output folder.
        names: the outputs' file names (not paths) that a run is about to write.

    Returns:
        The temporary files removed.
    """
    folder = Path(folder)
    limit = _name_max(folder) - len(f"..{'0' * 2 * _TOKEN_BYTES}{TEMP_SUFFIX}")
    wanted = {os.fsdecode(_cut(os.fsencode(n), limit)) for n in names}
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_PATTERN.match(entry.name)
        if match is None or match.group("name") not in wanted:
            continue
        path = folder / entry.name
        try:
            fd = os.open(
                path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
            )
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if (
                stat.S_ISREG(st.st_mode)
                and _lock(fd)
                and file_identity(path) == (st.st_dev, st.st_ino)
            ):
                os.unlink(path)
                removed.append(path)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _open_new(path: str, flags: int) -> int:
    """``open``'s opener: create the file, failing if it exists, with mode 0o666 less the umask
    (the kernel applies it)."""
    return os.open(path, _CREATE_FLAGS, 0o666)


def _refuse_special(dest: Path) -> None:
    try:
        mode = os.stat(dest).st_mode
    except (OSError, ValueError):
        return  # nothing there (or a dangling link, which os.replace replaces)
    kind = _kind(mode)
    if kind is not None:
        raise OutputError(f"cannot write {dest}: it is {kind}, not a file; it is never replaced")


def _size(n: int) -> str:
    """``n`` bytes for a message: ``"4096 bytes"``, ``"1.5 MiB"``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _exists(dest: Path) -> OutputError:
    return OutputError(f"{dest} exists (use --overwrite to replace it)")


def _publish(tmp: Path, dest: Path, overwrite: bool) -> None:
    """Make the complete ``tmp`` the file ``dest``, following the never-overwrite rule."""
    if overwrite:
        _refuse_special(dest)
        try:
            os.replace(tmp, dest)
        except OSError as err:
            raise OutputError(f"cannot write {dest}: {_describe(err)}") from None
        return
    # A hard link fails if dest exists: a rename that never clobbers. Where links are not
    # supported (some network or FAT file systems), check-then-rename is the best left.
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise _exists(dest) from None
    except OSError:
        if os.path.lexists(dest):
            raise _exists(dest) from None
        try:
            os.replace(tmp, dest)
        except OSError as err:
            raise OutputError(f"cannot write {dest}: {_describe(err)}") from None
        return
    os.unlink(tmp)


@contextlib.contextmanager
def atomic_output(
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    fsync: bool = True,
    reserve: int = 0,
) -> Iterator[BinaryIO]:
    """Open a temporary file beside ``path``; on success it becomes ``path`` in one step.

    On any exception (Ctrl-C included) the temporary file is removed and ``path`` is untouched.
    Without ``overwrite`` an existing ``path`` is never replaced, even if it appeared meanwhile;
    with it, only a regular file (or a link to one) is.

    With ``reserve``, the disk space is taken when the context is entered, not when the bytes
    come: a writer that knows an upper bound of its size (a batch's report) enters before its
    work and finds a full disk then, not after it. Such a writer writes sequentially from the
    start; the file ends where it stopped writing (the rest of the reservation is given back).

    Arguments:
        path: the destination.
        overwrite: replace an existing regular file.
        fsync: flush the bytes to the disk before publishing them.
        reserve: bytes of disk blocks to allocate for the temporary file at once
            (:func:`allocate`).

    Raises:
        OutputError: ``path`` exists and ``overwrite`` is false, it is not a regular file, the
            temporary file cannot be made or published, or the ``reserve`` bytes are not there.
    """
    dest = Path(path)
    folder = dest.parent if str(dest.parent) else Path(".")
    tmp: Path | None = None  # set as soon as the file may exist: it is removed on any error
    try:
        fh: BinaryIO | None = None
        for _attempt in range(100):
            tmp = folder / temp_name(folder, dest.name)
            try:
                # Opened by name: some encoders (tifffile) want a file object with a real name.
                fh = open(tmp, "wb", opener=_open_new)
                break
            except FileExistsError:  # someone else's: not ours to remove
                tmp = None
            except OSError as err:
                raise OutputError(f"cannot write {dest}: {_describe(err)}") from None
        if fh is None:
            raise OutputError(f"cannot write {dest}: no free temporary name in {folder}")
        with fh:
            # Held until the temporary is published or removed: a rerun after kill -9 tells
            # a dead writer's leftover from a live one by it.
            locked = _lock(fh.fileno())
            if reserve > 0:
                try:
                    allocate(fh.fileno(), reserve)
                except OSError as err:
                    raise OutputError(
                        f"cannot write {dest}: {_describe(err)} "
                        f"(reserving {_size(reserve)} in {folder})"
                    ) from None
            yield fh
            try:
                if reserve > 0:
                    fh.truncate()  # where the writer stopped: the unused reservation goes
                fh.flush()
                if fsync:
                    os.fsync(fh.fileno())
            except OSError as err:
                raise OutputError(f"cannot write {dest}: {_describe(err)}") from None
            if locked:
                _publish(tmp, dest, overwrite)
        if not locked:  # where files cannot be locked, they may not be renamed while open
            _publish(tmp, dest, overwrite)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes, *, overwrite: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_output`)."""
    with atomic_output(path, overwrite=overwrite) as fh:
        fh.write(data)


def write_text(
    path: str | os.PathLike[str], text: str, *, overwrite: bool = False, encoding: str = "utf-8"
) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_output`)."""
    write_bytes(path, text.encode(encoding), overwrite=overwrite)
