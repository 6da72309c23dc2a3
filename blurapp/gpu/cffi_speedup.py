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
The syntax tree, and so every type cffi builds, is the same; nothing else of cffi changes. The
copy is installed only for the cffi versions it was checked against (their ``_parse`` is the
function reproduced here); with any other cffi it is left alone and wgpu is only slower to
start.
"""

from __future__ import annotations

import re
import threading
from typing import Any

__all__ = ["install", "installed"]

_TESTED_CFFI = ((1, 15), (3, 0))  # [first, last) cffi versions whose Parser._parse this mirrors
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


def install() -> bool:
    """Install the faster parse into cffi, once per process.

    Returns:
        ``True`` when it is installed (now or before), ``False`` when cffi is missing or a
        version this module was not checked against.
    """
    global _installed, original_parse
    with _install_lock:
        if _installed:
            return True
        try:
            import cffi
            from cffi import cparser
        except ImportError:
            return False
        version = tuple(getattr(cffi, "__version_info__", (0,))[:2])
        needed = ("_preprocess", "_common_type_names", "_get_parser", "lock", "pycparser")
        if not (_TESTED_CFFI[0] <= version < _TESTED_CFFI[1]) or not all(
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
