"""Turn a batch's inputs (files, folders, globs) into jobs, and refuse unsafe plans before any work.

Everything here only looks at names and the file system; no image is decoded. Problems that
would lose or clobber data are usage errors (exit 2): two inputs writing the same output, an
output that is an input, existing outputs without ``--overwrite`` or ``--skip-existing``.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from blurapp.batch.pipeline import Job
from blurapp.core.errors import UsageError
from blurapp.io import FORMATS, codecs, default_output_format, file_identity, same_file

__all__ = ["expand_inputs", "plan_jobs", "split_existing"]

_IMAGE_EXTENSIONS = codecs.readable_extensions()
_LISTED = 5  # names shown in an error before "and N more"


def _names(paths: Iterable[object]) -> str:
    items = [str(p) for p in paths]
    shown = ", ".join(items[:_LISTED])
    return shown + (f" and {len(items) - _LISTED} more" if len(items) > _LISTED else "")


def _scan(
    folder: Path, recursive: bool, skip: frozenset[tuple[int, int]] = frozenset()
) -> list[Path]:
    """The image files in ``folder`` (by extension), sorted; hidden ones (temporaries) left out,
    and its subfolders in ``skip`` (by device and inode: the output folder) not entered."""
    found: list[Path] = []
    walker = os.walk(folder) if recursive else [(str(folder), [], os.listdir(folder))]
    for root, dirs, files in walker:
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".") and file_identity(os.path.join(root, d)) not in skip
        )
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(root, name)
            if path.suffix.lower() in _IMAGE_EXTENSIONS and not path.is_dir():
                found.append(path)
    return found


def _glob(pattern: str) -> list[str]:
    """The sorted matches of ``pattern``; ``**`` does not follow links to folders.

    ``glob.glob`` follows them, so two links that point up the tree make ``**`` walk forever;
    pathlib's ``**`` does not (as ``os.walk``, which scans folders, does not). Hidden names
    (temporaries among them) are left out, as ``glob.glob`` leaves them out.
    """
    if "**" not in pattern:
        return sorted(glob.glob(pattern))
    path = Path(pattern)
    base = Path(path.anchor) if path.is_absolute() else Path(".")
    relative = str(path.relative_to(path.anchor)) if path.is_absolute() else pattern
    literal = set(Path(relative).parts)
    found = []
    for match in base.glob(relative):
        parts = match.relative_to(base).parts
        if any(part.startswith(".") and part not in literal for part in parts):
            continue
        found.append(str(match))
    return sorted(found)


def expand_inputs(
    items: Sequence[str], *, recursive: bool = False, exclude: Sequence[Path] = ()
) -> list[Path]:
    """The input files named by ``items``, in order, each once.

    A file is taken as it is (even a bad one: it is reported when it fails); a folder gives its
    image files (by extension; subfolders with ``recursive``); a glob (``*``, ``?``, ``[``,
    ``**``) gives its matches. Folders in ``exclude`` (the output folder, when it lies inside an
    input folder: a resumed run must not take its own earlier outputs as inputs) are not
    scanned.

    Raises:
        UsageError: an item that does not exist or a glob that matches nothing.
    """
    skip = frozenset(i for i in map(file_identity, exclude) if i is not None)
    paths: list[Path] = []
    for item in items:
        if glob.has_magic(item) and not os.path.lexists(item):
            matches = _glob(item)
            if not matches:
                raise UsageError(f"no file matches {item!r}")
            for m in matches:
                p = Path(m)
                if p.is_dir():
                    if file_identity(p) not in skip:
                        paths.extend(_scan(p, recursive, skip))
                else:
                    paths.append(p)
        elif os.path.isdir(item):
            paths.extend(_scan(Path(item), recursive, skip))
        elif os.path.lexists(item):
            paths.append(Path(item))
        else:
            raise UsageError(f"no such file or folder: {item}")
    seen: set[str] = set()
    unique: list[Path] = []
    for p in paths:
        key = os.path.normcase(os.path.abspath(p))
        if key not in seen:
            seen.add(key)
            unique.append(p)
    if not unique:
        raise UsageError(f"no image files in {_names(items)}")
    return unique


def plan_jobs(
    inputs: Sequence[Path], out_dir: Path, *, fmt: str | None = None, suffix: str = ""
) -> list[Job]:
    """One job per input: ``out_dir / (stem + suffix + ext)``.

    Raises:
        UsageError: an input whose output format cannot be told (no ``--format`` and an unknown
            extension), a suffix with a path separator, two inputs with the same output, or an
            output that is one of the inputs.
    """
    if os.sep in suffix or (os.altsep and os.altsep in suffix):
        raise UsageError(f"--suffix must not contain a path separator: {suffix!r}")
    jobs: list[Job] = []
    for p in inputs:
        if fmt is None:
            try:
                f = default_output_format(p)
            except UsageError:
                raise UsageError(
                    f"cannot tell the output format for {p} from its extension; use --format"
                ) from None
        else:
            f = fmt
        jobs.append(Job(p, out_dir / f"{p.stem}{suffix}{FORMATS[f][0]}", f))

    # Names that differ only in case are one file on a case-insensitive file system (macOS,
    # Windows, SD cards), two on a case-sensitive one: ask the output folder which it is.
    fold = _case_insensitive(out_dir)
    by_output: dict[str, list[Job]] = {}
    for job in jobs:
        key = os.path.normcase(os.path.abspath(job.output))
        by_output.setdefault(key.lower() if fold else key, []).append(job)
    clashes = [group for group in by_output.values() if len(group) > 1]
    if clashes:
        described = "; ".join(
            f"{_names(j.input for j in group)} -> {group[0].output}" for group in clashes[:_LISTED]
        )
        more = f" (and {len(clashes) - _LISTED} more)" if len(clashes) > _LISTED else ""
        raise UsageError(
            f"{len(clashes)} output name collision(s): {described}{more}; "
            "use --suffix, --format or separate runs"
        )

    # By device and inode, not by name: bind mounts, links and case-insensitive file systems
    # give one file several names.
    input_ids = {file_identity(p) for p in inputs} - {None}
    clobber = [j for j in jobs if file_identity(j.output) in input_ids]
    if clobber:
        raise UsageError(
            f"output would replace its input: {_names(j.output for j in clobber)}; "
            "choose another -o folder or a --suffix"
        )
    return jobs


def _case_insensitive(folder: Path) -> bool:
    """Whether the file system ``folder`` is (or will be) on ignores case in names.

    Asked of the nearest existing folder: a name with letters answers by itself (its other case
    names the same folder or nothing); otherwise a hidden temporary file is made and looked up
    in the other case. When nothing can be asked, names are compared ignoring case (the safe
    side: a false collision is a usage error, a missed one a lost file).
    """
    probe = folder.absolute()
    while not probe.is_dir():
        if probe.parent == probe:
            return True
        probe = probe.parent
    if probe.name.lower() != probe.name.upper():
        other = probe.parent / probe.name.swapcase()
        return os.path.lexists(other) and same_file(probe, other)
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(prefix=".blurapp-case-", dir=probe) as fh:
            name = Path(fh.name)
            return os.path.lexists(name.parent / name.name.upper())
    except OSError:
        return True


def split_existing(
    jobs: Sequence[Job], *, overwrite: bool, skip_existing: bool
) -> tuple[list[Job], list[Job]]:
    """Split ``jobs`` into (to run, to skip) by whether their output exists.

    Raises:
        UsageError: outputs exist and neither ``overwrite`` nor ``skip_existing`` is set; the
            message names them.
    """
    existing = [j for j in jobs if os.path.lexists(j.output)]
    if not existing or overwrite:
        return list(jobs), []
    if skip_existing:
        names = {id(j) for j in existing}
        return [j for j in jobs if id(j) not in names], existing
    raise UsageError(
        f"{len(existing)} output(s) exist: {_names(j.output for j in existing)} "
        "(use --overwrite to replace them or --skip-existing to keep them)"
    )
