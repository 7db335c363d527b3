#!/usr/bin/env bash
# Install srcbuild from this checkout the way pipx and `uv tool install` install a Python tool: into
# a virtual environment of its own (default ~/.srcbuild), private to it, with only the `srcbuild`
# command put on PATH, as a link in ~/.local/bin (the directory pip, pipx and uv use for commands).
# A stock Debian or Ubuntu Python ("externally-managed-environment") is left untouched, and the
# `python3` and `pip` a user runs next are still the system's or their own environment's, never
# srcbuild's. Where the system Python lacks venv support (Debian/Ubuntu without python3-venv), it
# installs python3-venv with apt (as root, or through sudo) or says which command to run.
# Usage: bash install.sh [PREFIX [BIN_DIR]]   (PYTHON=python3.12 picks another interpreter)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-${SRCBUILD_PREFIX:-$HOME/.srcbuild}}
bin_dir=${2:-$HOME/.local/bin}
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
link=$bin_dir/srcbuild
if [ -e "$link" ] && [ ! -L "$link" ]; then
  echo "error: $link exists and is not a link srcbuild made; srcbuild is installed in $prefix but not linked" >&2
  echo "hint: move it away (mv $link $link.old) and rerun: bash $here/install.sh" >&2
  exit 4
fi
mkdir -p "$bin_dir"
ln -sfn "$prefix/bin/srcbuild" "$link"
echo "srcbuild $("$link" --version | awk '{print $NF}') installed in $prefix; the command: $link"
case ":$PATH:" in
  *":$bin_dir:"*) ;;
  *)
    echo "note: $bin_dir is not on PATH; add it (your shell's profile keeps it for the next shells):"
    echo "  export PATH=\"$bin_dir:\$PATH\""
    ;;
esac
