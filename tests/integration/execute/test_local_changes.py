"""A build resumed after hand-editing the checkout is cached as modified and kept out of the shared cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.execute.conftest import REPO_ROOT, Srcbuild

pytestmark = pytest.mark.integration


PATCHES = Path(__file__).parent / "patches"


def _cli(srcbuild: Srcbuild, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "srcbuild", *args],
        env={**srcbuild.env, "SRCBUILD_PATCHES_PATH": str(PATCHES)},
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )


def _first_submodule(checkout: Path) -> str:
    argv = ["git", "-C", str(checkout), "submodule", "status", "--recursive"]
    out = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=True).stdout
    return out.split()[1]


def test_an_edited_checkout_is_cached_as_modified_and_not_shared(srcbuild_118: Srcbuild, tmp_path: Path) -> None:
    env = {
        "SRCBUILD_PATCHES_PATH": str(PATCHES),
        "FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once"),
    }
    failed = srcbuild_118.run("torch", "world-patched", "--keep-build", env=env)
    assert failed.rc == 5, failed.out
    # the recipe's own patch is not a local modification
    assert "the checkout is the tag plus the recipe's patches: no local modifications" in failed.out
    checkout = srcbuild_118.checkout("world-patched")
    (checkout / "csrc" / "ops_01.c").write_text((checkout / "csrc" / "ops_01.c").read_text() + "\n/* edited */\n")
    sub = _first_submodule(checkout)
    sub_file = next(p for p in sorted((checkout / sub).iterdir()) if p.is_file() and p.name != ".git")
    sub_file.write_bytes(sub_file.read_bytes() + b"\nedited in the submodule\n")
    (checkout / "csrc" / "extra_op.c").write_text("int extra(void) { return 1; }\n")  # untracked, not ignored

    resumed = srcbuild_118.run("torch", "world-patched", "--keep-build", "--resume", env=env)
    assert resumed.rc == 0, resumed.out
    assert "built from modified sources: csrc/extra_op.c, csrc/ops_01.c" in resumed.out
    manifest = json.loads((Path(resumed.last_line).parent / "manifest.json").read_text())
    files = manifest["modified"]["files"]
    assert files == sorted(["csrc/extra_op.c", "csrc/ops_01.c", f"{sub}/{sub_file.name}"])
    assert len(manifest["modified"]["diff_sha256"]) == 64
    assert manifest["resolved"]["extra"]["source_diff"] == manifest["modified"]["diff_sha256"]

    shown = _cli(srcbuild_118, "cache", "show", manifest["entry_key"][:16])
    assert "sources: MODIFIED: 3 file(s) (csrc/extra_op.c, csrc/ops_01.c, ...)" in " ".join(shown.stdout.split())

    share = tmp_path / "share"
    share.mkdir()
    refused = _cli(srcbuild_118, "cache", "push", "--remote", str(share), "--unsigned")
    assert refused.returncode == 2, refused.stdout
    refused_words = " ".join(refused.stdout.split())
    assert "refused torch-2.5.1" in refused_words and "push it with --allow-modified" in refused_words
    assert not list(share.rglob("*.whl"))
    sent = _cli(srcbuild_118, "cache", "push", "--remote", str(share), "--unsigned", "--allow-modified")
    assert sent.returncode == 0 and "1 sent" in sent.stdout, sent.stdout

    # a lookup for the recipe (the clean tag plus patches) never takes the modified wheel
    recipe = str(Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "world" / "world-patched.toml")
    dry = _cli(srcbuild_118, "install", "torch", "--recipe", recipe, "--dry-run", "--into", str(srcbuild_118.venv))
    assert dry.returncode == 9 and "no cached wheel for torch of recipe world-patched" in dry.stdout, dry.stdout
    into = ["--into", str(srcbuild_118.venv)]
    allowed = _cli(srcbuild_118, "install", "torch", "--recipe", recipe, "--dry-run", "--allow-modified", *into)
    assert allowed.returncode == 0 and "would install torch-2.5.1" in allowed.stdout, allowed.stdout
    # another machine pulling the recipe's wheels skips it unless asked
    other = tmp_path / "other-cache"
    pulled = _cli(
        srcbuild_118, "cache", "pull", "--remote", str(share), "--trust-unsigned", "--cache-dir", str(other)
    )
    assert pulled.returncode == 0 and "1 skipped" in pulled.stdout, pulled.stdout
    assert not list(other.rglob("*.whl"))


def test_a_file_dropped_in_an_ignored_output_dir_before_resume_is_a_modification(
    srcbuild_118: Srcbuild, tmp_path: Path
) -> None:
    # torch/lib/ is ignored by the tree's own .gitignore, and the build writes its libraries there:
    # a file put there by hand between a failed build and --resume is not the build's
    env = {"SRCBUILD_PATCHES_PATH": str(PATCHES), "FAKE_TORCH_FAIL_ONCE": str(tmp_path / "killed-once")}
    failed = srcbuild_118.run("torch", "world-patched", "--keep-build", env=env)
    assert failed.rc == 5, failed.out
    checkout = srcbuild_118.checkout("world-patched")
    (checkout / "torch" / "lib").mkdir(parents=True, exist_ok=True)
    (checkout / "torch" / "lib" / "libextra.so").write_bytes(b"\x7fELF not built here")
    resumed = srcbuild_118.run("torch", "world-patched", "--keep-build", "--resume", env=env)
    assert resumed.rc == 0, resumed.out
    assert "built from modified sources: torch/lib/libextra.so" in resumed.out, resumed.out
    manifest = json.loads((Path(resumed.last_line).parent / "manifest.json").read_text())
    assert manifest["modified"]["files"] == ["torch/lib/libextra.so"]


def test_a_file_a_patch_adds_is_not_a_local_modification(srcbuild_118: Srcbuild) -> None:
    """The patches step writes the checkout (git apply adds csrc/ops_09.c): what it adds is the
    recipe's, so the wheel is cached as built from the clean tag plus patches."""
    built = srcbuild_118.run("torch", "world-patched-new-file", env={"SRCBUILD_PATCHES_PATH": str(PATCHES)})
    assert built.rc == 0, built.out
    assert (srcbuild_118.checkout("world-patched-new-file") / "csrc" / "ops_09.c").is_file()
    assert "built from modified sources" not in built.out
    manifest = json.loads((Path(built.last_line).parent / "manifest.json").read_text())
    assert not manifest.get("modified"), manifest.get("modified")
