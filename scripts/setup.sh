#!/usr/bin/env bash
# Install the Debian packages listed in packages.txt (Debian 12, as root).
# Skips apt entirely when everything is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t pkgs < <(grep -Ev '^\s*(#|$)' packages.txt)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "setup: all ${#pkgs[@]} packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "setup: missing packages (${missing[*]}); run as root or install them" >&2
	exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${pkgs[@]}"
