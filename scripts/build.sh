#!/usr/bin/env bash
# Configure and build one build directory: scripts/build.sh DIR [meson options]
# Configure output is shown only when configuring fails.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1; shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ -f "$dir/build.ninja" ]; then
	set -- --reconfigure "$@"
fi
if ! meson setup "$@" "$dir" >"$log" 2>&1; then
	cat "$log" >&2
	exit 1
fi
meson compile -C "$dir"
