#!/usr/bin/env bash
# Build the typed ROS 2 interfaces into a venv that holds the PyPI ROS wheels (called by
# bootstrap.sh when msg/, the CMake files or the pins change; safe to run by hand):
#   - personal/msg/* from msg/*.msg, with the repository's own CMakeLists.txt
#     (PERSONAL_INTERFACES_ONLY: the Python library itself is the editable pip install);
#     the generated Python goes to <venv>/lib/personal_rosidl/personal, which
#     personal/__init__.py adds to the `personal` package (see docs/interfaces.md);
#   - tf2_msgs/msg/TFMessage (interfaces/tf2_msgs) and interbotix_xs_msgs/msg/JointGroupCommand +
#     JointSingleCommand (interfaces/interbotix_xs_msgs), each unless a real one is importable.
# Build trees stay in <venv>/.build, so a changed .msg rebuilds only what depends on it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$(cd "${1:-$ROOT/.venv}" && pwd)"
PY="$VENV/bin/python"
BUILD="$VENV/.build"
JOBS="${PERSONAL_BUILD_JOBS:-$(nproc)}"
export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"

configure_build_install() {  # <name> <source dir> [cmake args...]
  local name="$1" src="$2"; shift 2
  local t0=$SECONDS
  cmake -S "$src" -B "$BUILD/$name" -Wno-dev --log-level=WARNING \
    -DCMAKE_INSTALL_PREFIX="$VENV" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DPython3_EXECUTABLE="$PY" -DPERSONAL_SOURCE_DIR="$ROOT" "$@" >"$BUILD/$name.log" 2>&1 \
    || { cat "$BUILD/$name.log" >&2; echo "[interfaces] configuring $name failed (log above)" >&2; exit 1; }
  cmake --build "$BUILD/$name" -j "$JOBS" >>"$BUILD/$name.log" 2>&1 \
    || { tail -50 "$BUILD/$name.log" >&2; echo "[interfaces] building $name failed ($BUILD/$name.log)" >&2; exit 1; }
  cmake --install "$BUILD/$name" >>"$BUILD/$name.log" 2>&1 \
    || { tail -20 "$BUILD/$name.log" >&2; echo "[interfaces] installing $name failed ($BUILD/$name.log)" >&2; exit 1; }
  echo "[interfaces] $name built and installed into $VENV in $((SECONDS - t0)) s" >&2
}

build_peer_interfaces() {  # <package> <module to import>: a peer's messages from interfaces/<package>
  local pkg="$1" mod="$2"
  if [ ! -f "$VENV/share/$pkg/cmake/${pkg}Config.cmake" ] && "$PY" -c "import $mod" 2>/dev/null; then
    echo "[interfaces] $pkg comes with this ROS; not building it" >&2
    return
  fi
  # a copy with package.xml in place (the repository keeps it as package.xml.in: no nested package)
  local src="$BUILD/${pkg}_src"
  rm -rf "$src/msg"; mkdir -p "$src/msg"
  cp "$ROOT/interfaces/$pkg/CMakeLists.txt" "$src/CMakeLists.txt"
  cp "$ROOT/interfaces/$pkg/package.xml.in" "$src/package.xml"
  cp "$ROOT/interfaces/$pkg/msg/"*.msg "$src/msg/"
  configure_build_install "$pkg" "$src"
}

mkdir -p "$BUILD"
build_peer_interfaces tf2_msgs tf2_msgs.msg
build_peer_interfaces interbotix_xs_msgs interbotix_xs_msgs.msg
configure_build_install personal "$ROOT" -DPERSONAL_INTERFACES_ONLY=ON -DPYTHON_INSTALL_DIR=lib/personal_rosidl
