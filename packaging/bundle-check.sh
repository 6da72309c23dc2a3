#!/usr/bin/env bash
# Run the built one-folder bundle from a scratch folder outside the repository, with a bare
# environment (no venv, no PYTHONPATH), and compare what it does with the source tree's blurapp:
# the version, `kernel`, a GPU `apply` on the sample (byte-identical output), a bad kernel spec
# (one line, exit 2), and the GUI starting offscreen.
# Usage: packaging/bundle-check.sh [BUNDLE] [REFERENCE]
#   BUNDLE: the folder `make dist` builds (default dist/blurapp)
#   REFERENCE: the source tree's command (default .venv/bin/blurapp)
set -euo pipefail
repo=$(pwd)
bundle=$(cd "${1:-dist/blurapp}" && pwd)
reference=$(cd "$(dirname "${2:-.venv/bin/blurapp}")" && pwd)/$(basename "${2:-.venv/bin/blurapp}")
exe=$bundle/blurapp
sample=$repo/assets/samples/camera.png
[[ -x $exe ]] || { echo "bundle-check: no executable $exe (make dist builds it)" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
runtime=${XDG_RUNTIME_DIR:-$scratch}

fail() {
  echo "bundle-check: $*" >&2
  exit 1
}

# The bundle as a user starts it: only the system's PATH, a HOME and a runtime folder.
bundled() {
  env -i PATH=/usr/bin:/bin HOME="$scratch" XDG_RUNTIME_DIR="$runtime" "$@"
}

want=$("$reference" --version)
got=$(bundled "$exe" --version)
[[ $got == "$want" ]] || fail "--version says '$got', the source tree '$want'"
echo "bundle ok: $got"

# Both in the same bare environment: `kernel` names the cost table auto used, and a table the
# real HOME's cache holds (blurapp tune) is not the bundle's business.
bundled "$exe" kernel gaussian:sigma=2 > kernel-bundle.txt
bundled "$reference" kernel gaussian:sigma=2 > kernel-source.txt
cmp -s kernel-bundle.txt kernel-source.txt ||
  fail "'kernel gaussian:sigma=2' differs from the source tree's: $(diff kernel-source.txt kernel-bundle.txt | head -5)"
echo "bundle ok: kernel gaussian:sigma=2 prints what the source tree prints"

apply=(apply "$sample" --kernel gaussian:sigma=2 --strategy separable)
bundled "$exe" "${apply[@]}" -o out.png
"$reference" "${apply[@]}" -o source.png
cmp -s out.png source.png || fail "apply wrote an out.png that differs from the source tree's"
echo "bundle ok: apply --strategy separable on camera.png is byte-identical ($(stat -c %s out.png) bytes)"

# The codecs whose native libraries come with their wheels (pillow-heif's libheif, rawpy's
# LibRaw, Pillow's libavif): a HEIC, an AVIF and a DNG made by the source tree, filtered by
# both, byte-identical.
"$reference" apply "$sample" -o cam.heic --kernel identity --strategy cpu --quiet
"$reference" apply "$sample" -o cam.avif --kernel identity --strategy cpu --quiet
"$(dirname "$reference")/python" -c "import sys; sys.path.insert(0, '$repo')
from pathlib import Path
from tests.cli.test_new_formats import make_dng
make_dng(Path('cam.dng'))"
for photo in cam.heic cam.avif cam.dng; do
  bundled "$exe" apply "$photo" -o "bundle-$photo.tif" --kernel box:3 --strategy cpu --quiet
  "$reference" apply "$photo" -o "source-$photo.tif" --kernel box:3 --strategy cpu --quiet
  cmp -s "bundle-$photo.tif" "source-$photo.tif" || fail "apply $photo differs from the source tree's"
done
echo "bundle ok: HEIC, AVIF and DNG read as the source tree reads them"

status=0
bundled "$exe" apply "$sample" -o bad.png --kernel gaussian:sigma=oops 2> bad.txt || status=$?
lines=$(wc -l < bad.txt)
if [[ $status != 2 || $lines != 1 || -e bad.png ]] || grep -q Traceback bad.txt; then
  fail "a bad kernel spec gave exit $status and $lines lines: $(cat bad.txt)"
fi
echo "bundle ok: a bad kernel spec is one line, exit 2: $(cat bad.txt)"

# The GUI on the sample, on Qt's offscreen platform: still running after a while means the Qt
# platform plugin and the GUI's modules loaded; a missing one ends it at once with an error.
status=0
bundled env QT_QPA_PLATFORM=offscreen timeout 20 "$exe" "$sample" > gui.txt 2>&1 || status=$?
[[ $status == 124 ]] || fail "the GUI exited with status $status within 20 s: $(tail -5 gui.txt)"
echo "bundle ok: the GUI starts offscreen and keeps running"
echo "bundle ok: $(du -sh "$bundle" | cut -f1) in $bundle"
