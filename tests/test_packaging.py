"""Packaging: one version everywhere, the entry points, and the desktop files in packaging/
checked by the freedesktop validators and installed where menus and software centres look."""

from __future__ import annotations

import configparser
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import blurapp
from blurapp import cli
from blurapp.ui.app import ICON_SIZES

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
DESKTOP = PACKAGING / "blurapp.desktop"
METAINFO = PACKAGING / "io.github.blurapp.blurapp.metainfo.xml"


def _tool(name: str, apt_package: str) -> str:
    """The validator's path; a missing one fails the test (a skip would hide what it checks)."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not installed: apt-get install {apt_package} "
            "(packaging/system-deps.sh installs it)"
        )
    return path


def _desktop_entry(path: Path = DESKTOP) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive in desktop entries
    parser.read_string(path.read_text(encoding="utf-8"))
    return parser["Desktop Entry"]


def _metainfo() -> ET.Element:
    return ET.fromstring(METAINFO.read_text(encoding="utf-8"))


def _scripts(group: str) -> dict[str, str]:
    """The installed distribution's entry points of one group: name -> "module:function"."""
    eps = importlib.metadata.distribution("blurapp").entry_points
    return {ep.name: ep.value for ep in eps if ep.group == group}


def _toml_table(text: str, name: str) -> str:
    """The lines of one top-level table of a TOML file (tomllib is Python 3.11+)."""
    match = re.search(rf"^\[{re.escape(name)}\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    assert match, f"no [{name}] in pyproject.toml"
    return match.group(1)


def test_version_lives_in_one_place() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = _toml_table(pyproject, "project")
    assert not re.search(r"^version\s*=", project, re.M), "pyproject.toml repeats the version"
    assert re.search(r'^dynamic\s*=\s*\[[^]]*"version"', project, re.M)
    dynamic = _toml_table(pyproject, "tool.setuptools.dynamic")
    assert re.search(r'^version\s*=\s*\{\s*attr\s*=\s*"blurapp.__version__"', dynamic, re.M)
    assert importlib.metadata.version("blurapp") == blurapp.__version__


def test_every_package_is_listed_for_the_wheel() -> None:
    """[tool.setuptools] packages is a list: a new package left out of it would not ship."""
    table = _toml_table((ROOT / "pyproject.toml").read_text(), "tool.setuptools")
    listed = set(re.findall(r'"(blurapp[\w.]*)"', table))
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "blurapp").rglob("__init__.py")
    }
    assert found and found <= listed, sorted(found - listed)


def test_version_command_prints_it() -> None:
    script = Path(sys.executable).with_name("blurapp")
    assert script.is_file(), f"no console script {script}: pip install -e . first"
    proc = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout == f"blurapp {blurapp.__version__}\n"


def test_metainfo_newest_release_is_the_version() -> None:
    releases = _metainfo().findall("releases/release")
    assert releases, "the metainfo lists no release"
    dates = [r.get("date") for r in releases]
    assert dates == sorted(dates, reverse=True), "AppStream lists the newest release first"
    assert releases[0].get("version") == blurapp.__version__


def test_entry_points() -> None:
    assert _scripts("console_scripts") == {"blurapp": "blurapp.cli:main"}
    assert _scripts("gui_scripts") == {"blurapp-gui": "blurapp.cli:gui_main"}


def test_gui_script_opens_the_gui_on_its_argument(monkeypatch) -> None:
    import blurapp.ui.app

    opened: list[str | None] = []

    def fake_run_gui(image_path: str | None) -> int:
        opened.append(image_path)
        return 0

    monkeypatch.setattr(blurapp.ui.app, "run_gui", fake_run_gui)
    assert cli.gui_main([]) == 0
    assert cli.gui_main(["photo.png"]) == 0
    assert cli.gui_main(["apply"]) == 0  # a file named like a subcommand is still a file
    assert opened == [None, "photo.png", "apply"]


