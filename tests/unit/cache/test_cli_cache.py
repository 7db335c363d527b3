"""``srcbuild cache ls|show|verify|rm|gc|index`` through ``main``: exact text and JSON keys."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from srcbuild.cache.maintenance import entry_size, parse_size
from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.errors import UsageError
from srcbuild.files import human_size
from tests.unit.cache.synthetic import PLATFORM, make_manifest, make_wheel


@pytest.fixture()
def filled(tmp_path: Path) -> WheelCache:
    cache = WheelCache(Path(os.environ["SRCBUILD_CACHE_DIR"]))
    for i, (sass, ptx) in enumerate((((30,), (30,)), ((35, 37), ()), ((50,), ()))):
        wheel = make_wheel(tmp_path / f"d{i}", version="1.7.1+cu92.sm30", payload=b"x" * (1000 * (i + 1)))
        cache.store(wheel, make_manifest(wheel, sass=sass, ptx=ptx, commit=str(i) * 40, created=1000.0 + i))
    return cache


def test_ls_json_and_table(filled: WheelCache, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["cache", "ls", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["compute_capabilities"] for r in rows] == ["5.0", "3.5 3.7", "3.0 +PTX 3.0"]
    assert set(rows[0]) >= {"package", "version", "recipe", "compute_capabilities", "size", "age", "entry_key"}
    assert rows[0]["recipe"] == "kepler-cu92" and rows[0]["package"] == "torch"
    assert main(["cache", "ls"]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[1].split() == ["key", "package", "version", "recipe", "kernels", "size", "age"]
    assert max(len(line) for line in lines) <= 80  # every column shown, its long cells wrapped at spaces
    first = lines[2].split()
    assert first[:4] == [rows[0]["entry_key"][:12], "torch", "1.7.1+cu92.sm30", "kepler-cu92"]
    assert first[-3:] == [*human_size(rows[0]["wheel_size"]).split(), rows[0]["age"]]
    assert lines[-1].split() == ["3.0"]  # "3.0 +PTX 3.0" wraps inside its column, under "+PTX"
    assert lines[-1].index("3.0") == lines[-2].index("3.0 +PTX")
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["cache", "ls"]) == 0
    assert "3.0 +PTX 3.0" in capsys.readouterr().out


def test_ls_empty(capsys) -> None:
    assert main(["cache", "ls"]) == 0
    assert capsys.readouterr().out == f"no cached wheels in {os.environ['SRCBUILD_CACHE_DIR']}\n"


def test_show(filled: WheelCache, capsys) -> None:
    entry = sorted(filled.entries(), key=lambda e: e.manifest.created)[0]
    assert main(["cache", "show", entry.key[:10], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["entry_key"] == entry.key and data["kernels"] == {"sass": [30], "ptx": [30]}
    assert main(["cache", "show", entry.key[:10]]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == entry.manifest.wheel
    assert "kernels:       3.0 +PTX 3.0" in text
    assert f"entry key:     {entry.key}" in text  # a sha256 stays on its line in 80 columns
    assert main(["cache", "show", "torch-1.7.1+cu92.sm30-cp38-cp38-linux_x86_64.whl"]) == 2
    assert "matches 3 entries" in capsys.readouterr().err
    assert main(["cache", "show", "nothing"]) == 2
    assert capsys.readouterr().err == (
        "error: no cache entry matches 'nothing'\nhint: list the entries with `srcbuild cache ls`\n"
    )


def test_verify_finds_and_removes_damage(filled: WheelCache, capsys) -> None:
    assert main(["cache", "verify"]) == 0
    assert capsys.readouterr().out == "3 entries checked, 0 damaged\n"
    victim = next(iter(filled.entries()))
    victim.wheel_path.write_bytes(b"flipped")
    assert main(["cache", "verify"]) == 7
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"damaged  cache entry {victim.key[:12]}: {victim.manifest.wheel} has sha256 ")
    assert out[1:] == ["3 entries checked, 1 damaged", "hint: remove them with `srcbuild cache verify --remove`"]
    assert main(["cache", "verify", "--remove", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["problems"][0]["removed"] is True
    assert len(list(filled.entries())) == 2


def test_rm_and_gc(filled: WheelCache, capsys) -> None:
    oldest = sorted(filled.entries(), key=lambda e: e.manifest.created)[0]
    assert main(["cache", "rm", oldest.key[:12]]) == 0
    assert capsys.readouterr().out == f"removed {oldest.key[:12]}  {oldest.manifest.wheel}\n"
    assert main(["cache", "gc"]) == 2
    assert main(["cache", "gc", "--keep", "1", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("would remove 1 entries")
    assert len(list(filled.entries())) == 2
    assert main(["cache", "gc", "--keep", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kept"] == 1
    assert [e.manifest.sass for e in filled.entries()] == [(50,)]


def test_gc_by_size(filled: WheelCache) -> None:
    sizes = sorted((e.manifest.created, entry_size(e)) for e in filled.entries())
    budget = sizes[-1][1] + sizes[-2][1]  # room for the two newest entries exactly
    assert main(["cache", "gc", "--max-size", str(budget)]) == 0
    assert sorted(e.manifest.sass for e in filled.entries()) == [(35, 37), (50,)]


def test_sizes() -> None:
    assert parse_size("10G") == 10 * 1024**3
    assert parse_size("500MiB") == 500 * 1024**2
    assert parse_size("1.5k") == 1536
    assert human_size(1536) == "1.5 KiB"
    with pytest.raises(UsageError, match="is not a size"):
        parse_size("lots")


def test_index_command(filled: WheelCache, tmp_path: Path, capsys) -> None:
    assert main(["cache", "index", "--out", str(tmp_path / "idx")]) == 0
    out = capsys.readouterr().out
    assert out.endswith(f"wrote a simple index of 3 wheels to {tmp_path / 'idx' / 'simple'}\n")


def test_push_and_pull_by_recipe(filled: WheelCache, tmp_path: Path, capsys, monkeypatch) -> None:
    # --recipe computes the fingerprint for "this machine": the recorded machine the entries were
    # made for (PLATFORM), not the host running the test, whose C library may differ
    monkeypatch.setattr("srcbuild.host.platform.host_platform_tag", lambda: PLATFORM)
    share = tmp_path / "share"
    share.mkdir()
    assert main(["cache", "push", "--unsigned", "--remote", str(share)]) == 0
    assert capsys.readouterr().out.endswith("3 sent\n")
    other = tmp_path / "other"
    pull = ["cache", "pull", "--trust-unsigned", "--remote", str(share), "--cache-dir", str(other)]
    assert main([*pull, "--recipe", "kepler-cu102"]) == 0
    assert capsys.readouterr().out == "nothing to transfer\n"
    assert main([*pull, "--recipe", "kepler-cu92"]) == 0
    assert capsys.readouterr().out.endswith("3 fetched\n")
    assert main([*pull, "--json"]) == 0
    assert [t["action"] for t in json.loads(capsys.readouterr().out)] == ["present"] * 3
    assert main(["cache", "pull", "--cache-dir", str(other)]) == 2
    assert capsys.readouterr().err.startswith("error: no remote given\n")
