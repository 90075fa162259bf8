#!/bin/sh
# Installs the real vendor driver userspace libraries that the CUDA and
# AMDGPU plugin tests load when present (no GPU is needed: on a GPU-less
# machine both drivers load and report "no device").
#   libhsa-runtime64-1 (Debian main)      -> libhsa-runtime64.so.1
#   libcuda1           (Debian non-free)  -> libcuda.so.1
# Must run as root on Debian bookworm. Safe to run more than once.
set -eu

src=/etc/apt/sources.list.d/debian.sources
nonfree=/etc/apt/sources.list.d/nonfree.sources

if [ ! -f "$nonfree" ]; then
	if [ ! -f "$src" ]; then
		echo "install-real-drivers: $src not found; cannot add non-free" >&2
		exit 1
	fi
	# Same suites and mirrors as debian.sources, other components.
	sed 's/^Components:.*/Components: contrib non-free non-free-firmware/' "$src" >"$nonfree"
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y libhsa-runtime64-1
apt-get install -y --no-install-recommends libcuda1
