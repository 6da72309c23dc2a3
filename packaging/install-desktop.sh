#!/bin/sh
# Install blurapp's menu entry, AppStream metainfo and icons (SVG and every PNG size, in the
# hicolor theme) for the current user, from this checkout: packaging/ and assets/.
# Usage: packaging/install-desktop.sh [LAUNCHER]
#   LAUNCHER: the program the menu entry runs, e.g. "$PWD/.venv/bin/blurapp-gui" or the
#   bundle's "$PWD/dist/blurapp/blurapp"; by default plain blurapp-gui, found on PATH.
# XDG_DATA_HOME (default ~/.local/share) says where; the same files under /usr/share or
# /usr/local/share make a system-wide install.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ASSETS=$HERE/../assets
DATA=${XDG_DATA_HOME:-$HOME/.local/share}
METAINFO=io.github.blurapp.blurapp.metainfo.xml
LAUNCHER=${1:-}

if [ -n "$LAUNCHER" ]; then
  case $LAUNCHER in
    /*) ;;
    *) LAUNCHER=$(pwd)/$LAUNCHER ;;  # the menu does not run it from here
  esac
  [ -x "$LAUNCHER" ] || { echo "install-desktop: $LAUNCHER is not an executable" >&2; exit 2; }
  # Exec= has its own quoting rules; a plain path needs none of them.
  case $LAUNCHER in
    *[!A-Za-z0-9/._+-]*)
      echo "install-desktop: the launcher's path may only have letters, digits and /._+-: $LAUNCHER" >&2
      exit 2 ;;
  esac
fi

install -d "$DATA/applications"
if [ -n "$LAUNCHER" ]; then
  sed "s|^Exec=blurapp-gui |Exec=$LAUNCHER |" "$HERE/blurapp.desktop" > "$DATA/applications/blurapp.desktop"
  chmod 644 "$DATA/applications/blurapp.desktop"
else
  install -m644 "$HERE/blurapp.desktop" "$DATA/applications/blurapp.desktop"
  command -v blurapp-gui >/dev/null 2>&1 ||
    echo "install-desktop: note: blurapp-gui is not on PATH; the menu entry needs it there," \
      "or run this again with its full path as the argument" >&2
fi
install -Dm644 "$HERE/$METAINFO" "$DATA/metainfo/$METAINFO"
install -Dm644 "$ASSETS/blurapp.svg" "$DATA/icons/hicolor/scalable/apps/blurapp.svg"
count=0
for png in "$ASSETS"/icons/blurapp-*.png; do
  n=${png##*/blurapp-}
  n=${n%.png}
  install -Dm644 "$png" "$DATA/icons/hicolor/${n}x${n}/apps/blurapp.png"
  count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "install-desktop: no PNG icons in $ASSETS/icons" >&2; exit 1; }

# Refresh the caches where their tools exist; menus pick the files up without them too.
if command -v update-desktop-database >/dev/null 2>&1; then
  update-desktop-database -q "$DATA/applications" || true
fi
if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$DATA/icons/hicolor/index.theme" ]; then
  gtk-update-icon-cache -q "$DATA/icons/hicolor" || true
fi
echo "installed under $DATA: applications/blurapp.desktop, metainfo/$METAINFO," \
  "and the icon in icons/hicolor (SVG and $count PNG sizes)"
