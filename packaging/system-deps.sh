#!/usr/bin/env bash
# Make sure the system packages blurapp needs are present: Mesa's lavapipe (a software WebGPU
# adapter when there is no hardware one), Qt's xcb libraries, Xvfb for screenshots, python3-venv,
# and the freedesktop validators the packaging tests run (desktop-file-validate, appstreamcli).
# As root with apt it installs what is missing; otherwise it prints the exact command and stops.
set -euo pipefail

packages=(
  mesa-vulkan-drivers
  xvfb xauth
  libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0
  libxcb-render-util0 libxcb-xinerama0 libxcb-shape0 libxcb-randr0
  libegl1 libgl1 libfontconfig1 libdbus-1-3 libglib2.0-0
  desktop-file-utils appstream
)

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; assert sys.version_info >= (3, 10)' 2>/dev/null; then
  echo "blurapp needs Python 3.10 or newer as '$python' (set PYTHON=/path/to/python3.x)" >&2
  exit 1
fi
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
  packages+=(python3-venv)
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "note: not a Debian/Ubuntu system; make sure a Vulkan driver (or Mesa's lavapipe) and Qt's xcb libraries are installed" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "blurapp needs these system packages; run this, then 'make' again:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
