"""``plan --format shell`` with hostile values: every one stays data, none runs as a command.

The plan is made for a recipe and options full of the values an audit used to inject commands (a
newline in the repository URL, in a patch name and in the recipe's name, ``$(...)`` and backquotes
in the work directory, in ``--env`` and in a mirror rule, a work directory with a space). The
script must pass ``bash -n`` and, run by bash with a PATH that holds only recording stubs of the
programs it calls, must create no marker file and hand every hostile value to git and python as one
intact argument. The recipe object is made by hand: the loader refuses most of these values
(tests/unit/test_recipe_trust.py); this test guards the rendering on its own.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from srcbuild.knowledge import load_knowledge
from srcbuild.paths import Paths
from srcbuild.plan import make_plan, render
from srcbuild.recipe import RecipeCatalog, SourcePin
from srcbuild.resolve import BuildHost, BuildOptions, resolve
from srcbuild.sources.sync import cache_repo

pytestmark = pytest.mark.integration

WORLD_RECIPE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "world" / "world-kepler-cu118.toml"
# Programs the script runs by name; each stub appends its name and arguments (NUL-separated) to the log.
STUBS = ("git", "sh", "rm", "mkdir", "cat", "sed", "head", "update-alternatives", "ln", "mktemp", "ninja", "awk")


def _injections(marker: Path) -> dict[str, str]:
    """Each way of starting a command inside a value, every one writing ``marker`` when it runs."""
    m = str(marker)
    return {
        "newline": f"\necho pwned > {m}\n",
        "subst": f"$(echo pwned > {m})",
        "backquote": f"`echo pwned > {m}`",
        "semicolon": f"; echo pwned > {m};",
        "quote": f"'; echo pwned > {m}; '",
    }


END = "END-OF-CALL"


def _calls(log: Path) -> list[list[str]]:
    """The recorded calls: each a program name and its arguments, exactly as received."""
    calls: list[list[str]] = [[]]
    for item in log.read_text().split("\0")[:-1]:
        if item == END:
            calls.append([])
        else:
            calls[-1].append(item)
    return calls[:-1]


def _recorder(name: str, log: Path) -> str:
    """A program that appends its name, arguments and END to ``log`` in one printf (one append),
    so that programs running at the same time (a pipeline) cannot interleave their records."""
    return f"#!/bin/sh\nprintf '%s\\0' {name} \"$@\" '{END}' >> '{log}'\nexit 0\n"


def _stub_dir(root: Path, log: Path) -> Path:
    stubs = root / "stubs"
    stubs.mkdir(parents=True)
    for name in STUBS:
        stub = stubs / name
        stub.write_text(_recorder(name, log))
        stub.chmod(0o755)
    return stubs


def test_hostile_values_stay_data_in_the_shell_plan(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    marker = tmp_path / "MARKER"
    inj = _injections(marker)

    work = tmp_path / f"work dir {inj['subst']}{inj['backquote']}"
    paths = Paths.resolve(work_dir=work, cache_dir=tmp_path / "cache", environ={})
    env_prefix = tmp_path / f"env {inj['subst']} {inj['semicolon']}"
    (env_prefix / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    python = env_prefix / "bin" / "python"
    python.write_text(_recorder("python", log))
    python.chmod(0o755)

    patch_dir = tmp_path / f"patches{inj['newline']}"
    patch_dir.mkdir(parents=True)
    patch = patch_dir / "0001 it's.patch"
    patch.write_text("--- a/x\n+++ b/x\n")

    recipe = RecipeCatalog(paths).load(str(WORLD_RECIPE))
    recipe = dataclasses.replace(
        recipe,
        name=f"world{inj['newline']}{inj['subst']}",
        torch=SourcePin(tag="v2.5.1", repo=f"https://github.com/pytorch/pytorch{inj['newline']}{inj['semicolon']}"),
        build=dataclasses.replace(recipe.build, patches=(f"0001{inj['newline']}.patch",), patch_files=(patch,)),
    )
    m = str(marker)  # a mirror value is split at spaces, so its injections have none
    mirror = f"https://github.com/=file:///mirror$(echo>{m})`echo>{m}`;echo>{m};/"
    options = BuildOptions(package="torch", mirrors=(mirror,), env_prefix=str(env_prefix))
    host = BuildHost(
        gcc=Path("/usr/bin/gcc-11"), gxx=Path("/usr/bin/g++-11"), cuda_home=tmp_path / f"cuda {inj['quote']}",
        python=Path("/usr/bin/python3"), max_jobs=2,
    )  # fmt: skip
    environ = {"SRCBUILD_WORK_DIR": str(work)}
    for system in (False, True):  # the private compiler tree, and the system one with its restore trap
        chosen = dataclasses.replace(options, system_alternatives=system)
        plan = make_plan(resolve(recipe, chosen, host, load_knowledge(), paths=paths, environ=environ))
        script = tmp_path / f"plan-{system}.sh"
        script.write_text(render(plan, "shell"))

        syntax = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr

        # Everything the script works in exists, so it runs to the end.
        git_cache = cache_repo(paths.git_cache_dir, recipe.torch.repo)
        for directory in (plan.checkout, plan.build_root, plan.checkout.parent / ".pytorch.partial", git_cache):
            directory.mkdir(parents=True, exist_ok=True)
        log.unlink(missing_ok=True)
        stubs = _stub_dir(tmp_path / f"sandbox-{system}", log)
        ran = subprocess.run(
            [bash, str(script)], env={"PATH": str(stubs), "HOME": str(tmp_path)}, capture_output=True, text=True,
            cwd=tmp_path, timeout=60,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert not marker.exists(), f"an injected command ran:\n{script.read_text()}"

        calls = _calls(log)
        names = [c[0] for c in calls]
        assert "git" in names and "python" in names and "sh" in names
        fetch = next(c for c in calls if c[0] == "git" and "fetch" in c)
        assert recipe.torch.repo in fetch  # the URL reached git as one argument, unchanged
        assert f"url.file:///mirror$(echo>{m})`echo>{m}`;echo>{m};/.insteadOf=https://github.com/" in fetch
        build = next(c for c in calls if c[0] == "python" and "bdist_wheel" in c)
        assert build == ["python", "setup.py", "bdist_wheel"]
        assert any(str(patch) in c for c in calls if c[0] == "sh")
    assert not os.path.exists(marker)
