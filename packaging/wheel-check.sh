#!/usr/bin/env bash
# Install the built wheel, with its dependencies, into a fresh virtual environment in a scratch
# folder and run that environment's blurapp and blurapp-gui from there, away from the source
# tree: a shader, sample or icon that does not ship, or a missing dependency, fails here.
# Usage: packaging/wheel-check.sh WHEEL [PYTHON]
#   WHEEL: dist/blurapp-<version>-py3-none-any.whl (`make wheel` builds it)
#   PYTHON: the interpreter that makes the virtual environment (default .venv/bin/python)
# Dependencies come from the package index, or from pip's cache when it has them.
set -euo pipefail
[[ $# -ge 1 && -f $1 ]] || { echo "usage: $0 WHEEL [PYTHON] (make wheel builds the wheel)" >&2; exit 2; }
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
python=${2:-.venv/bin/python}
repo=$(pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

"$python" -m venv "$scratch/venv"
venv=$scratch/venv/bin
"$venv/python" -m pip install -q --disable-pip-version-check "$wheel"
cd "$scratch"
# Nothing from the source tree or the developer's venv may leak in.
unset PYTHONPATH VIRTUAL_ENV

"$venv/python" - "$wheel" <<'PY'
import importlib.metadata
import importlib.resources as res
import os
import sys

import blurapp

wheel = os.path.basename(sys.argv[1])
here = os.path.dirname(blurapp.__file__)
assert here.startswith(sys.prefix), f"blurapp imported from {here}, not the fresh venv"
version = importlib.metadata.version("blurapp")
assert version == blurapp.__version__, (version, blurapp.__version__)
assert wheel.startswith(f"blurapp-{version}-"), f"{wheel} is not version {version}"
shaders = sorted(p.name for p in res.files("blurapp.shaders").iterdir() if p.name.endswith(".wgsl"))
assert shaders, "no .wgsl shaders in the wheel"
samples = [p.name for p in (res.files("blurapp.assets") / "samples").iterdir()]
assert "astronaut.png" in samples and "LICENSES.md" in samples, samples
icons = sorted(p.name for p in (res.files("blurapp.assets") / "icons").iterdir())
assert (res.files("blurapp.assets") / "blurapp.svg").is_file(), "no blurapp.svg in the wheel"
print(f"wheel ok: blurapp {version}, {len(shaders)} shaders, {len(samples)} sample files, "
      f"{len(icons)} PNG icons")
PY

want="blurapp $("$venv/python" -c 'import blurapp; print(blurapp.__version__)')"
got=$("$venv/blurapp" --version)
[[ $got == "$want" ]] || { echo "wheel-check: blurapp --version says '$got', not '$want'" >&2; exit 1; }
"$venv/blurapp" kernel gaussian:sigma=2 --no-plan > /dev/null
"$venv/blurapp" apply "$repo/assets/samples/camera.png" -o out.png --kernel gaussian:sigma=2 --strategy separable
"$venv/blurapp" apply "$repo/assets/samples/camera.png" -o out-tiled.png --kernel laplacian --strategy tiled
"$venv/python" - "$repo/assets/samples/camera.png" <<'PY'
import sys

import numpy as np
from PIL import Image

source = np.asarray(Image.open(sys.argv[1]))
for name in ("out.png", "out-tiled.png"):
    out = np.asarray(Image.open(name))
    assert out.shape == source.shape and out.dtype == source.dtype, (name, out.shape, out.dtype)
    assert not np.array_equal(out, source), f"{name} is the unfiltered input"
PY
echo "wheel ok: GPU strategies (separable, tiled) ran from the installed wheel"

# The desktop launcher's entry point: its help, then the application object with the icon,
# offscreen (no window is shown, no event loop runs).
help=$("$venv/blurapp-gui" --help)
[[ $help == "usage: blurapp gui"* ]] || { echo "wheel-check: blurapp-gui --help: $help" >&2; exit 1; }
QT_QPA_PLATFORM=offscreen "$venv/python" - <<'PY'
from blurapp.ui.app import ICON_SIZES, app_icon, make_app
from blurapp.ui.main_window import MainWindow  # noqa: F401 (imports the whole GUI)

app = make_app()
sizes = sorted(s.width() for s in app.windowIcon().availableSizes())
assert sizes == sorted(ICON_SIZES), sizes
assert not app_icon().isNull()
PY
echo "wheel ok: blurapp-gui is installed and the GUI imports with its icon"
