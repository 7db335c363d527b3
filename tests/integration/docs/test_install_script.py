"""install.sh on a machine whose python3 cannot make a virtual environment (Debian/Ubuntu without
python3-venv): without apt it stops with exit 4 and says what to install; it never half-installs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


def run_install(tmp_path: Path, python: str, path_dirs: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(REPO / "install.sh"), str(tmp_path / "prefix")],
        env={"PATH": os.pathsep.join(map(str, path_dirs)), "PYTHON": python, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_missing_python_is_exit_4(tmp_path: Path) -> None:
    done = run_install(tmp_path, "/nonexistent/python3", [Path("/usr/bin"), Path("/bin")])
    assert done.returncode == 4 and "error: /nonexistent/python3 is not installed" in done.stderr


def test_no_venv_and_no_apt_says_what_to_install(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with the basic tools but no apt-get
    bin_dir.mkdir()
    for tool in ("dirname", "rm", "id"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    fake = bin_dir / "python3"
    fake.write_text("#!/bin/sh\necho 'ensurepip is not available' >&2\nexit 1\n")  # as Debian's python3
    fake.chmod(0o755)
    done = run_install(tmp_path, str(fake), [bin_dir])
    assert done.returncode == 4, done.stderr
    assert "cannot create a virtual environment" in done.stderr
    assert f"then rerun: bash {REPO}/install.sh" in done.stderr
    assert not (tmp_path / "prefix").exists()  # nothing half-made is left
