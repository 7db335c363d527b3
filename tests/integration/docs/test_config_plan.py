"""``srcbuild --config FILE plan`` shows each setting the file gave with the file as its origin."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.cli import main

pytestmark = pytest.mark.integration


def test_plan_names_the_config_file_as_origin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "srcbuild.toml"
    file.write_text('mirrors = ["gitee"]\ncompiler_cache = "none"\nkeep_build = true\nportable = true\n')
    assert main(["--config", str(file), "plan", "torch", "--recipe", "kepler-cu102", "--ignore-preflight"]) == 0
    out = capsys.readouterr().out
    for key, value in (("mirrors", "gitee"), ("compiler_cache", "off"), ("keep_build", "yes"), ("portable", "yes")):
        line = next(line for line in out.splitlines() if line.strip().startswith(key))
        assert value in line and f"[config file {file} (" in line, line
