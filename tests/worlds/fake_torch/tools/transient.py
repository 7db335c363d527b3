"""Compiler launcher for the late target: fails once, like the OOM killer, or pauses, when asked to.

- FAKE_TORCH_FAIL_ONCE=<marker file>: when the marker is absent, create it, print gcc's message for
  a compiler killed by the kernel and exit 1 (a transient failure: the next build succeeds).
- FAKE_TORCH_PAUSE=<marker file>: create the marker and sleep (a long compile to press Ctrl-C in).
Otherwise it runs the compiler command it was given.
"""

import os
import sys
import time

marker = os.environ.get("FAKE_TORCH_FAIL_ONCE")
if marker and not os.path.exists(marker):
    with open(marker, "w") as f:
        f.write("failed once\n")
    sys.stderr.write("gcc: fatal error: Killed signal terminated program cc1\ncompilation terminated.\n")
    sys.exit(1)
pause = os.environ.get("FAKE_TORCH_PAUSE")
if pause:
    with open(pause, "w") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(120)
os.execvp(sys.argv[1], sys.argv[1:])
