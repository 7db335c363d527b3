"""The toolchain's conda pieces in a mirror: gcc 11 from a local stand-in for conda-forge (the
host's gcc-11 repackaged as ``gcc_linux-64``/``gxx_linux-64``) solved and put in the mirror's
local channel by ``mirror create``; with the channel gone and no network (``unshare -rn``),
``toolchain install gcc 11 --from conda --mirror-dir`` provisions it from the mirror alone, and a
piece the mirror lacks (MPI) fails at once with one line and the command that adds it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.integration.execute.conftest import REPO_ROOT
from tests.worlds.conda_channel import channel_url, make_channel
from tests.worlds.conda_compiler import host_gcc_packages

pytestmark = pytest.mark.integration

RECIPE = 'name = "gcc-demo"\n[torch]\ntag = "v2.0.1"\n[toolchain]\npython = "3.11"\ngcc = "11"\ncuda = "none"\n'


def test_a_conda_gcc_comes_from_the_mirror_alone(tmp_path: Path, gcc11: Path) -> None:
    pytest.importorskip("rattler")
    can_unshare = shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"]).returncode == 0
    require_tool("unshare -rn (user and network namespaces)", can_unshare)
    channel = make_channel(tmp_path / "conda-forge", host_gcc_packages())
    recipe = tmp_path / "gcc-demo.toml"
    recipe.write_text(RECIPE)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
        "SRCBUILD_CONFIG_DIR": str(tmp_path / "config"),
    }
    mirror = tmp_path / "mirror"
    argv = ["mirror", "create", str(mirror), "--recipe", str(recipe), "--package", "ext", "--no-env"]
    made = subprocess.run(
        [sys.executable, "-m", "srcbuild", *argv],
        env={**env, "SRCBUILD_CHANNEL_MIRRORS": f"conda-forge={channel_url(channel)}"},
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    files = json.loads((mirror / "manifest.json").read_text())["files"]
    assert "conda/conda-forge/linux-64/repodata.json" in files
    assert any(p.startswith("conda/conda-forge/linux-64/gcc_linux-64-") for p in files), sorted(files)
    assert any(p.startswith("conda/conda-forge/linux-64/gxx_linux-64-") for p in files), sorted(files)
    shutil.rmtree(channel)

    offline = {**env, "SRCBUILD_TOOLCHAIN_DIR": str(tmp_path / "toolchains")}

    def install(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["unshare", "-rn", sys.executable, "-m", "srcbuild", "toolchain", "install", *args,
             "--mirror-dir", str(mirror)],
            env=offline, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        )

    done = install("gcc", "11", "--from", "conda", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    [entry] = json.loads(done.stdout)
    gcc = Path(entry["prefix"]) / "bin" / "gcc-11"
    assert entry["prefix"] == str(tmp_path / "toolchains" / "gcc-11-conda")
    version = subprocess.run([gcc, "-dumpversion"], capture_output=True, text=True, check=True)
    assert version.stdout.strip().split(".")[0] == "11"

    missing = install("mpi", "4.1", "--from", "conda")
    assert missing.returncode == 4, missing.stdout + missing.stderr
    lines = [line for line in missing.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert len(lines) == 2 and lines[0].startswith(
        f"error: openmpi 4.1 (openmpi 4.1.*) is not in the mirror {mirror}/'s conda-forge channel ("
    ), missing.stderr
    assert lines[1] == f"hint: add it on a connected machine: srcbuild mirror create {mirror} --recipe RECIPE"
