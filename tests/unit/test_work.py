"""``srcbuild work ls|clean``, ``recipes new``, shell completion of recipe names."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.work import parse_age, scan, select

DAY = 86400.0


def make_work(paths: Paths) -> None:
    old = time.time() - 40 * DAY
    for path, size in (
        (paths.sources_dir / "kepler-cu92" / "pytorch" / "setup.py", 100),
        (paths.builds_dir / "kepler-cu92-torch" / "logs" / "07-build.log", 50),
        (paths.sources_dir / "pascal-cu126" / "pytorch" / "setup.py", 10),
        (paths.envs_dir / "abc123" / "bin" / "python", 7),
        (paths.git_cache_dir / "pytorch-1.git" / "HEAD", 3),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    (paths.envs_dir / "kepler-cu92-py3.8").symlink_to(paths.envs_dir / "abc123", target_is_directory=True)
    for root, dirs, files in os.walk(paths.work_dir):
        for name in (*dirs, *files):
            if "pascal" not in root and "pascal" not in name:
                os.utime(os.path.join(root, name), (old, old), follow_symlinks=False)


def test_scan_lists_each_kind_with_recipe_size_and_age() -> None:
    paths = Paths.resolve(environ=os.environ)
    make_work(paths)
    items = {(i.kind, i.recipe): i for i in scan(paths)}
    assert set(items) == {
        ("checkout", "kepler-cu92"),
        ("checkout", "pascal-cu126"),
        ("build", "kepler-cu92"),
        ("environment", "kepler-cu92"),
        ("git objects", None),
    }
    assert items[("checkout", "kepler-cu92")].size >= 100
    chosen = select(scan(paths), time.time(), older_than=30 * DAY)
    assert {(i.kind, i.recipe) for i in chosen} == {
        ("checkout", "kepler-cu92"),
        ("build", "kepler-cu92"),
        ("environment", "kepler-cu92"),
    }  # never the shared git objects, never what was used lately


def test_work_ls_and_clean(capsys: pytest.CaptureFixture[str]) -> None:
    paths = Paths.resolve(environ=os.environ)
    make_work(paths)
    assert main(["work", "ls"]) == 0
    out = capsys.readouterr().out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    assert "\ncheckout " in out and "kepler-cu92" in out and "40d ago" in out
    assert main(["work", "clean"]) == 2  # says which filter to give
    assert main(["work", "clean", "--recipe", "kepler-cu92", "--dry-run"]) == 0
    assert (paths.sources_dir / "kepler-cu92").exists()
    capsys.readouterr()
    assert main(["work", "clean", "--older-than", "30d", "--json"]) == 0
    removed = json.loads(capsys.readouterr().out)["removed"]
    assert len(removed) == 3
    assert not (paths.sources_dir / "kepler-cu92").exists() and (paths.sources_dir / "pascal-cu126").exists()
    assert not (paths.envs_dir / "kepler-cu92-py3.8").is_symlink()  # its link went with it
    assert (paths.git_cache_dir / "pytorch-1.git").exists()


def test_parse_age() -> None:
    assert parse_age("30d") == 30 * DAY and parse_age("12h") == 12 * 3600
    with pytest.raises(Exception, match="is not an age"):
        parse_age("a month")


def test_recipes_new_extends_a_base_and_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path))
    assert main(["recipes", "new", "k80-mine", "--extends", "kepler-k80-cu118"]) == 0
    text = (tmp_path / "k80-mine.toml").read_text()
    assert 'extends = "kepler-k80-cu118"' in text and 'name = "k80-mine"' in text
    assert "## GPUs:" in text  # the base's comments, for reference
    assert main(["recipes", "show", "k80-mine"]) == 0
    assert main(["recipes", "new", "k80-mine", "--extends", "kepler-k80-cu118"]) == 2  # never overwrites
    assert main(["recipes", "new", "K80 Mine", "--extends", "kepler-k80-cu118"]) == 2


def test_recipe_names_complete(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("_SRCBUILD_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "srcbuild torch --recipe pascal")
    monkeypatch.setenv("COMP_CWORD", "3")
    with pytest.raises(SystemExit):
        main([])
    names = ["pascal-cu126", "pascal-cu126-mpi", "pascal-mx150-cu113"]
    assert capsys.readouterr().out.split() == [f"plain,{name}" for name in names]


def test_recipes_new_writes_blocks_valid_when_uncommented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every line of the reference uncommented (an [[extensions]] block keeps its name) loads."""
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path))
    assert main(["recipes", "new", "k80b", "--extends", "kepler-k80-cu118"]) == 0
    capsys.readouterr()
    path = tmp_path / "k80b.toml"
    lines = path.read_text().splitlines()
    reference = lines.index("# ---- kepler-k80-cu118, for reference ----")
    body = [line[2:] if line.startswith("# ") else line for line in lines[reference + 1 :]]
    path.write_text("\n".join(lines[: reference + 1] + body) + "\n")
    assert 'name = "torch-scatter"' in body
    assert main(["recipes", "show", "k80b", "--json"]) == 0, capsys.readouterr().err
    shown = json.loads(capsys.readouterr().out)
    assert shown["name"] == "k80b" and [e["name"] for e in shown["extensions"]] == ["torch-scatter"]


def test_a_child_removes_the_parents_cudnn_and_errors_name_the_file_that_set_a_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SRCBUILD_RECIPES_PATH", str(tmp_path))
    (tmp_path / "k80-nocudnn.toml").write_text('extends = "kepler-k80-cu118"\n[toolchain]\ncudnn = "none"\n')
    assert main(["recipes", "show", "k80-nocudnn", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["toolchain"]["cudnn"] is None
    (tmp_path / "cpu.toml").write_text('extends = "kepler-k80-cu118"\n[toolchain]\ncuda = "none"\n')
    assert main(["recipes", "show", "cpu"]) == 2
    err = capsys.readouterr().err.splitlines()[0]
    assert err.startswith(f"error: {tmp_path / 'cpu.toml'}: gpu.arch (set in ") and "kepler-k80-cu118.toml)" in err
