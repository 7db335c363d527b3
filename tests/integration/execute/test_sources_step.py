"""The sources step of a build: failures name the submodule, a rerun runs only what is left,
and two builds of one repository take turns on the shared object cache."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from srcbuild.sources import checkout as on_disk
from tests.integration.execute.conftest import REPO_ROOT, Ran, Srcbuild

pytestmark = pytest.mark.integration

RECIPE = "world-kepler-cu118"


def _run(sb: Srcbuild, mirror: str, *extra: str, env: dict[str, str] | None = None, verbose: bool = False) -> Ran:
    argv = sb.args("torch", RECIPE, *extra)
    argv[argv.index("--mirror") + 1] = mirror
    if verbose:  # -v shows each raw command (by default a line says what it does)
        argv.insert(argv.index("torch"), "-v")
    done = subprocess.run(
        argv,
        env={**sb.env, **(env or {})},
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    return Ran(done.returncode, done.stdout)


def _fetch_head(sb: Srcbuild) -> tuple[int, int]:
    (cache,) = (sb.work_dir / "git-objects").glob("pytorch-*.git")
    st = (cache / "FETCH_HEAD").stat()
    return st.st_ino, st.st_mtime_ns


def test_missing_mirror_rule_names_the_submodule_and_resume_does_not_clone_again(
    srcbuild_118: Srcbuild, tmp_path: Path
) -> None:
    """A rule for github.com/pytorch/ only: the top repository and pytorch/* submodules resolve,
    pybind/pybind11 does not. The error names it, its URL and the missing rule; resumed with the
    full rule, the step keeps the clone (same checkout, no fetch into the object cache: its
    FETCH_HEAD is untouched) and runs only the submodule commands."""
    world = srcbuild_118.world
    narrow = f"https://github.com/pytorch/=file://{world.root}/pytorch/"
    failed = _run(srcbuild_118, narrow)
    assert failed.rc == 5, failed.out
    assert (
        "error: torch sources: could not fetch submodule third_party/pybind11 from "
        "https://github.com/pybind/pybind11.git" in failed.out
    )
    assert (
        "hint: no mirror rule covers https://github.com/pybind/pybind11.git: pass --mirror gitee or "
        "--mirror https://github.com/=<your mirror>/ (SRCBUILD_MIRROR sets a default)" in failed.out
    )
    checkout = srcbuild_118.checkout(RECIPE)
    head_inode = (checkout / ".git" / "HEAD").stat().st_ino
    fetched = _fetch_head(srcbuild_118)

    resumed = _run(srcbuild_118, world.mirror_rule, "--resume", verbose=True)
    assert resumed.rc == 0, resumed.out
    sources = resumed.out[resumed.out.index("Sources: ") : resumed.out.index("Check the checkout")]
    assert f"skipping 8 of 11 command(s): {checkout} is already at v2.5.1; its submodules are synced next" in sources
    assert "skipped: git init --bare" in sources and "skipped: git clone --quiet --shared" in sources
    assert "+ git clone" not in sources and " fetch --no-tags " not in sources.replace("skipped: git", "")
    assert "submodule update --init --recursive" in sources
    assert (checkout / ".git" / "HEAD").stat().st_ino == head_inode
    assert _fetch_head(srcbuild_118) == fetched
    assert (checkout / "third_party" / "pybind11" / ".git").exists()
    assert Path(resumed.last_line).is_file()


def test_two_builds_of_one_repository_take_turns_on_the_object_cache(srcbuild_118: Srcbuild) -> None:
    """While another sync holds the cache entry's lock, the build's sources step waits for it."""
    from filelock import FileLock

    from srcbuild.sources.sync import cache_repo

    cache_dir = srcbuild_118.work_dir / "git-objects"
    cache_dir.mkdir(parents=True)
    lock = FileLock(f"{cache_repo(cache_dir, 'https://github.com/pytorch/pytorch')}.lock")
    lock.acquire()
    proc = srcbuild_118.popen("torch", RECIPE)
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "waiting for another sync of pytorch-" in line:
                break
        assert not (srcbuild_118.checkout(RECIPE) / ".git").exists()  # nothing ran while the lock was held
    finally:
        lock.release()
    out = "".join(seen) + proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, out
    assert "waiting for another sync of pytorch-" in out


def test_the_completeness_check_reads_what_git_submodule_status_says(tmp_path: Path) -> None:
    """The build asks for completeness with one ``git ls-files`` per repository with submodules and
    the submodules' HEAD files, not ``git submodule status --recursive`` (50 ms for three
    submodules): both must agree, nested submodules, a moved one and a missing one included."""
    import shutil

    from srcbuild.recipe.model import SourcePin
    from srcbuild.sources.checkout import _STATUS_LINE, _gitlink_status
    from srcbuild.sources.mirrors import parse_mirror_args
    from srcbuild.sources.sync import SourceSync
    from tests.integration.sources import through_executor
    from tests.worlds.gitworld import make_world

    world = make_world(tmp_path / "github", n_submodules=8, nested=True, size=256, commits=1)
    tag = sorted(world.tags)[0]
    sync = SourceSync(
        SourcePin(tag, world.top_url), tmp_path / "src", tmp_path / "cache", parse_mirror_args([world.mirror_rule], {})
    )
    through_executor.sync(sync, tmp_path / "build")

    def by_git() -> list[tuple[str, str, str]]:
        out = subprocess.run(
            ["git", "-C", str(sync.checkout), "submodule", "status", "--recursive"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [m.groups()[:3] for m in map(_STATUS_LINE.match, out.splitlines()) if m]  # type: ignore[misc]

    rows = _gitlink_status(sync.checkout, os.environ)
    assert rows is not None and any(path.count("third_party") > 1 for _, _, path in rows)  # nested ones
    assert sorted(rows) == sorted(by_git())
    assert on_disk.complete_commits(sync, os.environ) == {path: commit for _, commit, path in rows}
    first, second = sorted(path for _, _, path in rows if path.count("/") == 1)[:2]
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t"}
    subprocess.run(
        ["git", "-C", str(sync.checkout / first), "commit", "-q", "--allow-empty", "-m", "moved"],
        env={**os.environ, **who, "GIT_COMMITTER_EMAIL": "t@example.org"},
        check=True,
    )
    shutil.rmtree(sync.checkout / second)
    (sync.checkout / second).mkdir()
    changed = sorted(_gitlink_status(sync.checkout, os.environ) or [])
    assert changed == sorted(by_git())
    flags = {path: flag for flag, _, path in changed}
    assert flags[first] == "+" and flags[second] == "-"
    assert on_disk.complete_commits(sync, os.environ) is None
