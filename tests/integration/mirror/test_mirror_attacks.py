"""A mirror directory is hostile: a tag re-pointed in it, a file swapped behind its manifest or a
symbolic link out of it is refused with one line and exit 7, and nothing is built from it.

The mirror is made by ``srcbuild mirror create`` from the fixture world (sources only); the
attacker then edits it the way a shared disk or a copied USB stick could be edited.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from srcbuild.files import sha256_file
from tests.integration.execute.conftest import recipe, srcbuild_env
from tests.integration.mirror.test_mirror_offline import SOURCES_ONLY, run
from tests.worlds.gitworld import World

RECIPE = "world-kepler-cu118"
REPO = "git/github.com/pytorch/pytorch"


def make_mirror(world: World, mirror: Path, env: dict[str, str]) -> None:
    argv = [*SOURCES_ONLY, str(mirror), "--recipe", recipe(RECIPE), "--package", "torch"]
    made = run([*argv, "--mirror", world.mirror_rule, "--no-env"], env)
    assert made.returncode == 0, made.stdout


def repoint(mirror: Path, tag: str) -> str:
    """Force-move ``tag`` in the mirror's torch repository to a new commit (same tree, another
    parent line); returns the new commit."""
    git = ["git", "-C", str(mirror / REPO)]
    tree = subprocess.run([*git, "rev-parse", f"{tag}^{{tree}}"], capture_output=True, text=True, check=True)
    made = subprocess.run(
        [*git, "commit-tree", tree.stdout.strip(), "-p", f"{tag}^{{commit}}", "-m", "not upstream"],
        capture_output=True,
        text=True,
        check=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "x",
            "GIT_AUTHOR_EMAIL": "x@x",
            "GIT_COMMITTER_NAME": "x",
            "GIT_COMMITTER_EMAIL": "x@x",
        },
    )
    commit = made.stdout.strip()
    subprocess.run([*git, "tag", "-f", tag, commit], capture_output=True, check=True)
    subprocess.run([*git, "update-server-info"], check=True)
    return commit


def rewrite_manifest(mirror: Path) -> None:
    """What a thorough attacker does next: list every file of the mirror again with its new sha256."""
    path = mirror / "manifest.json"
    data = json.loads(path.read_text())
    for file in sorted(p for p in mirror.rglob("*") if p.is_file() and p != path):
        rel = file.relative_to(mirror).as_posix()
        data["files"][rel] = {"sha256": sha256_file(file), "size": file.stat().st_size, "origin": "x"}
    data["files"] = {k: v for k, v in data["files"].items() if (mirror / k).is_file()}
    path.write_text(json.dumps(data))


def test_a_tag_repointed_in_a_mirror_dir_is_refused(world: World, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    env = {**srcbuild_env(None), "SRCBUILD_WORK_DIR": str(tmp_path / "work"), "SRCBUILD_CACHE_DIR": str(tmp_path / "c")}
    make_mirror(world, mirror, env)
    assert run(["mirror", "verify", str(mirror)], env).returncode == 0
    repoint(mirror, "v2.5.1")
    # the manifest still lists the old refs: the build takes nothing from the mirror
    built = run(["torch", "--recipe", recipe(RECIPE), "--mirror-dir", str(mirror)], env)
    assert built.returncode == 7, built.stdout
    errors = [line for line in built.stdout.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"error: --mirror-dir {mirror}: {REPO}/" in errors[0], built.stdout
    assert "differs from the mirror's manifest" in errors[0] and "nothing was taken from it" in errors[0]
    assert not (tmp_path / "c" / "entries").exists()
    verified = run(["mirror", "verify", str(mirror), "--json"], env)
    assert verified.returncode == 7
    why = {p["path"]: p["why"] for p in json.loads(verified.stdout[: verified.stdout.rindex("}") + 1])["problems"]}
    assert why[f"{REPO}/refs/tags/v2.5.1"].startswith("sha256 "), why  # the moved ref
    assert "not in the manifest" in why.values(), why  # the new commit's object


def test_a_tag_repointed_with_its_manifest_rewritten_is_refused_by_the_pinned_commit(
    world: World, build_venv: Path, cuda118_home: Path, gcc11: Path, tmp_path: Path
) -> None:
    mirror = tmp_path / "mirror"
    env = {**srcbuild_env(None), "SRCBUILD_WORK_DIR": str(tmp_path / "work"), "SRCBUILD_CACHE_DIR": str(tmp_path / "c")}
    make_mirror(world, mirror, env)
    good = world.tags["v2.5.1"]
    pinned = tmp_path / f"{RECIPE}.toml"
    text = Path(recipe(RECIPE)).read_text()
    pinned.write_text(text.replace('tag = "v2.5.1"\n', f'tag = "v2.5.1"\ncommit = "{good}"\n', 1))
    moved = repoint(mirror, "v2.5.1")
    rewrite_manifest(mirror)
    assert run(["mirror", "verify", str(mirror)], env).returncode == 0  # the manifest agrees now
    argv = ["torch", "--recipe", str(pinned), "--mirror-dir", str(mirror), "--env", str(build_venv)]
    built = run(argv, {**env, "CUDA_HOME": str(cuda118_home)})
    assert built.returncode == 7, built.stdout
    errors = [line for line in built.stdout.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, built.stdout
    assert f"tag v2.5.1 of https://github.com/pytorch/pytorch resolves to {moved}" in errors[0]
    assert f"{mirror}" in errors[0] and f"but the recipe pins {good}" in errors[0]
    assert not (tmp_path / "c" / "entries").exists()


def test_a_symlink_out_of_the_mirror_is_refused(world: World, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    env = {**srcbuild_env(None), "SRCBUILD_WORK_DIR": str(tmp_path / "work"), "SRCBUILD_CACHE_DIR": str(tmp_path / "c")}
    make_mirror(world, mirror, env)
    head = mirror / REPO / "HEAD"
    outside = tmp_path / "outside-HEAD"
    outside.write_bytes(head.read_bytes())  # the same bytes: only where it lies is wrong
    head.unlink()
    head.symlink_to(outside)
    verified = run(["mirror", "verify", str(mirror)], env)
    assert verified.returncode == 7, verified.stdout
    assert f"{REPO}/HEAD: a symbolic link out of the mirror (to {outside}); not followed" in verified.stdout
    built = run(["torch", "--recipe", recipe(RECIPE), "--mirror-dir", str(mirror)], env)
    assert built.returncode == 7 and "a symbolic link out of the mirror" in built.stdout, built.stdout
