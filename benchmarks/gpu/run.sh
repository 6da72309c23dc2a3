#!/usr/bin/env bash
# Run THERE, on the GPU machine, through the `device` tool (see benchmarks/gpu/README.md):
#   run(command="bash benchmarks/gpu/run.sh", carry=[".whl", ".gl"], timeout_s=540)
# One command, every figure issue 6 asks for on a real GPU: the adapter, the copy ceiling and
# separable's share of it on 4K RGBA8 at R=8, the strategies and radii at 1024² and 4K; issue
# 24's cost table and auto's regret; and the GPU test suite. Everything lands in $OUT (JSON and text) even if a later step fails.
# DRY_RUN=1 rehearses it here, on lavapipe, with .venv's Python and small images.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-out/gpu}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
dry=${DRY_RUN:-}
python=python3
big=3840x2160
mid=1024x1024
if [[ -n $dry ]]; then
  python=.venv/bin/python
  big=640x360
  mid=256x256
else
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1
XDG_RUNTIME_DIR=$(mktemp -d)
export XDG_RUNTIME_DIR
blurapp() { "$python" -m blurapp "$@"; }
step() { echo; echo "== $*"; "$@"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || true
if ! blurapp info --json > "$out/info.json"; then
  # The image has the driver but not always its ICD files where the loader looks.
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  blurapp info --json > "$out/info.json" || exit 1
fi
cat "$out/info.json"
if [[ -z $dry ]] && grep -q '"software": true' "$out/info.json"; then
  echo "run.sh: wgpu chose a software adapter (info.json): these would not be GPU figures" >&2
  exit 1
fi

step blurapp bench --size "$big" --radii 8 --strategies separable,transpose,tiled,direct \
  --format rgba8 --repeat 10 --warmup 3 --ceiling --json "$out/ceiling-rgba8.json" --quiet
step blurapp bench --size "$big" --radii 8 --strategies separable,direct --format rgba32f \
  --repeat 10 --warmup 3 --ceiling --json "$out/ceiling-rgba32f.json" --quiet
step blurapp bench --size "$mid" --size "$big" --radii 1,2,4,8,16 \
  --strategies direct,tiled,separable,transpose --repeat 5 --warmup 2 \
  --json "$out/strategies.json" --quiet
# Issue 24 items 3 and 7: this adapter's cost table (calibrated afresh, in a cache of its own)
# and auto's regret against the fastest strategy on held-out kernels, timed in one run.
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
step blurapp tune --json > "$out/cost-table.json"
step "$python" benchmarks/auto_regret.py --size "$mid" --repeat 3 --json "$out/auto-regret.json" \
  > /dev/null
BLURAPP_REQUIRE_GPU=1 step "$python" -m pytest -q -x -p no:cacheprovider tests/gpu \
  tests/test_engine.py
echo "run.sh: done; files in $out"
