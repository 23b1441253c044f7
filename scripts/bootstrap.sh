#!/usr/bin/env bash
# Idempotent set-up: Debian packages, .venv with pinned pip packages, the project (editable),
# then the typed ROS 2 interfaces (msg/*.msg, tf2_msgs, interbotix_xs_msgs: scripts/build_interfaces.sh).
# Re-runs are a no-op unless requirements, constraints, setup.py or this script changed (venv)
# or a .msg / the interface CMake files changed (interfaces only, incremental).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
# libusb: open3d's import needs it. mosquitto: the MQTT broker the smart-home tests start.
# libegl1 + libegl-mesa0 + libgl1-mesa-dri: MuJoCo offscreen rendering with MUJOCO_GL=egl on the CPU (robosuite).
# cmake + g++ + make + python3.11-dev: rosidl builds the typed interfaces into .venv.
# chromium: the tests open every report.html in headless Chromium (no missing image, expected tables).
# nodejs (+ npm where it is not bundled, as NodeSource's nodejs bundles it): the tests run Foxglove's
# published-protocol client (@foxglove/ws-protocol, test/node/).
APT_PKGS=(libusb-1.0-0 mosquitto mosquitto-clients libegl1 libegl-mesa0 libgl1-mesa-dri cmake g++ make python3.11-dev chromium nodejs)
command -v npm >/dev/null 2>&1 || APT_PKGS+=(npm)
STAMP=.venv/.bootstrap-stamp
want=$(cat requirements.txt requirements-cluster.txt constraints.txt setup.py scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)
IFACE_STAMP=.venv/.interfaces-stamp
# the pins the generated code depends on are part of it (ROS wheels, generators, NumPy headers)
iface_want=$( (grep -iE '^(ros-|catkin|empy|lark|numpy)' constraints.txt; cat CMakeLists.txt package.xml cmake/*.cmake msg/*.msg srv/*.srv action/*.action scripts/build_interfaces.sh \
  interfaces/*/CMakeLists.txt interfaces/*/package.xml.in interfaces/*/msg/*.msg) | sha256sum | cut -d' ' -f1)

missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[bootstrap] installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; }; then
  echo "[bootstrap] preparing .venv (pinned packages, about 2 minutes the first time)" >&2
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -r requirements.txt -c constraints.txt
  # Dask (optional for users: cluster:=dask); here so that the tests compare Dask runs with serial ones
  .venv/bin/python -m pip install -q -r requirements-cluster.txt -c constraints.txt
  .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
  echo "$want" > "$STAMP"
fi

if ! { [ -f "$IFACE_STAMP" ] && [ "$(cat "$IFACE_STAMP")" = "$iface_want" ]; }; then
  echo "[bootstrap] building the typed ROS 2 interfaces (msg/*.msg, tf2_msgs, interbotix_xs_msgs) into .venv" >&2
  bash scripts/build_interfaces.sh .venv
  echo "$iface_want" > "$IFACE_STAMP"
  echo "[bootstrap] ready" >&2
fi

# peers' JavaScript clients for the tests, exactly as locked (test/node/package-lock.json)
NODE_STAMP=test/node/node_modules/.bootstrap-stamp
node_want=$(cat test/node/package.json test/node/package-lock.json | sha256sum | cut -d' ' -f1)
if ! { [ -f "$NODE_STAMP" ] && [ "$(cat "$NODE_STAMP")" = "$node_want" ]; }; then
  echo "[bootstrap] installing the tests' npm packages (test/node, npm ci)" >&2
  (cd test/node && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null)
  echo "$node_want" > "$NODE_STAMP"
fi