def test_gui_script_help_and_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.gui_main(["--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("usage: blurapp gui")
    with pytest.raises(SystemExit) as exc:
        cli.gui_main(["a.png", "b.png"])
    assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_desktop_entry_runs_the_gui_script() -> None:
    entry = _desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Exec"] == "blurapp-gui %f"
    assert entry["Exec"].split()[0] in _scripts("gui_scripts")
    assert entry["Icon"] == "blurapp"
    assert entry["StartupWMClass"] == "blurapp"
    assert "image/png" in entry["MimeType"].split(";")


def test_desktop_file_validates() -> None:
    validator = _tool("desktop-file-validate", "desktop-file-utils")
    proc = subprocess.run([validator, str(DESKTOP)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    problems = [
        line for line in proc.stdout.splitlines() if ": error:" in line or ": warning:" in line
    ]
    assert not problems, problems


def test_metainfo_validates() -> None:
    appstreamcli = _tool("appstreamcli", "appstream")
    proc = subprocess.run(
        [appstreamcli, "validate", "--no-net", "--pedantic", str(METAINFO)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_metainfo_describes_the_app() -> None:
    root = _metainfo()
    assert root.get("type") == "desktop-application"
    assert METAINFO.name == f"{root.findtext('id')}.metainfo.xml"
    assert root.findtext("name") == _desktop_entry()["Name"]
    assert root.findtext("summary")
    assert root.find("description/p") is not None
    launchable = root.find("launchable")
    assert launchable is not None and launchable.get("type") == "desktop-id"
    assert (PACKAGING / launchable.text).is_file()
    binaries = {b.text for b in root.findall("provides/binary")}
    assert binaries == set(_scripts("console_scripts")) | set(_scripts("gui_scripts"))
    assert root.find("content_rating").get("type") == "oars-1.1"


def test_icons_are_rendered_from_the_svg() -> None:
    """The PNGs match what packaging/render-icons.py draws from the SVG now (not stale)."""
    proc = subprocess.run(
        [sys.executable, str(PACKAGING / "render-icons.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pngs = sorted((ROOT / "assets" / "icons").glob("blurapp-*.png"))
    assert [p.name for p in pngs] == sorted(f"blurapp-{n}.png" for n in ICON_SIZES)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="freedesktop menus are Linux's")
def test_install_desktop(tmp_path) -> None:
    """install-desktop.sh puts every file where menus look; AppStream's tree check agrees."""
    appstreamcli = _tool("appstreamcli", "appstream")
    validator = _tool("desktop-file-validate", "desktop-file-utils")
    launcher = tmp_path / "bin" / "blurapp-gui"  # any executable will do for the menu entry
    launcher.parent.mkdir()
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    data = tmp_path / "usr" / "share"
    env = {**os.environ, "XDG_DATA_HOME": str(data)}
    proc = subprocess.run(
        ["sh", str(PACKAGING / "install-desktop.sh"), str(launcher)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

    installed = data / "applications" / "blurapp.desktop"
    assert _desktop_entry(installed)["Exec"] == f"{launcher} %f"
    assert subprocess.run([validator, str(installed)], timeout=60).returncode == 0
    assert (data / "metainfo" / METAINFO.name).read_bytes() == METAINFO.read_bytes()
    hicolor = data / "icons" / "hicolor"
    svg = ROOT / "assets" / "blurapp.svg"
    assert (hicolor / "scalable" / "apps" / "blurapp.svg").read_bytes() == svg.read_bytes()
    for n in ICON_SIZES:
        png = ROOT / "assets" / "icons" / f"blurapp-{n}.png"
        assert (hicolor / f"{n}x{n}" / "apps" / "blurapp.png").read_bytes() == png.read_bytes()

    # validate-tree also checks that the metainfo's launchable desktop file is there.
    proc = subprocess.run(
        [appstreamcli, "validate-tree", "--no-net", str(tmp_path / "usr")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no-metadata-found" not in proc.stdout


def test_install_desktop_refuses_a_launcher_it_cannot_write(tmp_path) -> None:
    odd = tmp_path / "my apps" / "blurapp-gui"
    odd.parent.mkdir()
    odd.write_text("#!/bin/sh\n")
    odd.chmod(0o755)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "share")}
    for launcher, why in ((odd, "letters, digits"), (tmp_path / "none", "not an executable")):
        proc = subprocess.run(
            ["sh", str(PACKAGING / "install-desktop.sh"), str(launcher)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2 and why in proc.stderr, proc.stderr
    assert not (tmp_path / "share").exists()
