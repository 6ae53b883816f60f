#!/usr/bin/env bash
# Installs what fgc needs when it is missing (Debian/Ubuntu, as root or
# through sudo), then configures and builds into BUILD (default: build).
# Usage: tools/setup.sh [BUILD [extra cmake args...]]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true

missing=()
for tool in cmake flex bison pkg-config make gcc; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
pkg-config --exists check 2>/dev/null || missing+=(check)
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || missing+=(python3-numpy)
command -v dot >/dev/null 2>&1 || missing+=(graphviz)   # tests render the DOT reports
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)    # tests/run-leaks.sh
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=()
  for m in "${missing[@]}"; do
    case $m in gcc) pkgs+=(gcc libc6-dev) ;; *) pkgs+=("$m") ;; esac
  done
  echo "setup: installing ${pkgs[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi

log=$(mktemp)
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" &&
       cmake --build "$build" -j "$(nproc)"; } >"$log" 2>&1; then
  cat "$log"
  rm -f "$log"
  echo "setup: the build failed" >&2
  exit 1
fi
rm -f "$log"
