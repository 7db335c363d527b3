"""The sync and patch commands as data (pure: nothing runs, nothing is read) and the failure explanations."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.command import Command
from srcbuild.recipe.model import SourcePin
from srcbuild.sources.diagnose import explain_git_failure
from srcbuild.sources.mirrors import MirrorRules, parse_mirror_args
from srcbuild.sources.patches import APPLY_ONCE, CHECK_SERIES, PatchSet, explain_patch_failure
from srcbuild.sources.sync import CHECKOUT_CACHED, RECORD, RECORD_ALL, SEED, SWAP, SourceSync, cache_repo

URL = "https://github.com/pytorch/pytorch"
MIRROR = "https://github.com/=https://mirror.example/gh/"


def make_sync(tmp_path: Path, commit: str | None = None) -> SourceSync:
    return SourceSync(
        SourcePin("v1.7.1", URL, commit),
        tmp_path / "src" / "torch-v1.7.1",
        tmp_path / "git-objects",
        parse_mirror_args([MIRROR], {}),
        jobs=6,
    )


def test_cache_entry_is_keyed_by_the_recipe_url(tmp_path: Path) -> None:
    entry = cache_repo(tmp_path, URL)
    assert entry.parent == tmp_path
    assert entry.name.startswith("pytorch-") and entry.name.endswith(".git")
    assert cache_repo(tmp_path, URL + ".git") != entry
    assert cache_repo(tmp_path, "git@github.com:google/flatbuffers.git").name.startswith("flatbuffers-")


def test_sync_commands_are_exact_and_touch_nothing(tmp_path: Path) -> None:
    sync = make_sync(tmp_path)
    commands = sync.commands()
    assert not (tmp_path / "src").exists() and not (tmp_path / "git-objects").exists()
    m = sync.mirrors.git_config_args()
    cache, partial, checkout = str(sync.cache), str(sync.partial), str(sync.checkout)
    assert partial == str(tmp_path / "src" / ".torch-v1.7.1.partial")
    assert [c.argv for c in commands] == [
        ("git", "init", "--bare", "--quiet", cache),
        ("git", *m, "-c", "fetch.unpackLimit=1", "fetch", "--no-tags", URL, "+refs/tags/v1.7.1:refs/tags/v1.7.1"),
        ("rm", "-rf", "--", partial),
        ("git", "clone", "--quiet", "--shared", "--no-checkout", cache, partial),
        ("git", "remote", "set-url", "origin", URL),
        ("git", "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", "refs/tags/v1.7.1"),
        ("sh", "-c", SEED),
        ("sh", "-c", SWAP, "swap", partial, checkout),
        ("git", *m, "submodule", "sync", "--quiet", "--recursive"),
        (
            *("sh", "-c", CHECKOUT_CACHED, "checkout-cached", CHECKOUT_CACHED, "6", ".", ".git"),
            "git",
            *m,
            "-c",
            "submodule.alternateLocation=superproject",
            "-c",
            "submodule.alternateErrorStrategy=info",
            "submodule",
            "update",
            "--init",
            "--recursive",
            "--jobs",
            "6",
        ),
        ("sh", "-c", RECORD_ALL, "record-in-cache", RECORD),
    ]
    assert [c.cwd for c in commands] == [
        None,
        sync.cache,
        None,
        None,
        sync.partial,
        sync.partial,
        sync.partial,
        None,
        sync.checkout,
        sync.checkout,
        sync.checkout,
    ]
    assert commands[1].why == (
        "fetch tag v1.7.1 into the object cache (fetched from https://mirror.example/gh/pytorch/pytorch); "
        "a cached earlier tag makes this incremental"
    )
    for command in commands:
        assert command.env.final_values()["GIT_TERMINAL_PROMPT"] == "0"
    assert commands[-1].env.final_values()["SRCBUILD_GIT_CACHE"] == cache
    assert commands[6].env.final_values()["SRCBUILD_GIT_CACHE"] == cache
    assert sync.submodule_commands() == commands[-3:]


def test_without_mirrors_git_gets_no_rules_only_the_transports(tmp_path: Path) -> None:
    sync = SourceSync(SourcePin("v2.0.0", URL), tmp_path / "co", tmp_path / "cache", MirrorRules(), jobs=2)
    policy = (
        "-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "-c", "protocol.http.allow=always",
        "-c", "protocol.ssh.allow=always", "-c", "protocol.git.allow=always", "-c", "protocol.file.allow=user",
    )  # fmt: skip
    assert sync.commands()[1].argv == (
        ("git", *policy, "-c", "fetch.unpackLimit=1", "fetch", "--no-tags", URL, "+refs/tags/v2.0.0:refs/tags/v2.0.0")
    )
    assert sync.commands()[1].why == (
        "fetch tag v2.0.0 into the object cache; a cached earlier tag makes this incremental"
    )


def test_commands_render_as_json_and_shell(tmp_path: Path) -> None:
    command = make_sync(tmp_path).commands()[-1]
    assert command.to_json()["argv"][-1] == RECORD
    assert command.shell().startswith('sh -c \'c="$SRCBUILD_GIT_CACHE"; test -d .git/modules || exit 0;')


def test_patch_commands_check_everything_first_cumulatively(tmp_path: Path) -> None:
    p1, p2 = tmp_path / "a.patch", tmp_path / "b.patch"
    p1.write_text("one\n")
    p2.write_text("two\n")
    patches = PatchSet(tmp_path / "co", [p1, p2], ["kepler/a.patch", "kepler/b.patch"])
    marker = str(tmp_path / "co" / ".git" / "srcbuild-patches")
    sha1 = "2c8b08da5ce60398e1f19af0e5dccc744df274b826abe585eaba68c525434806"
    sha2 = "27dd8ed44a83ff94d557f9fd0412ed5a8cbca69ea04922d88c01184a07300a5a"
    a, b = ("kepler/a.patch", sha1, str(p1)), ("kepler/b.patch", sha2, str(p2))
    assert [c.argv for c in patches.check_commands()] == [
        ("sh", "-c", CHECK_SERIES, "check-series", marker, *a),
        ("sh", "-c", CHECK_SERIES, "check-series", marker, *a, *b),
    ]
    assert [c.why for c in patches.check_commands()] == [
        "check that patch kepler/a.patch applies",
        "check that patch kepler/b.patch applies after the ones before it",
    ]
    assert [c.argv for c in patches.apply_commands()] == [
        ("sh", "-c", APPLY_ONCE, "apply-once", marker, *a),
        ("sh", "-c", APPLY_ONCE, "apply-once", marker, *b),
    ]
    assert all(c.cwd == tmp_path / "co" for c in patches.apply_commands())
    assert not PatchSet(tmp_path, [], [])
    with pytest.raises(ValueError):
        PatchSet(tmp_path, [p1], [])


CLONE_FAILED = [
    "Cloning into '/w/src/torch/third_party/benchmark'...",
    "fatal: transport 'https' not allowed",
    "fatal: clone of 'https://github.com/google/benchmark.git' into submodule path "
    "'/w/src/torch/third_party/benchmark' failed",
    "Failed to clone 'third_party/benchmark'. Retry scheduled",
]


def test_failed_submodule_without_rule_suggests_mirror() -> None:
    command = Command(("git", "submodule", "update", "--init", "--recursive"), "why")
    err = explain_git_failure(command, CLONE_FAILED, MirrorRules(), "torch", Path("/w/logs/sources.log"))
    assert err.exit_code == 5
    assert err.message == (
        "torch sources: could not fetch submodule /w/src/torch/third_party/benchmark "
        "from https://github.com/google/benchmark.git"
    )
    assert err.hint == (
        "no mirror rule covers https://github.com/google/benchmark.git: pass --mirror gitee or "
        "--mirror https://github.com/=<your mirror>/ (SRCBUILD_MIRROR sets a default); "
        "git said: fatal: transport 'https' not allowed; full output in /w/logs/sources.log"
    )


def test_failed_submodule_through_mirror_names_the_mirror() -> None:
    command = Command(("git", "submodule", "update"), "why")
    err = explain_git_failure(command, CLONE_FAILED, parse_mirror_args(["gitee"], {}), "torch")
    assert err.message == (
        "torch sources: could not fetch submodule /w/src/torch/third_party/benchmark from "
        "https://github.com/google/benchmark.git (mirror https://gitee.com/mirrors/benchmark.git)"
    )
    assert err.hint.startswith("the mirror does not serve it: check https://gitee.com/mirrors/benchmark.git, or add")


def test_missing_tag_and_missing_commit() -> None:
    fetch = Command(("git", "fetch", "--no-tags", URL, "+refs/tags/v9:refs/tags/v9"), "why")
    err = explain_git_failure(fetch, ["fatal: couldn't find remote ref refs/tags/v9"], MirrorRules(), "torch")
    assert err.message == f"torch sources: {URL} has no refs/tags/v9"
    lag = [
        "fatal: Fetched in submodule path 'third_party/fbgemm', but it did not contain "
        "0123456789abcdef0123456789abcdef01234567. Direct fetching of that commit failed."
    ]
    err = explain_git_failure(Command(("git", "submodule", "update"), "w"), lag, MirrorRules(), "torch")
    assert err.message == (
        "torch sources: submodule third_party/fbgemm has no commit "
        "0123456789abcdef0123456789abcdef01234567 at its remote"
    )


def test_top_level_fetch_failure_names_the_url() -> None:
    fetch = Command(("git", "fetch", "--no-tags", URL, "+refs/tags/v1:refs/tags/v1"), "why")
    tail = [f"fatal: unable to access '{URL}/': Could not resolve host: github.com"]
    err = explain_git_failure(fetch, tail, MirrorRules(), "torchvision")
    assert err.message.startswith("torchvision sources: could not fetch")
    assert "pass --mirror gitee" in (err.hint or "")


def test_patch_failure_names_the_patch() -> None:
    command = Command(("sh", "-c", CHECK_SERIES, "check-series", "/p/a.patch", "/p/b.patch"), "w", Path("/w/src/torch"))
    tail = ["error: patch failed: setup.py:3", "error: setup.py: patch does not apply"]
    err = explain_patch_failure(command, tail)
    assert err.message == (
        "patch /p/b.patch does not apply to /w/src/torch: error: patch failed: setup.py:3; "
        "error: setup.py: patch does not apply"
    )
    assert err.hint == "no patch was applied; update the patch for this tag or drop it from build.patches"
