"""Real git against generated worlds: mirrors, nested submodules, the object cache, interruption, pins.

Syncs run as a build runs them: the planned sources step through the executor (``through_executor``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from srcbuild.errors import SourceMismatch, StepFailed
from srcbuild.plan.sources import sources_steps
from srcbuild.recipe.model import SourcePin
from srcbuild.sources import checkout as on_disk
from srcbuild.sources.mirrors import MirrorRules, parse_mirror_args
from srcbuild.sources.sync import SourceSync
from tests.integration.sources import through_executor
from tests.integration.sources.through_executor import step_log
from tests.worlds.gitworld import World, make_project

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[3]


def sync_for(world: World, work: Path, tag: str, rules: MirrorRules | None = None, **kw: object) -> SourceSync:
    mirrors = parse_mirror_args([world.mirror_rule], {}) if rules is None else rules
    return SourceSync(
        SourcePin(tag, world.top_url, kw.pop("commit", None)),  # type: ignore[arg-type]
        work / "src" / f"torch-{tag}",
        work / "git-objects",
        mirrors,
        jobs=4,
        **kw,  # type: ignore[arg-type]
    )


def pack_bytes(git_dir: Path) -> int:
    """Bytes of pack files a repository holds itself (not what it borrows through alternates)."""
    return sum(p.stat().st_size for p in git_dir.rglob("objects/pack/*.pack"))


@pytest.fixture(scope="module")
def first_sync(world: World, tmp_path_factory: pytest.TempPathFactory) -> SourceSync:
    """v1.0.0 of the full world synced once into a fresh work dir (shared by the tests that read it)."""
    work = tmp_path_factory.mktemp("first")
    sync = sync_for(world, work, "v1.0.0")
    assert not on_disk.is_complete(sync, os.environ)
    assert through_executor.sync(sync, work / "build") == world.tags["v1.0.0"]
    return sync


def test_first_sync_through_a_prefix_mirror(world: World, first_sync: SourceSync) -> None:
    sync = first_sync
    assert on_disk.is_complete(sync, os.environ)
    commits = on_disk.submodule_commits(sync, os.environ)
    assert commits == dict(world.submodules["v1.0.0"])
    assert len(commits) == 36 + 5
    checkout = sync.checkout
    assert (checkout / "third_party/flatbuffers/README.md").read_text() == "# google/flatbuffers\n"  # git@github.com:
    assert (checkout / "third_party/gloo/README.md").is_file()  # URL without .git
    assert (checkout / "third_party/fbgemm/third_party/asmjit/README.md").is_file()  # nested
    assert (checkout / "third_party/tensorpipe/third_party/pybind11/README.md").is_file()
    assert not sync.partial.exists()
    # origin names upstream, never the cache or the mirror
    origin = subprocess.run(
        ["git", "-C", str(checkout), "remote", "get-url", "origin"], capture_output=True, text=True, check=True
    )
    assert origin.stdout.strip() == world.top_url
    assert sync.commands()[on_disk.done_count(sync, os.environ) :] == []


def own_pack_bytes(git_dir: Path, shared_with: Path) -> int:
    """Bytes of pack files under ``git_dir`` that are not hard links to files under ``shared_with``."""
    shared = {p.stat().st_ino for p in shared_with.rglob("*.pack")}
    return sum(p.stat().st_size for p in git_dir.rglob("objects/pack/*.pack") if p.stat().st_ino not in shared)


def test_second_tag_fetches_only_what_is_new(world: World, first_sync: SourceSync) -> None:
    first = first_sync
    cache_after_first = pack_bytes(first.cache)
    first_modules = pack_bytes(first.checkout / ".git/modules")
    # the first sync recorded every submodule in the cache (hard links, made bare)
    cached = first.cache / "modules/third_party/fbgemm/modules/third_party/asmjit"
    assert "bare = true" in (cached / "config").read_text() and not (cached / "index").exists()
    work = first.checkout.parent.parent
    second = sync_for(world, work, "v1.1.0")
    assert second.cache == first.cache
    assert through_executor.sync(second, work / "second") == world.tags["v1.1.0"]
    assert on_disk.submodule_commits(second, os.environ) == dict(world.submodules["v1.1.0"])
    # the checkout borrows the top repository's objects from the cache and copies none
    assert (second.checkout / ".git/objects/info/alternates").read_text().strip() == str(first.cache / "objects")
    assert pack_bytes(second.checkout / ".git/objects") == 0
    # every submodule git dir came from the cache: nothing was cloned, no pack is new
    assert "Cloning into" not in step_log(work / "second", "sources").read_text()
    assert own_pack_bytes(second.checkout / ".git/modules", first.cache) == 0
    assert pack_bytes(second.checkout / ".git/modules") >= first_modules
    # the cache grew by the new tag only: far less than a second copy
    assert pack_bytes(first.cache) - cache_after_first < cache_after_first / 2


def test_submodule_new_to_the_cache_is_cloned_and_recorded(small_world: World, work: Path) -> None:
    first = sync_for(small_world, work, "v1.0.0")
    through_executor.sync(first, work / "first")
    gloo = first.cache / "modules/third_party/gloo"
    shutil.rmtree(gloo)  # as if v1.0.0 had no gloo submodule
    # and as if it had one that later tags dropped: seeded into the checkout, never checked out
    shutil.copytree(first.cache / "modules/third_party/pybind11", first.cache / "modules/third_party/dropped")
    second = sync_for(small_world, work, "v2.0.0")
    through_executor.sync(second, work / "second")
    assert on_disk.submodule_commits(second, os.environ) == dict(small_world.submodules["v2.0.0"])
    assert (second.checkout / ".git/modules/third_party/dropped/HEAD").is_file()
    assert on_disk.is_complete(second, os.environ)
    log = step_log(work / "second", "sources").read_text()
    assert log.count("Cloning into") == 1 and "third_party/gloo'..." in log
    assert (gloo / "HEAD").is_file() and "bare = true" in (gloo / "config").read_text()
    commit = small_world.submodules["v2.0.0"]["third_party/gloo"]
    show = subprocess.run(["git", "-C", str(gloo), "cat-file", "-t", commit], capture_output=True, text=True)
    assert show.stdout.strip() == "commit"


def test_without_a_mirror_rule_the_submodule_url_is_named(small_world: World, work: Path) -> None:
    # Only the top repository is mirrored; https is refused so the test never reaches the network.
    os.environ["GIT_ALLOW_PROTOCOL"] = "file"
    try:
        top_only = parse_mirror_args([f"{small_world.top_url}={small_world.file_url('pytorch/pytorch')}"], {})
        sync = sync_for(small_world, work, "v1.0.0", top_only)
        with pytest.raises(StepFailed) as err:
            through_executor.sync(sync, work / "build")
    finally:
        del os.environ["GIT_ALLOW_PROTOCOL"]
    message, hint = err.value.message, err.value.hint or ""
    # the build names the submodule by its path in the checkout
    assert message.startswith("torch sources: could not fetch submodule third_party/")
    url = message.rsplit(" from ", 1)[1]
    assert url.startswith(("https://github.com/", "git@github.com:"))
    assert hint.startswith(f"no mirror rule covers {url}: pass --mirror gitee or --mirror https://github.com/=")
    assert hint.endswith(f"full output in {step_log(work / 'build', 'sources')}")
    assert err.value.exit_code == 5
    assert not on_disk.is_complete(sync, os.environ)


def test_flat_namespace_mirror_map_end_to_end(small_world: World, work: Path) -> None:
    """A gitee-style map (one rule per repository, flat names) drives every depth, SSH URL included."""
    flat = work / "flat"
    flat.mkdir()
    rows = []
    for key, path in small_world.repos.items():
        name = key.replace("/", "-")
        (flat / f"{name}.git").symlink_to(path)
        rows.append(f'[[repo]]\ngithub = "{key}"\ngitee = "{name}"\n')
    mapping = work / "flat.toml"
    mapping.write_text(f'base = "file://{flat}/"\n' + "\n".join(rows))
    sync = sync_for(small_world, work, "v2.0.0", parse_mirror_args([str(mapping)], {}))
    assert through_executor.sync(sync, work / "build") == small_world.tags["v2.0.0"]
    assert on_disk.submodule_commits(sync, os.environ) == dict(small_world.submodules["v2.0.0"])


def test_pinned_commit_mismatch_names_both(small_world: World, work: Path) -> None:
    wrong = "0123456789abcdef0123456789abcdef01234567"
    sync = sync_for(small_world, work, "v1.1.0", commit=wrong)
    with pytest.raises(SourceMismatch) as err:
        through_executor.sync(sync, work / "build")
    actual = small_world.tags["v1.1.0"]
    assert err.value.exit_code == 7
    assert err.value.message == (
        f"torch.commit: tag v1.1.0 of https://github.com/pytorch/pytorch resolves to {actual} "
        f"(fetched from file://{small_world.root}/pytorch/pytorch), but the recipe pins {wrong}; "
        "nothing was built from it"
    )
    assert err.value.hint == (
        f'if upstream moved the tag on purpose, set torch.commit = "{actual}" in the recipe; '
        "otherwise the repository or mirror serves a different history: fetch from another (--mirror)"
    )
    right = sync_for(small_world, work, "v1.1.0", commit=actual)
    assert on_disk.verify_commit(right, os.environ) == actual


def test_interrupted_submodule_update_continues(small_world: World, work: Path) -> None:
    """The top checkout is in place but submodules stopped half way: a rerun continues, not restarts."""
    os.environ["GIT_ALLOW_PROTOCOL"] = "file"
    try:
        partial_rules = parse_mirror_args(
            [
                f"{small_world.top_url}={small_world.file_url('pytorch/pytorch')}",
                f"https://github.com/pybind/=file://{small_world.root}/pybind/",
            ],
            {},
        )
        broken = sync_for(small_world, work, "v1.0.0", partial_rules)
        with pytest.raises(StepFailed):
            through_executor.sync(broken, work / "broken")
    finally:
        del os.environ["GIT_ALLOW_PROTOCOL"]
    # git clones every submodule it can before it stops; pybind11 is fetched, the others are not
    assert (broken.checkout / ".git/modules/third_party/pybind11/HEAD").is_file()
    assert not (broken.checkout / ".git/modules/third_party/fbgemm").exists()
    assert not on_disk.is_complete(broken, os.environ)
    sync = sync_for(small_world, work, "v1.0.0")
    assert sync.commands()[on_disk.done_count(sync, os.environ) :] == sync.submodule_commands()
    packs = broken.checkout / ".git/modules/third_party/pybind11/objects/pack"
    before = {p.name: p.stat().st_ino for p in packs.glob("*.pack")}
    assert before
    # an executor that simply runs every command of the step again also continues
    for command in sync.commands():
        done = subprocess.run(command.argv, cwd=command.cwd, env=command.env.apply(os.environ), capture_output=True)
        assert done.returncode == 0, done.stdout + done.stderr
    assert on_disk.is_complete(sync, os.environ)
    assert on_disk.submodule_commits(sync, os.environ) == dict(small_world.submodules["v1.0.0"])
    assert {p.name: p.stat().st_ino for p in packs.glob("*.pack")} == before  # kept, not cloned again


def test_leftovers_of_a_killed_clone_are_never_used(small_world: World, work: Path) -> None:
    sync = sync_for(small_world, work, "v1.1.0")
    sync.partial.mkdir(parents=True)
    (sync.partial / "junk").write_text("half a clone")
    sync.checkout.mkdir()
    (sync.checkout / "junk").write_text("not a checkout")
    assert not on_disk.is_complete(sync, os.environ)
    assert sync.commands()[on_disk.done_count(sync, os.environ) :] == sync.commands()
    through_executor.sync(sync, work / "build")
    assert on_disk.is_complete(sync, os.environ) and not (sync.checkout / "junk").exists() and not sync.partial.exists()


def test_killed_sync_then_rerun_completes(small_world: World, work: Path) -> None:
    """SIGKILL the whole sync while submodules are being cloned; the next run finishes the job."""
    script = (
        "import sys; from pathlib import Path; from srcbuild.recipe.model import SourcePin; "
        "from srcbuild.sources.mirrors import parse_mirror_args; from srcbuild.sources.sync import SourceSync; "
        "from tests.integration.sources.through_executor import sync; "
        "sync(SourceSync(SourcePin('v2.0.0', sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), "
        "parse_mirror_args([sys.argv[4]], {}), jobs=1), Path(sys.argv[5]))"
    )
    world = small_world
    sync = sync_for(world, work, "v2.0.0")
    args = (world.top_url, str(sync.checkout), str(sync.git_cache), world.mirror_rule, str(work / "killed"))
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO_ROOT,  # the script imports the tests package
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    modules = sync.checkout / ".git" / "modules" / "third_party"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if modules.is_dir() and len(list(modules.iterdir())) >= 3:
            break
        time.sleep(0.005)
    assert child.poll() is None, "the sync finished before it could be interrupted"
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    assert not on_disk.is_complete(sync, os.environ)
    through_executor.sync(sync, work / "build")
    assert on_disk.is_complete(sync, os.environ)
    assert on_disk.submodule_commits(sync, os.environ) == dict(world.submodules["v2.0.0"])


def test_repository_without_submodules(tmp_path: Path) -> None:
    """A torchvision-shaped repository: no .gitmodules, so the submodule steps have nothing to do."""
    tags = make_project(tmp_path / "github", "pytorch/vision", {"v0.8.2": {"setup.py": b"print('vision')\n"}})
    rules = parse_mirror_args([f"https://github.com/=file://{tmp_path / 'github'}/"], {})
    pin = SourcePin("v0.8.2", "https://github.com/pytorch/vision", tags["v0.8.2"])
    sync = SourceSync(pin, tmp_path / "src" / "vision", tmp_path / "cache", rules, jobs=2, label="torchvision")
    assert through_executor.sync(sync, tmp_path / "build") == tags["v0.8.2"]
    assert on_disk.is_complete(sync, os.environ) and on_disk.submodule_commits(sync, os.environ) == {}
    assert (sync.checkout / "setup.py").read_text() == "print('vision')\n"
    assert not (sync.cache / "modules").exists()


def test_submodule_cloned_but_never_checked_out_is_repaired(small_world: World, work: Path) -> None:
    """What a SIGKILL between a submodule's clone and its checkout leaves: right HEAD, no index, no files."""
    sync = sync_for(small_world, work, "v1.1.0")
    through_executor.sync(sync, work / "first")
    (sync.checkout / ".git/modules/third_party/fbgemm/modules/third_party/asmjit/index").unlink()
    for path in (sync.checkout / "third_party/fbgemm/third_party/asmjit").iterdir():
        if path.name != ".git":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert not on_disk.is_complete(sync, os.environ)
    assert sync.commands()[on_disk.done_count(sync, os.environ) :] == sync.submodule_commands()
    out = through_executor.run_step(sources_steps(sync)[0], work / "again")
    total, left = len(sync.commands()), len(sync.submodule_commands())
    assert f"skipping {total - left} of {total} command(s)" in out
    assert on_disk.is_complete(sync, os.environ)
    assert (sync.checkout / "third_party/fbgemm/third_party/asmjit/README.md").read_text() == "# asmjit/asmjit\n"


