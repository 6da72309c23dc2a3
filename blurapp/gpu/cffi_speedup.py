"""Make cffi parse each C type in time proportional to the type, not to wgpu's whole header.

wgpu-py talks to wgpu-native through cffi in ABI mode: the first time it uses a C type string
(``ffi.new("WGPUTextureDescriptor *")``, about 80 of them to filter one image), cffi parses it
with pycparser, and before each such string it declares ``typedef int NAME;`` for every typedef
it knows: about 430 lines for wgpu's header, to parse a one-line type (cffi's own comment says
"for more efficiency we would need to poke into the internals"). On the 2-core test machine
that is 1.6 s of creating the device and 1.7 s of the first filter, in every process: most of
what a one-shot ``blurapp apply`` waits for (wgpu-py issue #789 is about the same start-up
cost).

Only the typedef names that occur in the parsed text can change how pycparser reads it, so
:func:`install` replaces ``cffi.cparser.Parser._parse`` with a copy that declares just those.
The syntax tree, and so every type cffi builds, is the same; nothing else of cffi changes.

The copy replaces code, so it is installed only over the code it copies: the SHA-256 of the
source of cffi's ``Parser._parse`` must be one in :data:`MIRRORED_PARSE_SHA256`, whatever
cffi's version says. Any other ``_parse`` (a cffi that changed it, a patched one, one whose
source is not shipped, as in a frozen bundle) is left alone, silently: wgpu is only slower to
start. It is a process-wide change, so only :func:`blurapp.process.prepare_process`, which the
entry points call, installs it (``BLURAPP_NO_CFFI_SPEEDUP=1`` turns it off there).
"""

from __future__ import annotations

import hashlib
import inspect
import re
import textwrap
import threading
from typing import Any

__all__ = ["MIRRORED_PARSE_SHA256", "install", "installed", "parse_fingerprint"]

#: parse_fingerprint() of the cffi ``Parser._parse`` functions that :func:`_make_parse` copies.
#: Computed from cffi's sources: the tags v1.17.0, v1.17.1, v2.0.0, v2.1.0 and main at
#: 45f53108 (2.2.0.dev0) share one, as does the installed cffi 2.1.1. v1.14.6 to v1.16.0 have
#: another (c8b36d17...), left out on purpose: they lack the trailing empty line the copy adds.
MIRRORED_PARSE_SHA256: dict[str, str] = {
    "b8ae03f71988b640d9041a6c548332d26185e983ae92498e5ccf7059a9157051": "cffi 1.17.0 - 2.1.x",
}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_install_lock = threading.Lock()
_installed = False
original_parse: Any = None  # cffi's own Parser._parse, kept once replaced (tests compare them)


def _make_parse(cparser: Any) -> Any:
    """cffi's ``Parser._parse`` with the typedef preamble cut to the names ``csource`` uses."""

    def _parse(self: Any, csource: str) -> tuple[Any, Any, str]:
        csource, macros = cparser._preprocess(csource)
        used = set(_IDENTIFIER.findall(csource))
        ctn = cparser._common_type_names(csource)
        typenames = []
        for name in sorted(self._declarations):
            if name.startswith("typedef "):
                name = name[8:]
                if name in used:  # the one change: a name the text never mentions is left out
                    typenames.append(name)
                ctn.discard(name)
        typenames += sorted(ctn)
        lines = ['# 1 "<cdef automatic initialization code>"']
        lines += [f"typedef int {typename};" for typename in typenames]
        lines.append("typedef int __dotdotdotint__, __dotdotdotfloat__, __dotdotdot__;")
        lines.append(f'# 1 "{cparser.CDEF_SOURCE_STRING}"')
        lines.append(csource)
        lines.append("")
        lock = cparser.lock
        if lock is not None:
            lock.acquire()  # pycparser is not thread-safe
        try:
            ast = cparser._get_parser().parse("\n".join(lines))
        except cparser.pycparser.c_parser.ParseError as e:
            self.convert_pycparser_error(e, csource)
        finally:
            if lock is not None:
                lock.release()
        return ast, macros, csource

    return _parse


def parse_fingerprint(function: Any) -> str | None:
    """The SHA-256 (hex) of a function's dedented source text, ``None`` when it has none.

    Source text, not bytecode: the bytecode of the same ``_parse`` differs between Python
    versions (3.11 turns ``'%s' % (x,)`` into string building), its source does not.
    """
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return None
    return hashlib.sha256(textwrap.dedent(source).encode()).hexdigest()


def install() -> bool:
    """Install the faster parse into cffi, once per process.

    Returns:
        ``True`` when it is installed (now or before), ``False`` when cffi is missing or its
        ``Parser._parse`` is not one of those the copy mirrors (:data:`MIRRORED_PARSE_SHA256`).
    """
    global _installed, original_parse
    with _install_lock:
        if _installed:
            return True
        try:
            from cffi import cparser
        except ImportError:
            return False
        needed = ("_preprocess", "_common_type_names", "_get_parser", "lock", "pycparser")
        if parse_fingerprint(cparser.Parser._parse) not in MIRRORED_PARSE_SHA256 or not all(
            hasattr(cparser, name) for name in (*needed, "CDEF_SOURCE_STRING")
        ):
            return False
        original_parse = cparser.Parser._parse
        cparser.Parser._parse = _make_parse(cparser)
        _installed = True
        return True


def installed() -> bool:
    """Whether :func:`install` has replaced cffi's parse in this process."""
    return _installed
