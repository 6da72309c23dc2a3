#!/usr/bin/env python3
"""A fresh attack on the window, as a careless or hostile user (issue 26), by the standard of
tests/fuzz/attack_fresh.py: each case runs the real window (offscreen Qt) in its own process, in
a scratch folder copied from a template (photos, a 16-bit PNG, an ``.npy`` with ±inf, a kernel
file, a text file, a broken PNG, a folder named ``x.png``, a FIFO, links to the photo, a PNG
declaring 300 megapixels, a read-only folder), drives it through its own dialogs (the save and
open dialogs answered with what the case types, every question box answered by clicking one of
its buttons, chosen by the case or at random), and is judged whatever it did:

- the process exits 0 by itself, within its time limit: no traceback, no crash, no hang;
- nothing on stderr but Qt's own offscreen notes: no RuntimeWarning, no exception printed by
  the event loop;
- every message shown (error dialogs, notices, the spec box's error, the status bar) is one
  line, without the command line's advice (``--overwrite``, ``--max-megapixels``) and without
  numbers of more than 20 digits;
- no temporary file (``.*.part``) left anywhere;
- no file of the template changed, except those the case is allowed to write (the file the
  user said Replace for, the original after Overwrite original), and those hold the filtered
  pixels (``blurapp.filter_image`` of the photo with the window's spec);
- a save asked for is written completely unless the user stopped it.

Run it from the repository root::

    .venv/bin/python tests/fuzz/attack_window.py             # everything, a few minutes
    .venv/bin/python tests/fuzz/attack_window.py -k save     # the cases whose name has "save"
    .venv/bin/python tests/fuzz/attack_window.py --list

It prints one line per case that falls short and a summary; exit 1 when any did. Its results
are in docs/RELIABILITY.md ("The window and the Python API").
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PY = sys.executable
HERE = Path(__file__).resolve()
QT_NOISE = re.compile(
    r"propagateSizeHints|QStandardPaths|This plugin does not support|^\s*$|XDG_RUNTIME_DIR"
    r"|^QVariant::load: unknown user type"  # Qt reading a settings file's bad @Variant
)
SETTING_WARNING = re.compile(r"^setting (\S+) ignored \(")
DESTINATIONS = (
    "photo.png", "hard.png", "soft.png", "other.png", "x.png", "fifo.png", "/dev/null",
    "missing/out.png", "ro/out.png", "L" * 260 + ".png", "noext", "out.unknown", "k.json",
    "fresh.png", "fresh.jpg", "fresh.tif", "fresh.npy",
)  # fmt: skip
OPENABLE = (
    "photo.png", "photo.jpg", "grey16.png", "inf.npy", "notes.txt", "broken.png", "empty.png",
    "x.png", "fifo.png", "dangling.png", "loop.png", "bomb.png", "k.json", "missing.png",
    "nul\x00name.png", "/dev/zero", "/dev/null", "ro",
)  # fmt: skip


# ---------------------------------------------------------------------------------- template


def make_template(root: Path) -> None:
    from blurapp.io import write_image

    rng = np.random.default_rng(11)
    photo = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    write_image(root / "photo.png", photo)
    write_image(root / "photo.jpg", photo)
    write_image(root / "other.png", photo[::-1].copy())
    write_image(root / "grey16.png", rng.integers(0, 65536, (21, 30), dtype=np.uint16))
    x = rng.random((19, 23)).astype(np.float32)
    x[3, 3], x[5, 6], x[7, 2] = np.inf, -np.inf, np.nan
    np.save(root / "inf.npy", x)
    (root / "k.json").write_text(
        '{"name": "box", "weights": [[0.25, 0.25], [0.25, 0.25]]}\n', encoding="utf-8"
    )
    (root / "notes.txt").write_text("not an image\n")
    (root / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    (root / "empty.png").write_bytes(b"")
    (root / "x.png").mkdir()
    (root / "ro").mkdir()
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", 20000, 15000, 8, 2, 0, 0, 0)
    (root / "bomb.png").write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")
    )


def materialise(template: Path, d: Path) -> None:
    """The scratch folder: a copy of the template plus what cannot be copied (FIFO, links)."""
    shutil.copytree(template, d, symlinks=True)
    os.mkfifo(d / "fifo.png")
    os.link(d / "photo.png", d / "hard.png")
    (d / "soft.png").symlink_to(d / "photo.png")
    (d / "dangling.png").symlink_to(d / "nowhere.png")
    (d / "loop.png").symlink_to(d / "loop.png")
    os.chmod(d / "ro", 0o555)


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = f"mode {stat.S_IFMT(st.st_mode)}"
    return out


# ---------------------------------------------------------------------------------- cases


@dataclass
class Case:
    name: str
    plan: dict  # what the child does (JSON)
    writes: tuple[str, ...] = ()  # template files the case may change
    timeout: float = 120.0
    extra: list[str] = field(default_factory=list)


def save_cases(rng: random.Random) -> list[Case]:
    cases = []
    for dest in DESTINATIONS:
        for answers in (["cancel"], ["another"], ["replace"], ["another", "replace"]):
            for what in ("result", "kernel"):
                writes = ("other.png",) if dest == "other.png" and "replace" in answers else ()
                if what == "kernel" and dest == "k.json" and "replace" in answers:
                    writes = ("k.json",)
                name = f"save-{what}:{dest[:20]}:{'+'.join(answers)}"
                filt = rng.choice(["png", "jpg", "tiff", "npy", ""])
                cases.append(Case(name, {"kind": "save", "what": what, "dest": dest,
                                         "answers": answers, "filter": filt}, writes))  # fmt: skip
    return cases


def overwrite_cases() -> list[Case]:
    cases = []
    for source in ("photo.png", "photo.jpg", "inf.npy", "grey16.png", "sample"):
        for answer in ("cancel", "overwrite"):
            for trick in ("", "replaced", "deleted"):
                if source == "sample" and trick:
                    continue
                # the case itself replaces or deletes the source ("trick"), after opening it
                allowed = (source,) if (answer == "overwrite" or trick) else ()
                cases.append(Case(
                    f"overwrite:{source}:{answer}:{trick or 'plain'}",
                    {"kind": "overwrite", "source": source, "answer": answer, "trick": trick},
                    allowed + (("hard.png", "soft.png") if source == "photo.png" else ()),
                ))  # fmt: skip
    return cases


def open_cases() -> list[Case]:
    cases = [Case(f"open:{p[:24]!r}", {"kind": "open", "paths": [p]}) for p in OPENABLE]
    for answer in ("cancel", "openAnyway"):
        plan = {"kind": "open", "paths": ["photo.png"], "max_pixels": 100, "answers": [answer]}
        cases.append(Case(f"open-large:{answer}", plan))
    cases.append(Case("open-bomb:openAnyway", {"kind": "open", "paths": ["bomb.png"],
                                               "answers": ["openAnyway"]}))  # fmt: skip
    return cases


def drop_cases(rng: random.Random) -> list[Case]:
    cases = []
    for i in range(40):
        paths = rng.sample(OPENABLE, rng.randint(1, 5))
        cases.append(Case(f"drop:{i}", {"kind": "drop", "paths": paths,
                                        "answers": ["cancel"] * 3}))  # fmt: skip
    return cases


SETTINGS_KEYS = (
    "kernel/last", "run/strategy", "run/tile", "run/border", "run/range", "run/alpha",
    "run/dtype", "run/channels", "run/linear", "run/convolve", "run/tolerance",
    "window/geometry", "window/state", "files/recent", "files/lastFolder",
    "files/lastKernelFolder",
)  # fmt: skip
RAW_JUNK = (
    "@Point(1 2)", "@Rect(1 2 3 4)", "@Size(-1 -1)", "@ByteArray(\\xff\\0)", "@Variant(\\0\\0\\0)",
    "@Variant(\\0\\0\\0\\x7f\\0\\0\\0\\x3zz)", "@Invalid()", "1e999", "-0", "nan", "true",
    "\\x1b[31mred", "a, b, @Point(1 1)", "", "   ", "gaussian:sigma=1e-300", "box:0",
    "@/dev/zero", "im:Disk:1e300", "disk:radius=256",
)  # fmt: skip


def settings_cases(rng: random.Random) -> list[Case]:
    cases = []
    for i in range(30):
        lines = {k: rng.choice(RAW_JUNK) for k in rng.sample(SETTINGS_KEYS, rng.randint(1, 16))}
        cases.append(Case(f"settings:{i}", {"kind": "settings", "raw": lines}))
    for kind in ("QPoint", "QByteArray", "int", "float", "list", "dict", "QColor", "bytes"):
        cases.append(Case(f"settings-typed:{kind}", {"kind": "settings", "typed": kind}))
    return cases


def close_cases() -> list[Case]:
    cases = []
    for stage in ("open", "live", "compute", "write", "strategies"):
        for answer in ("wait", "stay", "stop"):
            if stage in ("open", "live", "strategies") and answer != "wait":
                continue
            writes = ()
            cases.append(Case(f"close:{stage}:{answer}", {"kind": "close", "stage": stage,
                                                           "answer": answer}, writes))  # fmt: skip
    return cases


def spec_cases() -> list[Case]:
    texts = [
        "im:Disk:1e300", "box:99999999999999999999999999999999999999x3", "disk:radius=256",
        "gaussian:sigma=64", "motion:length=513,angle=45", "matrix:1x513:" + ",".join("1" * 513),
        "gaussian:sigma=2\x00", "box:3\nbox:5", "\u202ebox:3", "@/dev/zero", "@fifo.png",
        "@x.png", "@notes.txt", "@k.json", "a" * 5000, "matrix:513x513:" + ",".join("1" * 513**2),
        "matrix:513x513:" + ",".join("1" * 513**2) + "," + "2" * (2**20),
    ]  # fmt: skip
    return [Case(f"spec:{i}:{t[:24]!r}", {"kind": "spec", "text": t}) for i, t in enumerate(texts)]


def all_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    return [
        *open_cases(), *drop_cases(rng), *save_cases(rng), *overwrite_cases(),
        *settings_cases(rng), *close_cases(), *spec_cases(),
    ]  # fmt: skip


# ---------------------------------------------------------------------------------- judging


def judge(case: Case, d: Path, before: dict[str, str], rc, out: str, err: str) -> list[str]:
    problems = []
    if rc is None:
        return ["hung (killed after the time limit)"]
    noise = [line for line in err.splitlines() if not QT_NOISE.search(line)]
    # A setting ignored is said once, on stderr (the logging module's) and in the status bar:
    # the promise is one warning per key, not silence.
    warned = [m.group(1) for line in noise if (m := SETTING_WARNING.match(line))]
    if len(warned) != len(set(warned)):
        problems.append(f"a setting warned more than once: {sorted(warned)}")
    noise = [line for line in noise if not SETTING_WARNING.match(line)]
    if rc != 0:
        problems.append(f"exit {rc}")
    if noise:
        problems.append("stderr: " + " | ".join(noise[-3:])[:300])
    report = {}
    for line in reversed(out.splitlines()):
        if line.startswith("REPORT "):
            report = json.loads(line[7:])
            break
    else:
        problems.append("no report")
    for message in report.get("messages", []):
        if "\n" in message or "Traceback" in message:
            problems.append(f"message not one line: {message[:120]!r}")
        if "--overwrite" in message or "--max-megapixels" in message:
            problems.append(f"command-line advice in the window: {message[:120]!r}")
        if re.search(r"\d{21,}", message):
            problems.append(f"a number of more than 20 digits: {message[:120]!r}")
    problems += report.get("problems", [])
    left = [str(p.relative_to(d)) for p in d.rglob("*.part")]
    if left:
        problems.append(f"temporary files left: {left}")
    after = snapshot(d)
    for rel, digest in before.items():
        if rel.split("/")[0] in case.writes:
            continue
        if after.get(rel) != digest:
            problems.append(f"template file changed: {rel}")
    return problems


def run_case(case: Case, template: Path, work: Path) -> list[str]:
    d = Path(tempfile.mkdtemp(dir=work)) / "case"
    try:
        materialise(template, d)
        before = snapshot(d)
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(d / ".cfg"),
               "HOME": str(d)}  # fmt: skip
        env.setdefault("XDG_RUNTIME_DIR", "/tmp/blurapp-runtime-0")
        try:
            plan = d.parent / "plan.json"  # a 513×513 matrix spec is too long for argv
            plan.write_text(json.dumps(case.plan), encoding="utf-8")
            p = subprocess.run(
                [PY, str(HERE), "--child", str(plan), "--dir", str(d)],
                env=env, capture_output=True, timeout=case.timeout, cwd=d,
            )  # fmt: skip
            rc, out, err = (
                p.returncode,
                p.stdout.decode(errors="replace"),
                p.stderr.decode(errors="replace"),
            )
        except subprocess.TimeoutExpired as e:
            rc, out, err = None, (e.stdout or b"").decode(errors="replace"), ""
        return judge(case, d, before, rc, out, err)
    finally:
        if (d / "ro").exists():
            os.chmod(d / "ro", 0o755)
        shutil.rmtree(d.parent, ignore_errors=True)


# ---------------------------------------------------------------------------------- the child


def child(plan: dict, d: Path) -> int:
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QAbstractButton, QApplication, QFileDialog, QMessageBox

    app = QApplication([])
    from blurapp.ui.app import make_app

    make_app()
    from blurapp import pipeline
    from blurapp.io import read_image
    from blurapp.ui import files as files_module
    from blurapp.ui.main_window import MainWindow

    messages: list[str] = []
    problems: list[str] = []
    answers = list(plan.get("answers", []))
    rng = random.Random(json.dumps(plan))

    def pump(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    def wait(pred, ms: int = 60000) -> bool:
        end = time.monotonic() + ms / 1000
        while time.monotonic() < end:
            if pred():
                return True
            pump(20)
        return pred()

    def answer_box(box: QMessageBox) -> int:
        messages.append(" ".join([box.text(), box.informativeText()]).strip())
        names = [b.objectName() for b in box.findChildren(QAbstractButton) if b.objectName()]
        name = answers.pop(0) if answers else "cancel"
        if name not in names:
            name = rng.choice(names) if names else ""
        button = box.findChild(QAbstractButton, name)
        if button is not None:
            button.click()
        return 0

    QMessageBox.exec = answer_box  # type: ignore[method-assign]
    replies: list[tuple[str, str]] = []
    QFileDialog.getSaveFileName = lambda *a, **k: replies.pop(0) if replies else ("", "")  # type: ignore[method-assign]

    settings_path = d / ".cfg" / "blurapp.ini"
    settings_path.parent.mkdir(exist_ok=True)
    if plan["kind"] == "settings" and "raw" in plan:
        groups: dict[str, list[str]] = {}
        for key, value in plan["raw"].items():
            group, _, name = key.partition("/")
            groups.setdefault(group, []).append(f"{name}={value}")
        settings_path.write_text(
            "".join(f"[{g}]\n" + "\n".join(lines) + "\n" for g, lines in groups.items())
        )
    settings = QSettings(str(settings_path), QSettings.Format.IniFormat)
    if plan["kind"] == "settings" and "typed" in plan:
        from PySide6.QtCore import QByteArray, QPoint
        from PySide6.QtGui import QColor

        value = {"QPoint": QPoint(1, 2), "QByteArray": QByteArray(b"\xff\x00"), "int": 7,
                 "float": 1e308, "list": [1, QPoint(1, 1), "a"], "dict": {"a": [1]},
                 "QColor": QColor("red"), "bytes": b"\x00"}[plan["typed"]]  # fmt: skip
        for key in SETTINGS_KEYS:
            settings.setValue(key, value)
        settings.sync()
    window = MainWindow(settings, probe_adapter=False)
    window.error_shown.connect(messages.append)
    window.designer.spec.textChanged.connect(lambda _t: None)
    window.resize(1000, 700)
    window.show()
    if plan["kind"] != "settings":
        window.strategy_combo.setCurrentText("cpu")

    def filtered_ok(path: Path, source: np.ndarray) -> None:
        try:
            got = read_image(path).pixels
        except Exception as err:
            problems.append(f"{path.name} written but unreadable: {err}")
            return
        fmt = files_module.format_from_path(path)
        dtype = files_module.file_dtype(window.model.spec, source.dtype, fmt)
        want = pipeline.filter_pixels(source, window.model.spec, dtype=dtype).image
        if fmt in ("jpg", "webp"):
            if np.abs(got.astype(int) - want.astype(int)).mean() > 8:
                problems.append(f"{path.name}: pixels far from the filtered image")
        elif not np.array_equal(got, want, equal_nan=got.dtype.kind == "f"):
            problems.append(f"{path.name}: not the filtered pixels")

    def open_photo(name: str = "photo.png") -> np.ndarray | None:
        done = []
        window.result_ready.connect(lambda: done.append(1))
        if name == "sample":
            window.open_sample()
        else:
            window.open_path(d / name)
        if not wait(lambda: bool(done)):
            problems.append(f"{name}: no result after opening")
            return None
        return window.image

    kind = plan["kind"]
    if kind == "open":
        for p in plan["paths"]:
            kwargs = {"max_pixels": plan["max_pixels"]} if "max_pixels" in plan else {}
            target = p if p.startswith("/") else str(d / p)
            window.files.open_path(target, **kwargs)
        wait(lambda: not window.cpu_runner.is_busy() and not window.runner.is_busy("live"), 30000)
        pump(300)
        if plan.get("answers") == ["openAnyway"] and plan["paths"] == ["photo.png"]:
            if window.image is None:
                problems.append("Open anyway did not open the photo")
    elif kind == "drop":
        window.files.open_dropped([p if p.startswith("/") else str(d / p) for p in plan["paths"]])
        wait(lambda: not window.cpu_runner.is_busy() and not window.runner.is_busy("live"), 30000)
        pump(300)
        images = [p for p in plan["paths"] if p in ("photo.png", "photo.jpg", "grey16.png",
                                                    "inf.npy")]  # fmt: skip
        if images and window.image_path is None:
            problems.append(f"a drop with images {images} opened none")
        if window.files.last_notice:
            messages.append(window.files.last_notice)
    elif kind == "save":
        source = open_photo()
        if source is not None:
            dest = plan["dest"]
            target = dest if dest.startswith("/") else str(d / dest)
            filt = files_module.SAVE_FILTERS.get(plan["filter"], "")
            replies.append((target, filt))
            if "another" in plan["answers"]:
                replies.append((str(d / "fresh-again.png"), ""))
            saved: list[str] = []
            window.saved.connect(saved.append)
            if plan["what"] == "result":
                window.save_dialog()
            else:
                window.files.save_kernel_dialog()
            wait(lambda: not window.files.saving(), 60000)
            pump(200)
            for path in saved:
                if Path(path).resolve() == (d / "photo.png").resolve():
                    problems.append("the photo was written by a save")
                filtered_ok(Path(path), source)
    elif kind == "overwrite":
        source = open_photo(plan["source"])
        if source is not None:
            if plan["trick"] == "replaced":
                tmp = d / (plan["source"] + ".new")
                shutil.copyfile(d / "other.png", tmp)
                os.replace(tmp, d / plan["source"])
                before = (d / plan["source"]).read_bytes()
            elif plan["trick"] == "deleted":
                (d / plan["source"]).unlink()
            answers[:] = [plan["answer"]]
            saved = []
            window.saved.connect(saved.append)
            window.files.overwrite_original_dialog()
            wait(lambda: not window.files.saving(), 60000)
            pump(200)
            if plan["trick"] == "replaced" and (d / plan["source"]).read_bytes() != before:
                problems.append("a file that replaced the original was overwritten")
            if plan["trick"] == "deleted" and (d / plan["source"]).exists():
                problems.append("a deleted original was written again")
            if plan["answer"] == "overwrite" and not plan["trick"] and plan["source"] != "sample":
                if not saved:
                    problems.append("Overwrite original confirmed but nothing written")
                else:
                    filtered_ok(d / plan["source"], source)
    elif kind == "settings":
        pump(300)
        problems_seen = window.settings_reader.problems
        messages.extend(problems_seen)
        if len(problems_seen) != len(set(problems_seen)):
            problems.append("a setting warned twice")
        done = []
        window.result_ready.connect(lambda: done.append(1))
        window.set_image(np.zeros((9, 11, 3), np.uint8))
        if not wait(lambda: bool(done)):
            problems.append("no result after junk settings: " + window.live_error)
    elif kind == "close":
        stage, answer = plan["stage"], plan["answer"]
        import threading

        go = threading.Event()
        if stage == "write":
            real = files_module.write_image

            def slow_write(*a, **k):
                go.wait(20)
                return real(*a, **k)

            files_module.write_image = slow_write
        source = open_photo()
        out = d / "closing.png"
        if source is not None:
            if stage == "open":
                window.files.open_path(d / "grey16.png")
            elif stage == "live":
                window.model.set_kernel("disk:radius=40")
            elif stage == "strategies":
                window.compare.setCurrentIndex(2)
            elif stage in ("compute", "write"):
                if stage == "compute":
                    window.model.set_kernel("disk:radius=30")
                window.save_result(out)
            window.close()
            dialog = window.files.close_dialog
            if stage in ("compute", "write"):
                if dialog is None:
                    if window.files.saving():
                        problems.append("closing during a save showed no dialog")
                elif answer == "stay":
                    dialog.stay.click()
                elif answer == "stop":
                    dialog.stop.click()
            go.set()
            wait(lambda: not window.isVisible() or not window.files.saving(), 60000)
            pump(300)
            if answer == "stay":
                if not window.isVisible():
                    problems.append("Don't close closed the window")
                wait(lambda: not window.files.saving(), 60000)
                window.close()
            if not wait(lambda: not window.isVisible(), 60000):
                problems.append("the window did not close after the save")
            if stage in ("compute", "write") and answer != "stop":
                if not out.is_file():
                    problems.append("a save asked for was lost when closing")
                else:
                    filtered_ok(out, source)
    elif kind == "spec":
        text = plan["text"]
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest

        QApplication.clipboard().setText(text)
        field = window.designer.spec
        field.setFocus()
        field.selectAll()
        start = time.monotonic()
        QTest.keyClick(field, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
        window.designer.flush()
        if time.monotonic() - start > 20:
            problems.append(f"pasting took {time.monotonic() - start:.0f} s")
        done = []
        window.result_ready.connect(lambda: done.append(1))
        window.set_image(np.zeros((9, 11, 3), np.uint8))
        wait(lambda: bool(done) or bool(window.live_error), 60000)
        if window.designer.has_error():
            messages.append(window.designer.error.text())
        if window.live_error:
            messages.append(window.live_error)
            if "Error" in window.live_error.split(":")[0]:
                problems.append(f"a Python error in the window: {window.live_error[:160]}")
    messages.append(window.statusBar().currentMessage())
    if window.isVisible():
        window.files._pending.clear()  # the case is over; a save left running is judged above
        window.close()
    window.runner.wait_idle(30000)
    window.cpu_runner.wait_idle(30000)
    print("REPORT " + json.dumps({"messages": messages, "problems": problems}))
    sys.stdout.flush()
    del app
    return 0


# ---------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="only the cases whose name contains this")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(json.loads(Path(args.child).read_text(encoding="utf-8")), Path(args.dir))
    cases = [c for c in all_cases(args.seed) if args.k in c.name]
    if args.list:
        print("\n".join(c.name for c in cases))
        return 0
    work = Path(tempfile.mkdtemp(prefix="blurapp-attack-window-"))
    template = work / "template"
    template.mkdir()
    make_template(template)
    short = 0
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_case, c, template, work): c for c in cases}
        for future in concurrent.futures.as_completed(futures):
            case = futures[future]
            found = future.result()
            if found:
                short += 1
                print(f"SHORT {case.name}: " + "; ".join(found)[:600], flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{len(cases)} cases, {len(cases) - short} held, {short} short "
          f"({time.monotonic() - start:.0f} s)")  # fmt: skip
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
