#!/usr/bin/env bash
# Build the wheel, unpack it into a scratch folder and run blurapp from there, away from the
# source tree, so that missing package data (shaders, samples) fails loudly.
set -euo pipefail
python=${1:-.venv/bin/python}
python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python")
repo=$(pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$python" -m pip wheel -q --no-deps -w "$scratch/dist" "$repo"
"$python" -m pip install -q --no-deps --target "$scratch/site" "$scratch"/dist/*.whl
cd "$scratch"
export PYTHONPATH="$scratch/site"
"$python" - <<'PY'
import importlib.resources as res
import os
import blurapp

here = os.path.dirname(blurapp.__file__)
assert here.startswith(os.environ["PYTHONPATH"]), f"blurapp imported from {here}, not the wheel"
shaders = sorted(p.name for p in res.files("blurapp.shaders").iterdir() if p.name.endswith(".wgsl"))
assert shaders, "no .wgsl shaders in the wheel"
samples = [p.name for p in (res.files("blurapp.assets") / "samples").iterdir()]
assert "astronaut.png" in samples and "LICENSES.md" in samples, samples
print(f"wheel ok: {len(shaders)} shaders, {len(samples)} sample files")
PY
"$python" -m blurapp kernel gaussian:sigma=2 --no-plan > /dev/null
"$python" -m blurapp apply "$repo/assets/samples/camera.png" -o out.png --kernel gaussian:sigma=2 --strategy separable
"$python" -m blurapp apply "$repo/assets/samples/camera.png" -o out-tiled.png --kernel laplacian --strategy tiled
echo "wheel ok: GPU strategies ran from the installed wheel"
