"""``cache serve`` answers bad paths with 400/404 (fixture paths plus a fuzzer), and a full disk is
exit 4 naming the full filesystem for ``cache push`` to a share and ``cache trust add``.

The full disk is a real one: a 1 MiB tmpfs mounted in a private mount namespace (``unshare``), so
the test needs root or unprivileged user namespaces."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from srcbuild.cache.simple_index import make_server
from srcbuild.cache.store import WheelCache
from tests.conftest import require_tool
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "hostile"
PATHS = [
    line.strip() for line in (FIXTURES / "serve-paths.txt").read_text().splitlines() if line.startswith("/")
]


def _status(port: int, path: bytes) -> int:
    """The status code of ``GET path`` sent as raw bytes (http.client would refuse most of them)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET " + path + b" HTTP/1.0\r\nHost: x\r\n\r\n")
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    assert reply.startswith(b"HTTP/1."), (path, reply[:200])  # never an empty reply
    return int(reply.split(b" ", 2)[1])


@pytest.fixture()
def served(tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tmp_path / "index"
    (root / "files").mkdir(parents=True)
    (root / "simple" / "torch").mkdir(parents=True)
    (root / "files" / "torch-1.7.1-cp38-cp38-linux_x86_64.whl").write_bytes(b"PK")
    (root / "simple" / "torch" / "index.html").write_text("<a href='x'>x</a>")
    server = make_server(root)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("path", PATHS)
def test_serve_answers_a_bad_path_with_400_or_404(served: int, path: str) -> None:
    assert _status(served, path.encode()) in (400, 404)


def test_serve_answers_fuzzed_paths(served: int) -> None:
    """500 mutations of good paths (bytes replaced, inserted, percent-escaped): each gets a status."""
    rng = random.Random(21)
    good = [b"/files/torch-1.7.1-cp38-cp38-linux_x86_64.whl", b"/simple/torch/", b"/simple/"]
    alphabet = [b"%00", b"%ff", b"%2e", b"%2f", b"%5c", b"..", b"/", b"%", b"%0a", b"\x7f", b"?", b"#", b"~"]
    alphabet.append(b"a" * 300)
    seen: dict[int, int] = {}
    for _ in range(500):
        path = bytearray(rng.choice(good))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(1, len(path) + 1)
            if rng.random() < 0.5:
                path[at:at] = rng.choice(alphabet)
            else:
                path[at - 1 : at] = bytes([rng.randrange(0x21, 0x100)])
        code = _status(served, bytes(path).replace(b" ", b"%20"))
        seen[code] = seen.get(code, 0) + 1
        assert code in (200, 301, 400, 404, 414), (bytes(path), code)
    assert seen.get(400, 0) and seen.get(404, 0)


def _in_full_tmpfs(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) with ``$FULL`` a 1 MiB tmpfs mounted in a private mount namespace."""
    unshare = shutil.which("unshare")
    require_tool("unshare", unshare)
    full = tmp_path / "full"
    full.mkdir()
    argv = [str(unshare), "--mount", "--map-root-user", "--user"] if os.geteuid() != 0 else [str(unshare), "--mount"]
    wrapped = f'mount -t tmpfs -o size=1m tmpfs "$FULL" && {script}'
    env = {**os.environ, "FULL": str(full), "PYTHON": sys.executable}
    probe = subprocess.run([*argv, "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$FULL"'], env=env, capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode(errors='replace').strip()}")
    return subprocess.run([*argv, "sh", "-c", wrapped], env=env, capture_output=True, text=True, timeout=300)


def test_push_to_a_full_share_and_trust_add_on_a_full_disk_are_exit_4(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    big = make_wheel(tmp_path / "dist", payload=os.urandom(3 << 20))  # does not fit in 1 MiB
    WheelCache(cache).store(big, make_manifest(big))
    key = tmp_path / "alice.pub"
    key.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice\n")
    script = (
        'head -c 1040000 /dev/zero > "$FULL/filler" 2>/dev/null; mkdir -p "$FULL/share" "$FULL/config"; '
        f'"$PYTHON" -m srcbuild cache push --unsigned --remote "$FULL/share" --cache-dir {cache}; echo "push=$?"; '
        'cat /dev/zero > "$FULL/filler2" 2>/dev/null; '
        f'SRCBUILD_CONFIG_DIR="$FULL/config" "$PYTHON" -m srcbuild cache trust add {key}; echo "trust=$?"'
    )
    ran = _in_full_tmpfs(tmp_path, script)
    words = " ".join(ran.stdout.split() + ran.stderr.split())
    assert "push=4" in ran.stdout and "trust=4" in ran.stdout, words
    assert f"error: the filesystem at {tmp_path / 'full'} is full (No space left on device)" in words
    assert "internal error" not in words