def test_two_syncs_share_a_cold_cache_at_the_same_time(small_world: World, work: Path) -> None:
    """Two builds (two tags) started together on a cold cache take turns through the cache lock; both finish."""
    syncs = [sync_for(small_world, work, tag) for tag in ("v1.0.0", "v2.0.0")]
    errors: list[BaseException] = []

    def run(sync: SourceSync) -> None:
        try:
            through_executor.sync(sync, work / f"build-{sync.pin.tag}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in syncs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for sync, tag in zip(syncs, ("v1.0.0", "v2.0.0")):
        assert on_disk.is_complete(sync, os.environ)
        assert on_disk.submodule_commits(sync, os.environ) == dict(small_world.submodules[tag])
    assert (syncs[0].cache / "modules/third_party/fbgemm/HEAD").is_file()
    assert not list(syncs[0].cache.glob("modules.partial*"))


def test_rerun_replaces_a_patched_checkout(small_world: World, work: Path) -> None:
    """A checkout with patches applied is never kept by a rerun of the sync: it starts clean."""
    sync = sync_for(small_world, work, "v1.0.0")
    through_executor.sync(sync, work / "build")
    (sync.checkout / "version.txt").write_text("patched\n")
    (sync.checkout / ".git/srcbuild-patches").write_text('[patch "x"]\n\tsha256 = 00\n')
    for command in sync.commands():
        subprocess.run(
            command.argv, cwd=command.cwd, env=command.env.apply(os.environ), check=True, capture_output=True
        )
    assert (sync.checkout / "version.txt").read_text() == "1.0.0\n"
    assert not (sync.checkout / ".git/srcbuild-patches").exists() and on_disk.is_complete(sync, os.environ)


def test_a_git_without_the_submodule_helper_still_initialises(
    small_world: World, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cached checkout registers submodule URLs through ``git submodule--helper init`` (git's own
    builtin behind ``git submodule init``, without the shell script's 20 helper processes); a git
    that has no such command gets ``git submodule init`` instead."""
    real_git = shutil.which("git")
    assert real_git is not None
    wrapper = work / "bin"
    wrapper.mkdir()
    refused = work / "refused"
    (wrapper / "git").write_text(  # refuses the direct call only: git submodule's own script calls it too
        f'#!/bin/sh\nif [ "$1" = -C ] && [ "$3" = submodule--helper ]; then\n'
        f"  echo \"git: 'submodule--helper' is not a git command. See 'git --help'.\" >&2\n"
        f'  echo "$2" >> {refused}; exit 1\nfi\nexec {real_git} "$@"\n'
    )
    (wrapper / "git").chmod(0o755)
    first = sync_for(small_world, work, "v1.0.0")
    through_executor.sync(first, work / "first")  # fills the cache: the second sync checks out from it
    monkeypatch.setenv("PATH", f"{wrapper}{os.pathsep}{os.environ['PATH']}")
    second = sync_for(small_world, work, "v1.1.0")
    assert through_executor.sync(second, work / "second") == small_world.tags["v1.1.0"]
    assert refused.read_text().splitlines()[0] == "."  # the top level asked the helper first
    assert on_disk.is_complete(second, os.environ)
    assert on_disk.submodule_commits(second, os.environ) == dict(small_world.submodules["v1.1.0"])
    def keys(*argv: str) -> list[str]:
        done = subprocess.run(["git", "-C", str(second.checkout), "config", *argv], capture_output=True, text=True)
        return sorted(line.split()[0].rsplit(".", 1)[0] for line in done.stdout.splitlines())

    # every submodule of the top level registered: its URL in .git/config
    assert keys("--get-regexp", r"^submodule\..*\.url$") == keys("-f", ".gitmodules", "--get-regexp", r"\.path$")
