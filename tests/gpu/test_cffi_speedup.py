"""blurapp.gpu.cffi_speedup: cffi builds the same types from the shorter parse."""

from __future__ import annotations

import re

import cffi
import pytest
from cffi import cparser

from blurapp.gpu import cffi_speedup

CDEF = """
typedef uint32_t Flags;
typedef struct Inner { int a; double b; } Inner;
typedef struct Outer { Inner inner; Inner const * list; size_t count; Flags flags; } Outer;
typedef enum Mode { Mode_A = 0, Mode_B = 7 } Mode;
typedef void (*Callback)(Outer const * outer, void * userdata);
typedef struct Holder { Callback callback; Mode mode; char name[16]; } Holder;
typedef int Unused1; typedef int Unused2; typedef struct Unused3 { int x; } Unused3;
"""
TYPES = ("Outer *", "Inner const *", "Holder[3]", "Callback", "Mode", "Flags *", "char[16]")


def _describe(ffi: cffi.FFI, name: str) -> tuple[object, ...]:
    t = ffi.typeof(name)
    fields = None
    item = getattr(t, "item", None)
    struct = item if item is not None and item.kind == "struct" else t
    if struct.kind == "struct":
        fields = [(f, d.type.cname, d.offset) for f, d in struct.fields]
    return t.kind, t.cname, ffi.sizeof(t) if t.kind != "function" else None, fields


def _types_with(parse: object, cdef: str, names: tuple[str, ...]) -> list[tuple[object, ...]]:
    saved = cparser.Parser._parse
    cparser.Parser._parse = parse
    try:
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        return [_describe(ffi, n) for n in names]
    finally:
        cparser.Parser._parse = saved


@pytest.fixture(scope="module")
def original() -> object:
    assert cffi_speedup.install(), f"cffi {cffi.__version__} is not one the speed-up knows"
    return cffi_speedup.original_parse


def test_types_are_the_same_as_with_cffis_own_parse(original) -> None:
    fast = cparser.Parser._parse
    assert fast is not original
    assert _types_with(fast, CDEF, TYPES) == _types_with(original, CDEF, TYPES)


def test_wgpu_header_types_are_the_same(original) -> None:
    from wgpu.backends.wgpu_native._ffi import get_wgpu_header

    header = get_wgpu_header()
    structs = sorted(set(re.findall(r"typedef struct (WGPU\w+) \{", header)))
    assert len(structs) > 50
    names = (*(f"{s} *" for s in structs[::6]), "WGPUTextureFormat", "WGPUBufferUsage *")
    assert _types_with(cparser.Parser._parse, header, names) == _types_with(original, header, names)


def test_only_the_typedefs_the_text_uses_are_declared(original, monkeypatch) -> None:
    seen: list[str] = []
    real = cparser._get_parser()

    class Recorder:
        def parse(self, text: str) -> object:
            seen.append(text)
            return real.parse(text)

    monkeypatch.setattr(cparser, "_get_parser", lambda: Recorder())
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    seen.clear()
    ffi.typeof("Outer *")
    declared = [line for line in seen[-1].splitlines() if line.startswith("typedef int ")]
    # cffi's own parse declares all eight typedefs of CDEF here (430 for wgpu's header).
    assert declared == [
        "typedef int Outer;",
        "typedef int __dotdotdotint__, __dotdotdotfloat__, __dotdotdot__;",
    ]


def test_the_installed_cffi_is_one_it_mirrors() -> None:
    """The fingerprint recorded in the module is the installed cffi's (with 2.1.1 here); a new
    cffi that changes _parse fails this test instead of silently losing 1.6 s of start-up."""
    fast = cparser.Parser._parse
    parse = cffi_speedup.original_parse if cffi_speedup.installed() else fast
    fingerprint = cffi_speedup.parse_fingerprint(parse)
    assert fingerprint in cffi_speedup.MIRRORED_PARSE_SHA256, (cffi.__version__, fingerprint)
    assert cffi_speedup.parse_fingerprint(cffi_speedup._make_parse(cparser)) != fingerprint


def _other_parse(self, csource):  # a _parse of some other cffi: same name, other code
    return cffi_speedup.original_parse(self, csource)


@pytest.mark.parametrize("replacement", [_other_parse, cparser.Parser.convert_pycparser_error])
def test_a_parse_it_does_not_mirror_is_left_alone(original, monkeypatch, replacement) -> None:
    monkeypatch.setattr(cffi_speedup, "_installed", False)
    monkeypatch.setattr(cparser.Parser, "_parse", replacement)
    assert cffi_speedup.install() is False
    assert cparser.Parser._parse is replacement
    assert not cffi_speedup.installed()


def test_a_parse_without_source_is_left_alone(original, monkeypatch) -> None:
    """A frozen bundle ships bytecode only: no source to fingerprint, so no speed-up."""
    monkeypatch.setattr(cffi_speedup, "_installed", False)
    monkeypatch.setattr(cparser.Parser, "_parse", original)

    def no_source(_obj: object) -> str:
        raise OSError("could not get source code")

    monkeypatch.setattr(cffi_speedup.inspect, "getsource", no_source)
    assert cffi_speedup.parse_fingerprint(original) is None
    assert cffi_speedup.install() is False
    assert cparser.Parser._parse is original


def test_the_version_number_alone_decides_nothing(original, monkeypatch) -> None:
    """A cffi 3.1 with the same _parse gets the speed-up; the code, not the number, decides."""
    monkeypatch.setattr(cffi_speedup, "_installed", False)
    monkeypatch.setattr(cparser.Parser, "_parse", original)
    monkeypatch.setattr(cffi, "__version_info__", (3, 1, 0))
    assert cffi_speedup.install() is True
    assert cparser.Parser._parse is not original
