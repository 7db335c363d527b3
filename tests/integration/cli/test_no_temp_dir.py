"""No writable temporary directory is exit 4 naming TMPDIR, never a traceback.

The machine is made that way for real: in a private mount namespace (``unshare --mount``), /tmp,
/var/tmp and the working directory are read-only tmpfs mounts and TMPDIR names a directory that
does not exist, so every directory ``tempfile`` tries fails. The test's files live in the home
directory's cache (a pytest tmp_path is under /tmp, which the mount hides)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from tests.conftest import require_tool
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration


@pytest.fixture()
def base() -> Iterator[Path]:
    root = Path.home() / ".cache"
    root.mkdir(parents=True, exist_ok=True)
    made = Path(tempfile.mkdtemp(prefix="srcbuild-no-tmp-", dir=root))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def _without_temp(base: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    unshare = shutil.which("unshare")
    require_tool("unshare", unshare)
    prefix = [str(unshare), "--mount"] if os.geteuid() == 0 else [str(unshare), "--mount", "--map-root-user", "--user"]
    ro = base / "ro"
    ro.mkdir(exist_ok=True)
    mounts = (
        f'mount -t tmpfs -o ro tmpfs /tmp && mount -t tmpfs -o ro tmpfs /var/tmp && mount -t tmpfs -o ro tmpfs "{ro}"'
    )
    probe = subprocess.run([*prefix, "sh", "-c", mounts], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.strip()}")
    script = f'{mounts} && cd "{ro}" && exec "$@"'
    env = {k: v for k, v in os.environ.items() if k not in ("TEMP", "TMP")}
    env["TMPDIR"] = str(base / "gone")
    return subprocess.run(
        [*prefix, "sh", "-c", script, "sh", sys.executable, "-m", "srcbuild", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_push_and_index_without_a_temp_dir_are_exit_4_naming_tmpdir(base: Path) -> None:
    require_tool("ssh-keygen", shutil.which("ssh-keygen"))
    wheel = make_wheel(base / "dist")
    WheelCache(base / "cache").store(wheel, make_manifest(wheel))
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / "key")], check=True)
    (base / "share").mkdir()
    for argv in (
        ["cache", "push", "--signing-key", str(base / "key"), "--remote", str(base / "share")],
        ["cache", "index", "--signing-key", str(base / "key"), "--out", str(base / "index")],
    ):
        ran = _without_temp(base, [*argv, "--cache-dir", str(base / "cache")])
        assert ran.returncode == 4, ran.stdout + ran.stderr
        assert ran.stderr.splitlines() == [
            f"error: no writable temporary directory (TMPDIR={base / 'gone'}; /tmp, /var/tmp and the current "
            "directory failed too)",
            "hint: point TMPDIR at a directory you can write: mkdir -p ~/tmp && export TMPDIR=~/tmp",
        ]
    assert not any((base / "share").rglob("*.whl"))  # nothing half-pushed
