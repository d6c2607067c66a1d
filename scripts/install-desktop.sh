#!/usr/bin/env bash
# Install Hearth in the current user's application menu (`make install-desktop`).
#
# Writes $XDG_DATA_HOME/applications/hearth.desktop (XDG_DATA_HOME defaults to ~/.local/share)
# with Exec pointing at the bundle (dist/hearth/hearth) if it is built, else at the venv's
# entry point (.venv/bin/hearth); HEARTH_EXEC=/path/to/hearth chooses another. The icon goes
# to $XDG_DATA_HOME/icons/hicolor/scalable/apps/hearth.svg. Nothing needs root.
# `scripts/install-desktop.sh --uninstall` removes both.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data="${XDG_DATA_HOME:-$HOME/.local/share}"
apps="$data/applications"
icon_dir="$data/icons/hicolor/scalable/apps"

refresh() {
  # Menus notice new entries on their own (inotify); these make it immediate where present.
  if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$apps" 2>/dev/null || true
  fi
  if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$data/icons/hicolor/index.theme" ]; then
    gtk-update-icon-cache -q -t "$data/icons/hicolor" 2>/dev/null || true
  fi
  if command -v xdg-desktop-menu >/dev/null 2>&1; then
    XDG_DATA_HOME="$data" xdg-desktop-menu forceupdate --mode user 2>/dev/null || true
  fi
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$apps/hearth.desktop" "$icon_dir/hearth.svg"
  refresh
  echo "Removed $apps/hearth.desktop and $icon_dir/hearth.svg"
  exit 0
fi

if [ -n "${HEARTH_EXEC:-}" ]; then
  exe="$HEARTH_EXEC"
elif [ -x "$root/dist/hearth/hearth" ]; then
  exe="$root/dist/hearth/hearth"
elif [ -x "$root/.venv/bin/hearth" ]; then
  exe="$root/.venv/bin/hearth"
else
  echo "install-desktop: nothing to launch yet: run 'make bundle' (or 'make run' for the venv) first" >&2
  exit 1
fi
case "$exe" in /*) ;; *) exe="$(pwd)/$exe" ;; esac
if [ ! -x "$exe" ]; then
  echo "install-desktop: $exe is not an executable" >&2
  exit 1
fi

# Exec quoting per the Desktop Entry spec: inside double quotes, \ " ` $ are escaped with a
# backslash; then, as for every string value, each backslash is doubled; a literal % is %%.
quoted=$(printf '%s' "$exe" | sed -e 's/[\\"`$]/\\&/g' -e 's/\\/\\\\/g' -e 's/%/%%/g')
# TryExec is a plain string: only backslashes are escaped.
tryexec=$(printf '%s' "$exe" | sed -e 's/\\/\\\\/g')

mkdir -p "$apps" "$icon_dir"
install -m 644 "$root/resources/hearth.svg" "$icon_dir/hearth.svg"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tmp="$work/hearth.desktop"
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    Exec=*) printf 'Exec="%s"\n' "$quoted" ;;
    TryExec=*) printf 'TryExec=%s\n' "$tryexec" ;;
    *) printf '%s\n' "$line" ;;
  esac
done < "$root/resources/hearth.desktop" > "$tmp"
chmod 644 "$tmp"
if command -v desktop-file-validate >/dev/null 2>&1; then
  desktop-file-validate "$tmp" || { echo "install-desktop: the entry did not validate" >&2; exit 1; }
fi
cp "$tmp" "$apps/hearth.desktop"
refresh
echo "Installed $apps/hearth.desktop (Exec: $exe) and $icon_dir/hearth.svg"
