"""What mirror create gathers for a recipe: the environment in the form the other machine's
backend installs, the toolchain's conda pieces on their channels, extensions named for a dry run
(sdists as pip sets, git sources as repositories)."""

from __future__ import annotations

from srcbuild.cli.mirror_targets import make_target
from srcbuild.mirror.create import Target
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from srcbuild.toolchain.data_files import load_facts


def _target(backend: str | None, exts: tuple[str, ...] = (), skips: tuple[str, ...] = ()) -> Target:
    recipe = RecipeCatalog(Paths.resolve(environ={})).load("kepler-k80-cu118")
    return make_target(recipe, ("torch",), exts, (None, backend, skips), load_facts({}), (), {}, True)


def test_a_conda_backend_takes_conda_packages_and_a_venv_takes_everything_from_pip() -> None:
    conda = _target("conda")
    assert conda.env is not None and "numpy" in " ".join(conda.env.conda) and conda.pip == ()
    venv = _target("venv")
    assert venv.env is None
    (pip_set,) = venv.pip
    assert pip_set.python == "3.10" and any(r.startswith("numpy") for r in pip_set.requirements)
    assert pip_set.why == "the build environment of kepler-k80-cu118"
    none = _target(None)
    assert none.env is None and none.pip == ()


def test_the_toolchains_conda_pieces_and_the_extensions_are_listed() -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    exts = ("torch-scatter==2.1.2", "git+https://github.com/x/y@v1", f"git+https://github.com/x/z.git@{commit}")
    target = _target(None, exts=exts)
    ((spec, specs),) = target.toolchain_conda
    assert spec.channels == ("conda-forge",) and "gcc_linux-64 11.*" in specs
    assert [p.requirements for p in target.pip] == [("torch-scatter==2.1.2",)]
    assert target.needs.not_mirrored == ()
    # git sources: a repository at the tag, or at the commit alone, as for torch's sources
    assert [(r.url, r.tag, r.commit, r.why) for r in target.needs.repos[1:]] == [
        ("https://github.com/x/y", "v1", None, "extension y"),
        ("https://github.com/x/z.git", "", commit, "extension z"),
    ]
    assert target.needs.repos[0].why == "torch"
    assert _target(None, skips=("gcc",)).toolchain_conda == ()


def test_the_other_machines_python_and_platform_are_checked_and_shown_by_a_dry_run(capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from srcbuild.cli import main

    base = ["mirror", "create", "/tmp/never-made", "--recipe", "kepler-cu92", "--dry-run", "--env-backend", "venv"]
    assert main([*base, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["platforms"][:2] == ["manylinux_2_17_x86_64", "manylinux2014_x86_64"]
    assert row["pip"][0]["python"] == "3.8"  # the recipe's Python, not the one running srcbuild
    assert row["conda_glibc"] == "2.28"  # conda-lock's default without --platform
    assert main([*base, "--json", "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_12_x86_64"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["conda_glibc"] == "2.17"  # the newest glibc a tag names
    assert main([*base, "--python", "3.9", "--platform", "manylinux_2_28_x86_64"]) == 0
    assert "pip wheels for Python 3.9 on manylinux_2_28_x86_64 and older" in capsys.readouterr().out
    assert main([*base, "--platform", "manylinux2014-x86_64"]) == 2
    assert "--platform manylinux2014-x86_64: not a wheel platform tag" in capsys.readouterr().err
    assert main([*base, "--python", "python3.8"]) == 2
    assert "--python python3.8: not a Python version" in capsys.readouterr().err
