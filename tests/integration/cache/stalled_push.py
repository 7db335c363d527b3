"""Run ``srcbuild cache push`` (the real command, against a real S3 server) and hold it at one request,
so a test can kill it exactly there or let it go on.

    python stalled_push.py MARKER GO PATTERN -- ARGS...

Before each S3 request is sent, ``"<METHOD> <path>"`` is matched against the regular expression
PATTERN; at the first match the process writes MARKER and waits until the file GO exists (a test
that kills it never creates GO). Then it goes on; the exit code is srcbuild's.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from srcbuild.cache.remotes.s3 import S3Remote
from srcbuild.cli import main


def run(marker: Path, go: Path, pattern: str, argv: list[str]) -> int:
    wanted = re.compile(pattern)
    made = S3Remote.client.fget
    assert made is not None
    held = False

    def stall(request: Any, **_: Any) -> None:
        nonlocal held
        if held or not wanted.search(f"{request.method} {urlparse(request.url).path}"):
            return
        held = True
        marker.write_text("held\n")
        while not go.exists():
            time.sleep(0.05)

    def client(self: S3Remote) -> Any:
        made_client = made(self)
        if not getattr(self, "_held_hook", False):
            self._held_hook = True  # type: ignore[attr-defined]
            made_client.meta.events.register("before-send.s3", stall)
        return made_client

    S3Remote.client = property(client)  # type: ignore[assignment,method-assign]
    return main(argv)


if __name__ == "__main__":
    marker, go, pattern, dashes, *rest = sys.argv[1:]
    assert dashes == "--"
    sys.exit(run(Path(marker), Path(go), pattern, rest))
