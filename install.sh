#!/usr/bin/env bash
# Install srcbuild from this checkout into its own virtual environment (default ~/.srcbuild), so
# that a stock Debian or Ubuntu Python ("externally-managed-environment") is left untouched.
# Where the system Python lacks venv support (Debian/Ubuntu without python3-venv), it installs
# python3-venv with apt (as root, or through sudo) or says which command to run.
# Usage: bash install.sh [PREFIX]      (PYTHON=python3.12 picks another interpreter)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-${SRCBUILD_PREFIX:-$HOME/.srcbuild}}
python=${PYTHON:-python3}

command -v "$python" >/dev/null || { echo "error: $python is not installed" >&2; exit 4; }

make_venv() { "$python" -m venv --clear "$prefix" >/dev/null 2>&1; }

if ! make_venv; then
  rm -rf "$prefix"
  package=python3-venv
  if ! command -v apt-get >/dev/null; then
    echo "error: $python cannot create a virtual environment (its venv/ensurepip module is missing)" >&2
    echo "hint: install your distribution's venv package for $python, then rerun: bash $here/install.sh" >&2
    exit 4
  fi
  if [ "$(id -u)" = 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "error: $python cannot create a virtual environment: $package is not installed" >&2
    echo "hint: as root: apt-get install -y $package; then rerun: bash $here/install.sh" >&2
    exit 4
  fi
  echo "installing $package (needed for python3 -m venv) with: ${sudo[*]:+${sudo[*]} }apt-get install -y $package"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$package" >/dev/null
  if ! make_venv; then
    rm -rf "$prefix"
    "$python" -m venv "$prefix" || true
    rm -rf "$prefix"
    echo "error: $python still cannot create a virtual environment after installing $package (see above)" >&2
    echo "hint: install the venv package of that exact interpreter (e.g. python3.12-venv), then rerun: bash $here/install.sh" >&2
    exit 4
  fi
fi

"$prefix/bin/python" -m pip install -q --upgrade pip
"$prefix/bin/python" -m pip install -q "$here"
echo "srcbuild $("$prefix/bin/srcbuild" --version | awk '{print $NF}') installed in $prefix"
echo "run it as $prefix/bin/srcbuild, or add it to PATH: export PATH=\"$prefix/bin:\$PATH\""
