#!/usr/bin/env bash
# Run HERE, before a device run (see benchmarks/gpu/README.md): put what the GPU machine lacks
# into two git-ignored folders that the `device` tool carries: .whl/ (blurapp's own wheel and
# wgpu, cffi, pycparser for that machine's Python 3.12; numpy, jinja2, pillow and pytest are
# there already) and .gl/ (the Vulkan loader, which its image may lack).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-.venv/bin/python}
for folder in /.whl/ /.gl/; do
  grep -qxF "$folder" .git/info/exclude || echo "$folder" >> .git/info/exclude
done
rm -rf .whl .gl
mkdir -p .whl .gl

# blurapp itself, built here (as `make wheel` does: from an empty build/lib, which setuptools
# would otherwise pack leftovers from).
rm -rf build/lib build/bdist.*
"$python" -m pip wheel -q --no-deps -w .whl .
platforms=()
for n in 2_28 2_27 2_17 2014 1; do
  case $n in 2014|1) platforms+=(--platform "manylinux${n}_x86_64") ;;
             *) platforms+=(--platform "manylinux_${n}_x86_64") ;; esac
done
for spec in "wgpu==0.32.0" "cffi>=1.17" "pycparser" "platformdirs>=4"; do
  "$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" -d .whl "$spec"
done

opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
mkdir -p /tmp/amd64/partial
apt-get "${opts[@]}" update -qq
(cd .gl && apt-get "${opts[@]}" download -qq libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 \
  libglx0 libgles2)
du -sh .whl .gl
ls .whl .gl
