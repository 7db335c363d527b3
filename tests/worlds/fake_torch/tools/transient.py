"""Compiler launcher for the late target: fails once, like the OOM killer, when asked to.

With FAKE_TORCH_FAIL_ONCE=<marker file> set and the marker absent, it creates the marker, prints
gcc's message for a compiler killed by the kernel and exits 1. Otherwise it runs the compiler.
"""

import os
import sys

marker = os.environ.get("FAKE_TORCH_FAIL_ONCE")
if marker and not os.path.exists(marker):
    with open(marker, "w") as f:
        f.write("failed once\n")
    sys.stderr.write("gcc: fatal error: Killed signal terminated program cc1\ncompilation terminated.\n")
    sys.exit(1)
os.execvp(sys.argv[1], sys.argv[1:])
