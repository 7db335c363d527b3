"""conda-lock v1 files: writing, reading back, refusing stale or malformed ones."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from srcbuild.envs.lockfile import LockedPackage, check_current, lockfile_from, lockfile_path, read_lockfile
from srcbuild.errors import EnvironmentError_

HELLO = LockedPackage(
    name="hello",
    version="0.1",
    url="https://example.org/conda-forge/linux-64/hello-0.1-h0_0.tar.bz2",
    sha256="a" * 64,
    md5="b" * 32,
    dependencies=("libgreet >=1.0,<2",),
)
GREET = LockedPackage(
    name="libgreet",
    version="1.0",
    url="https://example.org/conda-forge/linux-64/libgreet-1.0-h0_0.tar.bz2",
    sha256="c" * 64,
    md5="d" * 32,
)


def test_written_file_is_conda_lock_v1(tmp_path: Path) -> None:
    path = tmp_path / "r.conda-lock.yml"
    lockfile_from([HELLO, GREET], "f" * 64, ["conda-forge"], ["r.toml"]).write(path)
    data = yaml.safe_load(path.read_text())
    assert data["version"] == 1
    assert data["metadata"] == {
        "content_hash": {"linux-64": "f" * 64},
        "channels": [{"url": "conda-forge", "used_env_vars": []}],
        "platforms": ["linux-64"],
        "sources": ["r.toml"],
    }
    assert data["package"][0] == {
        "name": "hello",
        "version": "0.1",
        "manager": "conda",
        "platform": "linux-64",
        "dependencies": {"libgreet": ">=1.0,<2"},
        "url": HELLO.url,
        "hash": {"md5": "b" * 32, "sha256": "a" * 64},
        "category": "main",
        "optional": False,
    }
    lock = read_lockfile(path)
    assert lock.packages == (HELLO, GREET)
    assert lock.explicit_lines() == ["@EXPLICIT", f"{HELLO.url}#{'b' * 32}", f"{GREET.url}#{'d' * 32}"]


def test_stale_lockfile_says_to_relock(tmp_path: Path) -> None:
    path = tmp_path / "kepler-cu92.conda-lock.yml"
    lock = lockfile_from([GREET], "1" * 64, ["conda-forge"])
    with pytest.raises(EnvironmentError_) as err:
        check_current(lock, path, "2" * 64, "kepler-cu92")
    assert err.value.message == (
        f"{path} is out of date: it was locked for environment 1111111111111111, "
        "but the recipe now needs 2222222222222222"
    )
    assert err.value.hint == (
        "re-run `srcbuild lock --recipe kepler-cu92` to lock the current environment (or delete the lockfile)"
    )
    assert err.value.exit_code == 8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 2\n", "is not a conda-lock version 1 file (`version: 1` missing)"),
        ("version: 1\nmetadata: {}\n", "has no metadata.content_hash"),
        (
            "version: 1\nmetadata: {content_hash: {osx-64: x}, platforms: [linux-64]}\n",
            "has no metadata.content_hash for linux-64",
        ),
        (
            "version: 1\nmetadata: {content_hash: {linux-64: x}}\npackage:\n- {name: a, version: '1', url: u}\n",
            "package[0] lacks 'hash'",
        ),
        ("version: [1\n", "cannot be read as YAML"),
    ],
)
def test_malformed_lockfiles(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "x.conda-lock.yml"
    path.write_text(text)
    with pytest.raises(EnvironmentError_) as err:
        read_lockfile(path)
    assert err.value.message.startswith(f"{path}: {message}")


def test_lockfile_sits_next_to_the_recipe() -> None:
    assert lockfile_path(Path("/r/recipes/kepler-cu92.toml"), "kepler-cu92") == Path(
        "/r/recipes/kepler-cu92.conda-lock.yml"
    )
