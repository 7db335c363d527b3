""".ci/pip_locations.py: the local directories pip's configuration names, which .ci/stock-root
mounts read-only in the fresh root (find-links directories, file:// indexes and the directories
their pages link to)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "pip_locations.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pip_locations", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_find_links_and_file_indexes_with_the_directories_their_pages_link_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    index = tmp_path / "pypi" / "simple"
    (index / "absl-py").mkdir(parents=True)
    files = tmp_path / "pypi" / "files"
    files.mkdir()
    (files / "absl_py-2.5.0-py3-none-any.whl").write_bytes(b"")
    (index / "absl-py" / "index.html").write_text(
        '<a href="../../files/absl_py-2.5.0-py3-none-any.whl#sha256=00">absl_py-2.5.0-py3-none-any.whl</a>'
    )
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\n"
        f"extra-index-url = file://{index} https://example.invalid/simple\n"
        f"find-links = {wheels}/\n"  # named twice (here and below): listed once
        "[install]\nfind-links = relative/dir\n"  # relative to wherever pip runs: not mounted
    )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_FIND_LINKS", f"{wheels} {tmp_path / 'missing'}")
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    module = load()
    assert module.main() == 0
    printed = capsys.readouterr().out.splitlines()
    ours = [p for p in printed if p.startswith(str(tmp_path))]
    assert ours == [str(wheels), str(index), str(files)]


def test_a_directory_inside_another_one_listed_is_mounted_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "opt" / "wheels" / "more").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PIP_CONFIG_FILE", raising=False)
    monkeypatch.setenv("PIP_FIND_LINKS", f"{tmp_path / 'opt' / 'wheels' / 'more'} {tmp_path / 'opt' / 'wheels'}")
    assert load().main() == 0
    ours = [p for p in capsys.readouterr().out.splitlines() if p.startswith(str(tmp_path))]
    assert ours == [str(tmp_path / "opt" / "wheels")]
