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

**The whole header, once per installation.** Even so, ``import wgpu.backends.wgpu_native``
parses wgpu's 108 kB header (``ffi.cdef``): 0.2 s of pure Python on the test machine in
every process, a fifth of a one-shot command's start-up, and in the window it takes the GIL
in 1 ms slices from the UI thread while the photo opens. What the parse leaves in cffi's
``Parser`` is a handful of plain attributes (the declarations: cffi's own model objects), so
:func:`install` also wraps ``Parser.parse``: a fresh parser given a large source whose result
is in the cache (``platformdirs.user_cache_dir("blurapp")/cffi/``, a pickle named by the
SHA-256 of the source, the parse options, cffi's, pycparser's and Python's versions and
:data:`CACHE_FORMAT`) takes those attributes from it (4 ms) instead of parsing; otherwise it
parses and writes the file (atomically). A file that does not load, or does not hold what a
parse leaves, is parsed over and replaced. The cache holds what this process would compute
from files the user installed, in the user's own cache folder (as Mesa's shader cache there
holds compiled code); ``BLURAPP_NO_CFFI_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import pickle
import re
import stat
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "CACHE_FORMAT",
    "MIRRORED_PARSE_SHA256",
    "NO_CACHE_ENV",
    "cache_dir",
    "cache_key",
    "install",
    "installed",
    "parse_fingerprint",
]

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
original_full_parse: Any = None  # cffi's own Parser.parse, kept once wrapped

#: Bumped when what a cache file holds changes.
CACHE_FORMAT = 1
#: ``1`` turns the parse cache off (the faster parse stays).
NO_CACHE_ENV = "BLURAPP_NO_CFFI_CACHE"
#: Sources shorter than this are parsed, not cached: they take milliseconds.
CACHE_MIN_CHARS = 8192
#: What a parse leaves in a fresh ``cffi.cparser.Parser`` (besides ``_options``, which
#: ``parse`` restores, ``_structnode2type``, weak and empty once the syntax tree is gone, and
#: ``_recomplete``, which must be empty for a file to be written).
_PARSER_STATE = (
    "_declarations",
    "_included_declarations",
    "_anonymous_counter",
    "_int_constants",
    "_uses_new_feature",
)
_log = logging.getLogger(__name__)


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


def cache_dir() -> Path:
    """Where parsed headers are kept: ``platformdirs.user_cache_dir("blurapp")/cffi``."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("blurapp", appauthor=False)) / "cffi"


def cache_key(csource: str, options: dict[str, Any]) -> str:
    """The name of ``csource``'s parse in the cache: SHA-256 of everything the parse reads."""
    import cffi
    import pycparser

    h = hashlib.sha256()
    for part in (
        f"blurapp-cffi-cache-{CACHE_FORMAT}",
        cffi.__version__,
        getattr(pycparser, "__version__", "?"),
        sys.version,
        repr(sorted(options.items())),
        csource,
    ):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _is_fresh(parser: Any) -> bool:
    return not (
        parser._declarations
        or parser._included_declarations
        or parser._int_constants
        or parser._anonymous_counter
        or parser._recomplete
    )


#: A cache file larger than this is not read (the wgpu header's is 160 kB).
CACHE_MAX_BYTES = 64 << 20


def _load(path: Path, key: str) -> dict[str, Any] | None:
    try:
        # Non-blocking, and only a regular file of a sane size: a FIFO or a device put where
        # the file goes must not hang or flood the start-up.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > CACHE_MAX_BYTES:
                return None
            stored = pickle.load(f)
    except Exception as err:  # a torn or foreign file: parsed over and replaced
        _log.debug("cffi parse cache %s unreadable (%s)", path, err)
        return None
    if (
        not isinstance(stored, dict)
        or stored.get("key") != key
        or not isinstance(stored.get("state"), dict)
        or set(stored["state"]) != set(_PARSER_STATE)
        or not isinstance(stored["state"]["_declarations"], dict)
    ):
        return None
    return stored["state"]


def _store(path: Path, key: str, parser: Any) -> None:
    if parser._recomplete:
        return
    try:
        data = pickle.dumps(
            {"key": key, "state": {name: getattr(parser, name) for name in _PARSER_STATE}},
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        from blurapp.io.atomic import write_bytes

        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, data, overwrite=True)
    except Exception as err:  # a read-only cache, a full disk: parse next time as well
        _log.debug("cffi parse cache %s not written (%s)", path, err)


def _make_cached_parse(parse: Any) -> Any:
    """``Parser.parse`` that takes a large source's result from the cache when it can."""

    def cached_parse(self: Any, csource: str, override: bool = False, packed: bool = False,
                     pack: Any = None, dllexport: bool = False) -> None:  # fmt: skip
        if (
            len(csource) < CACHE_MIN_CHARS
            or not _is_fresh(self)
            or os.environ.get(NO_CACHE_ENV, "").strip() not in ("", "0")
        ):
            return parse(self, csource, override, packed, pack, dllexport)
        options = {"override": override, "packed": packed, "pack": pack, "dllexport": dllexport}
        key = cache_key(csource, options)
        path = cache_dir() / f"{key[:32]}.pickle"
        state = _load(path, key)
        if state is not None:
            for name, value in state.items():
                setattr(self, name, value)
            return None
        parse(self, csource, override, packed, pack, dllexport)
        _store(path, key, self)
        return None

    cached_parse.__wrapped__ = parse  # type: ignore[attr-defined]
    return cached_parse


def _cacheable(cparser: Any) -> bool:
    """Whether this cffi's ``Parser`` is the one the cache knows: ``parse``'s parameters and
    the attributes of a fresh parser as in cffi 1.17-2.1 (else no cache, silently)."""
    try:
        params = list(inspect.signature(cparser.Parser.parse).parameters)
        attrs = set(vars(cparser.Parser()))
    except Exception:
        return False
    return params == ["self", "csource", "override", "packed", "pack", "dllexport"] and (
        attrs == {*_PARSER_STATE, "_options", "_structnode2type", "_recomplete"}
    )


def install() -> bool:
    """Install the faster parse into cffi, and the cache of whole-header parses in front of
    it (when cffi's ``Parser`` is the one it knows), once per process.

    Returns:
        ``True`` when it is installed (now or before), ``False`` when cffi is missing or its
        ``Parser._parse`` is not one of those the copy mirrors (:data:`MIRRORED_PARSE_SHA256`).
    """
    global _installed, original_parse, original_full_parse
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
        if _cacheable(cparser) and not hasattr(cparser.Parser.parse, "__wrapped__"):
            original_full_parse = cparser.Parser.parse
            cparser.Parser.parse = _make_cached_parse(original_full_parse)
        _installed = True
        return True


def installed() -> bool:
    """Whether :func:`install` has replaced cffi's parse in this process."""
    return _installed
