"""The build environment's conda packages in a mirror: solved through the local stand-in channels,
written as local channels with repodata, and a second "machine" with no network (``unshare -rn``)
creates the environment from the mirror alone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from srcbuild.envs.spec import env_spec_for
from srcbuild.mirror.create import Target, create_mirror
from srcbuild.mirror.gather import Needs
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.sources.mirrors import MirrorRules
from tests.conftest import require_tool
from tests.integration.execute.conftest import REPO_ROOT


def test_a_mirror_holds_the_environment_and_creates_it_without_a_network(
    write_recipe: Callable[..., Path], channels: dict[str, Path], tmp_path: Path
) -> None:
    can_unshare = shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"]).returncode == 0
    require_tool("unshare -rn (user and network namespaces)", can_unshare)
    path = write_recipe()
    recipe = RecipeCatalog(Paths.resolve(environ={})).load(str(path))
    routes = " ".join(f"{name}={channel.as_uri()}" for name, channel in channels.items())
    environ = {"SRCBUILD_CHANNEL_MIRRORS": routes}
    spec = env_spec_for(recipe, environ=environ)
    mirror = tmp_path / "mirror"
    target = Target(recipe.name, ("torch",), Needs((), (), (), ()), spec)
    report = create_mirror(mirror, [target], MirrorRules(), environ)
    manifest = json.loads((mirror / "manifest.json").read_text())
    assert "conda/conda-forge/linux-64/repodata.json" in manifest["files"]
    packages = [p for p in manifest["files"] if p.endswith((".conda", ".tar.bz2"))]
    assert any("/python-3.8" in p for p in packages) and report.added_files == len(manifest["files"])
    again = create_mirror(mirror, [target], MirrorRules(), environ)
    assert (again.added_files, again.kept_files) == (0, len(manifest["files"]))  # nothing new: nothing fetched

    for channel in channels.values():
        shutil.rmtree(channel)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SRCBUILD_WORK_DIR": str(tmp_path / "work"),
        "SRCBUILD_CONFIG_DIR": str(tmp_path / "config"),
        "SRCBUILD_CHANNEL_MIRRORS": routes,  # gone: --mirror-dir replaces every channel route
    }
    argv = ["env", "create", "--recipe", str(path), "--env-backend", "rattler", "--mirror-dir", str(mirror)]
    done = subprocess.run(
        ["unshare", "-rn", sys.executable, "-m", "srcbuild", *argv],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    prefix = Path(done.stdout.strip().splitlines()[-1])
    version = subprocess.run([prefix / "bin" / "python", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == "Python 3.8.10"
