"""``plan --format dockerfile`` with hostile values: every one stays data, none runs as a command.

The shell plan's test (test_hostile_shell_plan.py), applied to the Dockerfile: a recipe made by
hand (the loader refuses most of these values) carries command injections in its name, its tag,
its gcc version and a mirror. Every logical line of the rendered Dockerfile must be a comment or
a known instruction (a newline in a value would start a new one); each RUN instruction is then
executed as Docker would (exec form: the program with its JSON arguments; shell form: ``sh -c``)
with a PATH of recording stubs, and must create no marker file and hand the recipe to srcbuild as
one intact argument. ARG defaults must read back, by Docker's word rules, as the value given.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.container import dockerfile_for
from srcbuild.container.dockerfile import SRCBUILD_VENV
from srcbuild.errors import UsageError
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog, SourcePin
from tests.integration.plan.test_hostile_shell_plan import _calls, _injections, _recorder

pytestmark = pytest.mark.integration

SH = shutil.which("sh") or "/bin/sh"
INSTRUCTIONS = {"FROM", "ARG", "ENV", "RUN", "COPY", "CMD"}
STUBS = ("apt-get", "rm", "mkdir", "cp", "find", "paste", "ldd", "awk", "sort", "xargs", "srcbuild", "python")
STUBS += ("python3", "python3.10", "pip")


def logical_lines(text: str) -> list[str]:
    """The Dockerfile's instructions and comments, continuation lines joined."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    assert not pending
    return out


def arg_value(rest: str) -> tuple[str, str]:
    """``NAME=value`` of an ARG line, read by Docker's word rules (double quotes, backslash escapes)."""
    name, _, raw = rest.partition("=")
    if raw.startswith('"'):
        assert raw.endswith('"') and len(raw) >= 2, raw
        return name, re.sub(r"\\(.)", r"\1", raw[1:-1])
    assert not re.search(r"\s", raw), raw
    return name, raw


def run_instructions(text: str, stubs: Path, log: Path, cwd: Path) -> list[str]:
    """Execute every RUN; return the ARG values."""
    args = []
    for line in logical_lines(text):
        keyword, _, rest = line.partition(" ")
        assert keyword in INSTRUCTIONS, f"not an instruction: {line!r}"
        if keyword == "ARG":
            args.append(arg_value(rest)[1])
        if keyword != "RUN":
            continue
        while rest.startswith("--mount="):
            rest = rest.split(" ", 1)[1].lstrip()
        env = {"PATH": str(stubs), "HOME": str(cwd)}
        if rest.startswith("["):
            argv = json.loads(rest)
            ran = subprocess.run([str(stubs / argv[0]), *argv[1:]], env=env, cwd=cwd, capture_output=True, text=True)
        else:
            script = "cd() { :; }; " + rest.replace(f"{SRCBUILD_VENV}/bin/", "").replace("/opt/venv/bin/", "")
            ran = subprocess.run([SH, "-c", script], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, (rest, ran.stderr)
    return args


@pytest.mark.parametrize("base", ["kepler-k80-cu118", "kepler-cu102"])  # official CUDA image; plain image
def test_hostile_values_stay_data_in_the_dockerfile(tmp_path: Path, base: str) -> None:
    marker = tmp_path / "MARKER"
    inj = _injections(marker)
    paths = Paths.resolve(work_dir=tmp_path / "work", environ={})
    recipe = RecipeCatalog(paths).load(base)
    hostile_name = f"world{inj['subst']}{inj['backquote']}{inj['quote']}{inj['semicolon']}"
    recipe = dataclasses.replace(
        recipe,
        name=hostile_name,
        torch=SourcePin(tag=f"v2.5.1{inj['newline']}RUN echo pwned > {marker}", repo=recipe.torch.repo),
        toolchain=dataclasses.replace(recipe.toolchain, gcc=f"11{inj['subst']}{inj['semicolon']}"),
    )
    with pytest.raises(UsageError, match="holds a control character; a Dockerfile cannot carry it"):
        dockerfile_for(dataclasses.replace(recipe, name=f"world{inj['newline']}"), "torch")
    mirror = f"https://github.com/=file:///m$(echo pwned>{marker})`echo pwned>{marker}`\"$HOME\\"
    text = dockerfile_for(recipe, "torchvision", (mirror,))

    log = tmp_path / "calls.log"
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name in STUBS:
        (stubs / name).write_text(_recorder(name, log))
        (stubs / name).chmod(0o755)
    args = run_instructions(text, stubs, log, tmp_path)
    assert not marker.exists(), f"an injected command ran:\n{text}"
    assert mirror in args  # the ARG default reads back as the value given
    calls = _calls(log)
    builds = [c for c in calls if c[0] == "srcbuild" and "--json" in c]
    assert [c[1:4] for c in builds] == [["torch", "--recipe", hostile_name], ["torchvision", "--recipe", hostile_name]]
    if base == "kepler-cu102":  # provisioned in the devel stage, through exec form
        assert ["srcbuild", "toolchain", "install", "--recipe", hostile_name] in calls
    else:
        apt = next(c for c in calls if c[0] == "apt-get" and "install" in c)
        assert f"gcc-11{inj['subst']}{inj['semicolon']}" in apt


def test_a_recipe_file_name_a_dockerfile_cannot_carry_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "y$(touch${IFS}PWNED).toml"
    path.write_text('name = "mine"\ndescription = "x"\nextends = "kepler-cu102"\n')
    assert main(["plan", "torch", "--recipe", str(path), "--format", "dockerfile"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "error: recipe file name 'y$(touch${IFS}PWNED).toml': a Dockerfile carries only letters, digits "
        "and . _ + - in it"
    )
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()
