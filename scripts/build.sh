#!/usr/bin/env bash
# Configure and build one build directory: scripts/build.sh DIR [meson options]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1; shift
if [ -f "$dir/build.ninja" ]; then
	meson setup --reconfigure "$dir" "$@" >/dev/null
else
	meson setup "$dir" "$@" >/dev/null
fi
meson compile -C "$dir"
