"""Real git: a repository's ``.gitmodules`` cannot reach the local disk or a command-running transport.

A top repository served by a local mirror (so ``protocol.file.allow=always`` is in force) has one
submodule naming a repository on the local disk that no mirror rule covers, or an ``ext::``/``fd::``
URL. The sync must refuse it with one line naming the URL, check nothing of it out, run nothing and
never hang; with a rule for that path the user opts in and the same submodule is fetched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from srcbuild.errors import StepFailed, UsageError
from srcbuild.recipe.model import SourcePin
from srcbuild.sources.mirrors import parse_mirror_args
from srcbuild.sources.sync import SourceSync
from tests.integration.sources import through_executor

pytestmark = pytest.mark.integration


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def repo_with_file(path: Path, name: str) -> str:
    """A bare repository at ``path`` holding one commit with ``name``; returns the commit."""
    work = path.with_suffix(".work")
    git("init", "-q", str(work))
    (work / name).write_text(f"{name}\n")
    git("add", name, cwd=work)
    git("commit", "-qm", name, cwd=work)
    git("clone", "-q", "--bare", str(work), str(path))
    return git("rev-parse", "HEAD", cwd=work)


def top_with_submodule(mirror: Path, url: str, commit: str) -> None:
    """``<mirror>/owner/top.git`` at tag v1 with one submodule ``third_party/dep`` at ``url``."""
    work = mirror / "top.work"
    git("init", "-q", str(work))
    (work / ".gitmodules").write_text(f'[submodule "dep"]\n\tpath = third_party/dep\n\turl = {url}\n')
    git("update-index", "--add", "--cacheinfo", f"160000,{commit},third_party/dep", cwd=work)
    git("add", ".gitmodules", cwd=work)
    git("commit", "-qm", "top", cwd=work)
    git("tag", "v1", cwd=work)
    (mirror / "owner").mkdir(parents=True, exist_ok=True)
    git("clone", "-q", "--bare", str(work), str(mirror / "owner" / "top.git"))


def sync(tmp_path: Path, mirror: Path, *extra_rules: str) -> SourceSync:
    rules = parse_mirror_args([f"https://github.com/=file://{mirror}/", *extra_rules], {})
    pin = SourcePin("v1", "https://github.com/owner/top")
    return SourceSync(pin, tmp_path / "src" / "top", tmp_path / "git-objects", rules, jobs=2)


def test_a_submodule_on_the_local_disk_no_rule_covers_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "private" / "secret.git"
    secret.parent.mkdir()
    commit = repo_with_file(secret, "SECRET")
    mirror = tmp_path / "mirror"
    top_with_submodule(mirror, str(secret), commit)
    with pytest.raises(StepFailed) as info:
        through_executor.sync(sync(tmp_path, mirror), tmp_path / "build")
    assert info.value.message == (
        f"torch sources: submodule third_party/dep names {secret}, "
        "a local repository no --mirror rule maps to: refused (srcbuild fetches over https, http, ssh, git, file, "
        "and from the local disk only through the --mirror rules given)"
    )
    assert not (tmp_path / "src" / "top" / "third_party" / "dep" / "SECRET").exists()

    # The user's own rule for that path opens it: the same submodule is fetched.
    (tmp_path / "src").rename(tmp_path / "src.refused")
    opened = sync(tmp_path, mirror, f"{secret.parent}/={secret.parent}/")
    through_executor.sync(opened, tmp_path / "build2")
    assert (opened.checkout / "third_party" / "dep" / "SECRET").read_text() == "SECRET\n"


def test_a_file_url_submodule_is_refused_too(tmp_path: Path) -> None:
    secret = tmp_path / "secret.git"
    commit = repo_with_file(secret, "SECRET")
    mirror = tmp_path / "mirror"
    top_with_submodule(mirror, f"file://{secret}", commit)
    with pytest.raises(StepFailed) as info:
        through_executor.sync(sync(tmp_path, mirror), tmp_path / "build")
    assert f"names file://{secret}, a local repository no --mirror rule maps to: refused" in info.value.message


@pytest.mark.parametrize("kind", ["ext", "fd"])
def test_ext_and_fd_submodules_are_refused_without_running_or_hanging(tmp_path: Path, kind: str) -> None:
    marker = tmp_path / "MARKER"
    url = f"ext::sh -c touch% {marker}" if kind == "ext" else "fd::0"
    dep = tmp_path / "dep.git"
    commit = repo_with_file(dep, "DEP")
    mirror = tmp_path / "mirror"
    top_with_submodule(mirror, url, commit)
    with pytest.raises(StepFailed) as info:
        through_executor.sync(sync(tmp_path, mirror), tmp_path / "build")
    said = info.value.message
    assert said.startswith(f"torch sources: submodule third_party/dep names {url}, a '{kind}' URL: refused")
    assert not marker.exists()


def test_fd_mirror_is_a_clean_error_from_the_cli(tmp_path: Path) -> None:
    env = {**os.environ, "SRCBUILD_WORK_DIR": str(tmp_path / "w"), "SRCBUILD_CACHE_DIR": str(tmp_path / "c")}
    done = subprocess.run(
        [sys.executable, "-m", "srcbuild", "plan", "torch", "--recipe", "kepler-cu92", "--mirror", "https://github.com/=fd::0"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == UsageError.exit_code, done.stderr
    assert done.stderr.startswith(
        "error: --mirror: mirror 'fd::0' uses the 'fd' transport; "
        "srcbuild fetches only over https, http, ssh, git, file"
    )
