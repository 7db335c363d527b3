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


FAKE_PYTHON = """#!/bin/sh
# python3 -m venv --clear PREFIX: a venv whose python installs a `srcbuild` command when asked to
if [ "$1 $2" = "-m venv" ]; then
  prefix=$4
  mkdir -p "$prefix/bin"
  cat > "$prefix/bin/python" <<'PY'
#!/bin/sh
here=$(dirname "$0")
printf '#!/bin/sh\\necho "srcbuild, version 9.9"\\n' > "$here/srcbuild"
chmod +x "$here/srcbuild"
PY
  chmod +x "$prefix/bin/python"
fi
"""


def _tools(bin_dir: Path) -> None:
    bin_dir.mkdir()
    for tool in ("dirname", "rm", "id", "mkdir", "ln", "awk", "cat", "chmod", "printf"):
        found = shutil.which(tool)
        if found is not None:
            (bin_dir / tool).symlink_to(found)


def test_only_the_command_goes_on_path_as_a_link(tmp_path: Path) -> None:
    """pipx's layout: the venv is private, ~/.local/bin gets one link, and a PATH without that
    directory is said with the line that adds it."""
    tools = tmp_path / "tools"
    _tools(tools)
    fake = tools / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    done = run_install(tmp_path, str(fake), [tools])
    assert done.returncode == 0, done.stderr
    link = tmp_path / ".local" / "bin" / "srcbuild"
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "prefix" / "bin" / "srcbuild")
    assert sorted(p.name for p in link.parent.iterdir()) == ["srcbuild"]  # no python, no pip
    lines = done.stdout.splitlines()
    assert lines[0] == f"srcbuild 9.9 installed in {tmp_path / 'prefix'}; the command: {link}"
    assert lines[1:] == [
        f"note: {link.parent} is not on PATH; add it (your shell's profile keeps it for the next shells):",
        f'  export PATH="{link.parent}:$PATH"',
    ]
    again = run_install(tmp_path, str(fake), [tools, link.parent])  # on PATH: no note; the link is renewed
    assert again.returncode == 0 and len(again.stdout.splitlines()) == 1
    link.unlink()
    link.write_text("someone else's srcbuild\n")
    refused = run_install(tmp_path, str(fake), [tools])
    assert refused.returncode == 4 and f"error: {link} exists and is not a link srcbuild made" in refused.stderr
