"""The parsed-table cache: the same data as parsing the TOML, read without parsing while the TOML's
stamp matches, parsed again when it does not or when the cache file is damaged, never a failure when
the cache cannot be written, and only for the tables shipped with srcbuild."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from srcbuild import tables

NAMES = sorted(p.stem for p in tables.DATA_DIR.glob("*.toml"))


@pytest.fixture()
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "srcbuild" / "tables"


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed the TOML although the cache was current")

    monkeypatch.setattr(tables.tomllib, "load", refuse)


def test_a_cached_table_is_the_parsed_table(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = {name: tables.read_table(name) for name in NAMES}  # cold: parses and keeps
    assert sorted(p.name.split("-")[0] for p in cache_home.glob("*.json")) == NAMES
    _no_parsing(monkeypatch)
    assert {name: tables.read_table(name) for name in NAMES} == parsed
    assert "spack/spack-packages" in json.dumps(parsed["cudnn"])  # short source names expanded


def test_a_stale_or_damaged_cache_is_parsed_again(cache_home: Path) -> None:
    fresh = tables.read_table("cuda")
    (cache_file,) = cache_home.glob("cuda-*.json")
    kept = json.loads(cache_file.read_text())
    kept["stamp"][2] += 1  # the TOML changed since: another modification time
    kept["table"] = {"stale": True}
    cache_file.write_text(json.dumps(kept))
    assert tables.read_table("cuda") == fresh
    cache_file.write_text('{"stamp": [1, 2')  # cut short
    assert tables.read_table("cuda") == fresh
    assert json.loads(cache_file.read_text())["table"] == fresh  # rewritten whole
    assert not [p for p in cache_home.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_an_unwritable_cache_is_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert tables.read_table("drivers")["generation"]
    assert blocked.read_text() == ""  # and nothing was made in its place


def test_a_data_directory_of_ones_own_is_never_cached(cache_home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "cuda.toml").write_text('[[release]]\nversion = "1.0"\nsource = "x"\n')
    assert tables.read_table("cuda", data)
    assert not cache_home.exists() or not list(cache_home.iterdir())
    assert os.listdir(data) == ["cuda.toml"]
