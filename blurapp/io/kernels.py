"""Kernel files: :func:`save_kernel` writes what :meth:`blurapp.core.kernel.Kernel.load` reads.

The saved form itself (:meth:`Kernel.to_json`) is core's; writing the file is here, through the
one atomic writer, so that a kernel file follows the same never-overwrite rule as every output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from blurapp.core.errors import OutputError
from blurapp.core.kernel import Kernel
from blurapp.io.atomic import atomic_output

__all__ = ["kernel_json_text", "save_kernel"]


def kernel_json_text(kernel: Kernel) -> str:
    """The kernel file's text: :meth:`Kernel.to_json` with one weight row per line.

    Floats are written with repr precision, so :meth:`Kernel.load` gives back identical bits.
    """
    d = kernel.to_json()
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in d.items() if k != "weights")
    rows = ",\n".join("    " + json.dumps(r, allow_nan=False) for r in d["weights"])
    return "{\n" + head + ',\n  "weights": [\n' + rows + "\n  ]\n}\n"


def save_kernel(kernel: Kernel, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write ``kernel`` as JSON to ``path`` (``~`` expanded), atomically.

    Returns:
        The path written.

    Raises:
        OutputError: one line naming the file when it exists (without ``overwrite``), is not a
            regular file, or cannot be written.
    """
    dest = Path(path).expanduser()
    text = kernel_json_text(kernel)
    try:
        with atomic_output(dest, overwrite=overwrite) as fh:
            fh.write(text.encode("utf-8"))
    except OSError as err:  # the encoder's own write (a full disk)
        raise OutputError(
            f"cannot write kernel file {str(dest)!r}: {err.strerror or err}"
        ) from None
    return dest
