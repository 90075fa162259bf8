#!/usr/bin/env bash
# Makes sure the Debian packages the build and tests need are installed.
#   scripts/deps.sh          install what is missing (needs root), or print
#                            the exact apt-get line to run and fail
#   scripts/deps.sh --check  only report; exit 1 when something is missing
#   scripts/deps.sh --bench [--check]
#                            the same for make bench's baselines (PoCL)
set -euo pipefail
# openmpi-bin, libopenmpi-dev: the remote suite's MPI jobs (mpirun, Open
# MPI's libmpi.so.40, mpicc for C programs that use MPI themselves); the
# library never links MPI (internal/mpi loads it at run time)
packages=(gcc g++ make binutils python3 python3-pip python3-numpy lld-22 clang-22 liboffload-22-dev cmake pkg-config openmpi-bin libopenmpi-dev)
if [ "${1:-}" = --bench ]; then
  shift
  # PoCL's CPU device, the OpenCL ICD loader and headers (bench/pocl.c)
  packages=(pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "${1:-}" = --check ] || [ "$(id -u)" != 0 ]; then
  echo "missing Debian packages: ${missing[*]}" >&2
  echo "run as root: $line" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
