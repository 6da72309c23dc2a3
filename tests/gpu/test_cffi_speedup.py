"""blurapp.gpu.cffi_speedup: cffi builds the same types from the shorter parse."""

from __future__ import annotations

import os
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


# --- the cache of whole-header parses -------------------------------------------------------


def _all_types(ffi: cffi.FFI, header: str) -> list[object]:
    """Every declaration by its C name, every struct's size and fields, every constant."""
    structs = sorted(set(re.findall(r"typedef struct (WGPU\w+) \{", header)))
    assert len(structs) > 80
    declared = ffi._parser._declarations
    assert sum(name.startswith("function ") for name in declared) > 100
    return [
        sorted(
            (name, tp._get_c_name() if hasattr(tp, "_get_c_name") else repr(tp), quals)
            for name, (tp, quals) in declared.items()
        ),
        [_describe(ffi, f"{s} *") for s in structs],
        sorted(ffi._parser._int_constants.items()),
    ]


@pytest.fixture()
def cache(original, tmp_path, monkeypatch):
    monkeypatch.setattr(cffi_speedup, "cache_dir", lambda: tmp_path / "cffi")
    monkeypatch.delenv(cffi_speedup.NO_CACHE_ENV, raising=False)
    assert hasattr(cparser.Parser.parse, "__wrapped__"), "the cache is not installed"
    return tmp_path / "cffi"


def _parses(monkeypatch) -> list[int]:
    """Counts the real parses behind the cache."""
    calls: list[int] = []
    real = cparser.Parser.parse.__wrapped__

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    cached = cffi_speedup._make_cached_parse(counting)
    monkeypatch.setattr(cparser.Parser, "parse", cached)
    return calls


def test_the_wgpu_header_from_the_cache_gives_the_same_types(cache, monkeypatch) -> None:
    from wgpu.backends.wgpu_native._ffi import get_wgpu_header

    header = get_wgpu_header()
    parses = _parses(monkeypatch)
    parsed = cffi.FFI()
    parsed.cdef(header)
    assert parses == [1] and len(list(cache.glob("*.pickle"))) == 1
    loaded = cffi.FFI()
    loaded.cdef(header)
    assert parses == [1], "the second fresh parser parsed again"
    assert loaded._parser._declarations is not parsed._parser._declarations
    assert _all_types(loaded, header) == _all_types(parsed, header)
    monkeypatch.setattr(cparser.Parser, "parse", cffi_speedup.original_full_parse)
    reference = cffi.FFI()
    reference.cdef(header)  # cffi's own parse, no cache at all
    assert _all_types(loaded, header) == _all_types(reference, header)


def test_a_device_is_made_through_the_cached_header(cache) -> None:
    """wgpu itself, imported in a new process, first parsing then loading (the real path)."""
    import subprocess
    import sys

    code = (
        "import blurapp.process as p; p.prepare_process();"
        "import wgpu.backends.wgpu_native as n;"
        "from blurapp.gpu.device import get_device; print(get_device().info['name'])"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(cache.parent / "xdg")}
    names = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        names.append(run.stdout.strip())
    assert names[0] and names[0] == names[1]
    assert len(list((cache.parent / "xdg" / "blurapp" / "cffi").glob("*.pickle"))) == 1


def _big_cdef() -> str:
    return CDEF + "".join(
        f"typedef struct S{i} {{ int a{i}; double b; }} S{i};\n" for i in range(300)
    )


@pytest.mark.parametrize(
    "content",
    [b"", b"not a pickle at all", b"\x80\x05K\x01.", None],  # empty, garbage, an int, torn
)
def test_a_bad_cache_file_is_parsed_over_and_replaced(cache, monkeypatch, content) -> None:
    source = _big_cdef()
    parses = _parses(monkeypatch)
    cffi.FFI().cdef(source)
    (path,) = cache.glob("*.pickle")
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2] if content is None else content)
    ffi = cffi.FFI()
    ffi.cdef(source)  # no exception, no warning: it parses
    assert parses == [1, 1]
    assert ffi.sizeof("S299") == ffi.sizeof("struct S0")
    assert path.read_bytes() == good  # written again, whole


def test_a_file_of_another_source_is_not_taken(cache, monkeypatch) -> None:
    source = _big_cdef()
    parses = _parses(monkeypatch)
    cffi.FFI().cdef(source)
    (path,) = cache.glob("*.pickle")
    other = source.replace("S299", "T299")
    key = cffi_speedup.cache_key(other, {"override": False, "packed": False, "pack": None,
                                         "dllexport": False})  # fmt: skip
    (cache / f"{key[:32]}.pickle").write_bytes(path.read_bytes())  # right name, wrong content
    ffi = cffi.FFI()
    ffi.cdef(other)
    assert parses == [1, 1]
    assert "struct T299" in ffi._parser._declarations and "struct S299" not in (
        ffi._parser._declarations
    )


def test_what_is_not_cached(cache, monkeypatch) -> None:
    parses = _parses(monkeypatch)
    small = cffi.FFI()
    small.cdef(CDEF)  # small: parsed, no file
    assert parses == [1] and not cache.exists()
    source = _big_cdef()
    small.cdef(source[len(CDEF) :])  # large, but this parser already holds declarations
    assert parses == [1, 1] and not cache.exists()
    monkeypatch.setenv(cffi_speedup.NO_CACHE_ENV, "1")
    cffi.FFI().cdef(source)
    assert parses == [1, 1, 1] and not cache.exists()  # switched off
    monkeypatch.delenv(cffi_speedup.NO_CACHE_ENV)
    cffi.FFI().cdef(source, packed=True)
    cffi.FFI().cdef(source)
    assert len(list(cache.glob("*.pickle"))) == 2  # the options are in the name


def test_an_unwritable_cache_still_parses(cache, monkeypatch) -> None:
    cache.parent.mkdir(exist_ok=True)
    cache.write_text("a file where the folder should be")
    ffi = cffi.FFI()
    ffi.cdef(_big_cdef())
    assert ffi.sizeof("S7") > 0


@pytest.mark.parametrize("kind", ["fifo", "folder", "huge"])
def test_a_special_file_where_the_cache_file_goes_is_not_read(cache, monkeypatch, kind) -> None:
    """A FIFO must not hang the start-up, a folder or a huge file must not be read: parsed."""
    source = _big_cdef()
    key = cffi_speedup.cache_key(source, {"override": False, "packed": False, "pack": None,
                                          "dllexport": False})  # fmt: skip
    path = cache / f"{key[:32]}.pickle"
    cache.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        monkeypatch.setattr(cffi_speedup, "CACHE_MAX_BYTES", 10)
        cffi.FFI().cdef(source)  # writes a real file, larger than the limit now
    parses = _parses(monkeypatch)
    ffi = cffi.FFI()
    ffi.cdef(source)
    assert parses == [1] and ffi.sizeof("S3") > 0
    if kind != "huge":
        assert not path.is_file()  # a special file is never replaced
