"""An extension built from a mirror with no network at all: the fixture extension
(``tests/worlds/tiny_ext``, a CPython extension with a C submodule, built against a CPU torch) from
its git remote (``git+URL@TAG`` in the recipe's ``[[extensions]]``, and a commit on the command
line) and from its sdist on a loopback package index. ``mirror create --package ext`` /
``--ext`` gathers them; the originals are then removed, and inside ``unshare -rn`` ``srcbuild ext
--mirror-dir`` builds the tag and the sdist from the mirror alone (the commit from the mirror
served over HTTP by a static server, the world still gone): the same wheel, byte for byte, in the
same cache entry as the connected build. A source the mirror lacks fails at once with the command
that adds it. (The build environment is the test's venv holding the torch, given with ``--env``:
the environment's own pieces are mirrored and installed offline by ``test_mirror_env`` and
``test_mirror_pip``.) Measured here: 20 to 24 s of CPU for the file (26 s of wall time on an idle
machine, 75 s on a busy one), 8 s of it making the venv.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.integration.execute.conftest import PY, REPO_ROOT
from tests.integration.mirror.test_mirror_offline import entry_of
from tests.integration.mirror.test_mirror_pip import QuietHandler, static_index
from tests.worlds.tiny_ext_world import TinyExtWorld, publish_tiny_ext

pytestmark = pytest.mark.integration


def gcc_major() -> str:
    done = subprocess.run(["gcc", "-dumpversion"], capture_output=True, text=True, check=False)
    return done.stdout.strip().split(".")[0]


def write_recipe(directory: Path, extensions: str) -> Path:
    path = directory / "tiny-cpu.toml"
    path.write_text(
        'name = "tiny-cpu"\ndescription = "the fixture extension on a CPU"\n[torch]\ntag = "v2.5.1"\n'
        f'[toolchain]\npython = "{PY}"\ngcc = "{gcc_major()}"\ncuda = "none"\n{extensions}'
    )
    return path


def run(argv: list[str], env: dict[str, str], offline: bool = False) -> subprocess.CompletedProcess[str]:
    prefix = ["unshare", "-rn"] if offline else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "srcbuild", *argv],
        env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TinyExtWorld, Path]]:
    """The world and a venv holding its torch (the environment ``--env`` names; builds read it only)."""
    require_tool("gcc", shutil.which("gcc"))
    can_unshare = shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"]).returncode == 0
    require_tool("unshare -rn (user and network namespaces)", can_unshare)
    tmp_path = tmp_path_factory.mktemp("tiny-ext")
    world = publish_tiny_ext(tmp_path / "world")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # with pip: the build runs pip wheel
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    subprocess.run([*pip, str(world.torch_wheel)], check=True)
    yield world, venv


def test_a_git_extension_with_a_submodule_builds_from_the_mirror_alone(
    tiny: tuple[TinyExtWorld, Path], tmp_path: Path
) -> None:
    world, venv = tiny
    recipe = write_recipe(tmp_path, f'[[extensions]]\nname = "tiny-ext"\ngit = "{world.requirement[4:]}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    connected_dirs = ["--work-dir", str(tmp_path / "work"), "--cache-dir", str(tmp_path / "cache")]
    ext = ["ext", world.requirement, "--recipe", str(recipe), "--env", str(venv)]
    built = run([*ext, "--mirror", world.mirror_rule, *connected_dirs], env)
    assert built.returncode == 0, built.stdout[-3000:]
    wheel = Path(built.stdout.splitlines()[-1])
    assert wheel.name == f"tiny_ext-1.0-cp{PY.replace('.', '')}-cp{PY.replace('.', '')}-linux_x86_64.whl"

    mirror = tmp_path / "mirror"
    create = ["mirror", "create", str(mirror), "--recipe", str(recipe), "--package", "ext", "--no-env",
              "--skip", "gcc", "--mirror", world.mirror_rule]
    commit_request = f"git+https://github.com/example/tiny-ext.git@{world.tag_commit}"
    made = run([*create, "--ext", commit_request], env)
    assert made.returncode == 0, made.stdout
    assert "git https://github.com/example/tiny-greet.git" in made.stdout  # the submodule, at its pin
    greet = mirror / "git/github.com/example/tiny-greet.git"
    assert f"refs/heads/srcbuild/{world.greet_commit}" in (greet / "info/refs").read_text()
    assert "refs/tags/v1.0" in (mirror / "git/github.com/example/tiny-ext.git/info/refs").read_text()

    hidden = world.root.with_name("world.gone")
    world.root.rename(hidden)
    try:
        offline_dirs = ["--work-dir", str(tmp_path / "work-off"), "--cache-dir", str(tmp_path / "cache-off")]
        again = run([*ext, "--mirror-dir", str(mirror), *offline_dirs], env, offline=True)
        assert again.returncode == 0, again.stdout[-3000:]
        # by its commit, from the mirror served by a static web server (git's "dumb" HTTP protocol:
        # no shallow fetch, so the checkout falls back to the whole ref)
        handler = functools.partial(QuietHandler, directory=str(mirror))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            served = f"http://127.0.0.1:{server.server_address[1]}/"
            by_commit = run(["ext", commit_request, "--recipe", str(recipe), "--env", str(venv), "--mirror-dir",
                             served, "--work-dir", str(tmp_path / "work-c"), "--cache-dir", str(tmp_path / "c-c")],
                            env)
        finally:
            server.shutdown()
            server.server_close()
        assert by_commit.returncode == 0, by_commit.stdout[-3000:]
        lacking = "git+https://github.com/example/tiny-ext.git@v2.0"
        missing = run(["ext", lacking, "--recipe", str(recipe), "--env", str(venv), "--mirror-dir", str(mirror),
                       *offline_dirs], env, offline=True)
    finally:
        hidden.rename(world.root)
    offline_wheel = Path(again.stdout.splitlines()[-1])
    assert offline_wheel.name == wheel.name and sha256(offline_wheel) == sha256(wheel)
    assert entry_of(tmp_path / "cache-off") == entry_of(tmp_path / "cache")
    assert sha256(Path(by_commit.stdout.splitlines()[-1])) == sha256(wheel)  # the same tree by its commit
    assert missing.returncode == 4, missing.stdout
    assert missing.stdout.splitlines()[-2:] == [
        f"error: the git source {lacking} is not in the mirror {mirror}/ (it lacks v2.0)",
        f"hint: add it on a connected machine: srcbuild mirror create {mirror} --recipe {recipe} --ext {lacking}",
    ]


def test_an_sdist_extension_builds_from_the_mirror_alone(tiny: tuple[TinyExtWorld, Path], tmp_path: Path) -> None:
    world, venv = tiny
    served = tmp_path / "index"
    static_index(served, [world.sdist])
    handler = functools.partial(QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    recipe = write_recipe(tmp_path, "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_INDEX_URL"] = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    env["PIP_CONFIG_FILE"] = "/dev/null"
    ext = ["ext", "tiny-ext==1.0", "--recipe", str(recipe), "--env", str(venv)]
    mirror = tmp_path / "mirror"
    try:
        built = run([*ext, "--work-dir", str(tmp_path / "work"), "--cache-dir", str(tmp_path / "cache")], env)
        made = run(["mirror", "create", str(mirror), "--recipe", str(recipe), "--package", "ext", "--ext",
                    "tiny-ext==1.0", "--no-env", "--skip", "gcc"], env)
    finally:
        server.shutdown()
        server.server_close()
    assert built.returncode == 0, built.stdout[-3000:]
    assert made.returncode == 0, made.stdout
    assert sha256(mirror / "pypi/simple/tiny-ext/tiny_ext-1.0.tar.gz") == sha256(world.sdist)
    shutil.rmtree(served)
    again = run([*ext, "--mirror-dir", str(mirror), "--work-dir", str(tmp_path / "work-off"), "--cache-dir",
                 str(tmp_path / "cache-off")], env, offline=True)
    assert again.returncode == 0, again.stdout[-3000:]
    wheel, offline_wheel = Path(built.stdout.splitlines()[-1]), Path(again.stdout.splitlines()[-1])
    assert offline_wheel.name == wheel.name and sha256(offline_wheel) == sha256(wheel)
    assert entry_of(tmp_path / "cache-off") == entry_of(tmp_path / "cache")


# An extension's git tag is a commit too: a mirror that moves it is refused with exit 7, naming the
# tag, both commits and the mirror, before anything is built (the hostile mirror is a copy of the
# fixture's repository with the tag force-moved, reached through a longer mirror rule).
def test_a_moved_tag_of_a_git_extension_is_refused(tiny: tuple[TinyExtWorld, Path], tmp_path: Path) -> None:
    world, venv = tiny
    recipe = write_recipe(tmp_path, "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    work = ["--work-dir", str(tmp_path / "work")]
    ext = ["ext", world.requirement, "--recipe", str(recipe), "--env", str(venv)]
    built = run([*ext, "--mirror", world.mirror_rule, *work, "--cache-dir", str(tmp_path / "c1")], env)
    assert built.returncode == 0, built.stdout[-3000:]
    record = tmp_path / "work" / "ext-tag-commits.json"
    assert json.loads(record.read_text()) == {"https://github.com/example/tiny-ext.git": {"v1.0": world.tag_commit}}

    hostile = tmp_path / "hostile.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(world.root / "example" / "tiny-ext.git"), str(hostile)],
                   check=True)
    git = ["git", "-C", str(hostile)]
    tree = subprocess.run([*git, "rev-parse", "v1.0^{tree}"], capture_output=True, text=True, check=True).stdout
    ids = {"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@x", "GIT_COMMITTER_NAME": "x", "GIT_COMMITTER_EMAIL": "x@x"}
    moved = subprocess.run([*git, "commit-tree", tree.strip(), "-p", "v1.0^{commit}", "-m", "not upstream"],
                           capture_output=True, text=True, check=True, env={**os.environ, **ids}).stdout.strip()
    subprocess.run([*git, "tag", "-f", "v1.0", moved], check=True, capture_output=True)
    rules = ["--mirror", world.mirror_rule, "--mirror", f"https://github.com/example/tiny-ext.git=file://{hostile}"]
    refused = run([*ext, *rules, *work, "--cache-dir", str(tmp_path / "c2")], env)
    assert refused.returncode == 7, refused.stdout[-3000:]
    errors = [line for line in refused.stdout.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: tag v1.0 of https://github.com/example/tiny-ext.git resolves to {moved} (fetched from "
        f"file://{hostile}), but it named {world.tag_commit} when first seen here ({record}); nothing was "
        "built from it"
    ], refused.stdout[-3000:]
    assert not list((tmp_path / "c2").rglob("*.whl"))
