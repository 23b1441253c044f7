#!/usr/bin/env bash
# Remake the README's pictures from the default commands, so they can be redone after any change:
#   docs/img/pog_report.png  <- bin/personal launch pog_eval   (the main job, default arguments)
#   docs/img/pan_report.png  <- bin/personal launch pan_eval   (default arguments)
# Each run goes to a fresh folder under runs/readme_images/; the page shows the run folder relative
# to the repository, never the machine's absolute path. Needs Debian's chromium (bootstrap installs it).
# About 3 minutes on an idle 2-core machine. Usage: scripts/readme_images.sh [pog|pan ...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BROWSER=$(command -v chromium || command -v chromium-browser) || { echo "chromium not found (scripts/bootstrap.sh installs it)" >&2; exit 2; }
OUT=runs/readme_images/$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$OUT"

shoot() {  # <graph> <image>
  local graph="$1" image="$2"
  bin/personal launch "$graph" out_dir:="$OUT/$graph"
  local page
  page=$(ls -d "$OUT/$graph"/*/report.html | tail -1)
  "$BROWSER" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars \
    --virtual-time-budget=8000 --window-size=1280,1600 --screenshot="$ROOT/$image" "file://$ROOT/$page" 2>/dev/null
  if grep -q "$ROOT" "$page"; then
    echo "warning: $page still contains $ROOT" >&2
  fi
  echo "$image <- $page"
}

[ $# -gt 0 ] || set -- pog pan
for w in "$@"; do
  case "$w" in
    pog) shoot pog_eval docs/img/pog_report.png ;;
    pan) shoot pan_eval docs/img/pan_report.png ;;
    *) echo "unknown picture $w (pog | pan)" >&2; exit 2 ;;
  esac
done
