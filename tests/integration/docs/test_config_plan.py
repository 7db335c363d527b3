"""``srcbuild --config FILE plan`` shows each setting the file gave with the file as its origin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srcbuild.cli import main

pytestmark = pytest.mark.integration


def test_plan_names_the_config_file_as_origin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "srcbuild.toml"
    file.write_text('mirrors = ["gitee"]\ncompiler_cache = "none"\nkeep_build = true\nportable = true\n')
    argv = ["--config", str(file), "plan", "torch", "--recipe", "kepler-cu102", "--ignore-preflight"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for key, value in (("mirrors", "gitee"), ("compiler_cache", "off"), ("keep_build", "yes"), ("portable", "yes")):
        line = next(line for line in out.splitlines() if line.strip().startswith(key))
        assert line.split()[:2] == [key, value] and "config file" in line, line  # the table: name, value, origin
    assert main([*argv, "--json"]) == 0
    settings = {s["name"]: s for s in json.loads(capsys.readouterr().out)["settings"]}
    for key, value in (("mirrors", "gitee"), ("compiler_cache", "off"), ("keep_build", "yes"), ("portable", "yes")):
        assert settings[key]["value"].split()[0] == value and settings[key]["source"] == f"config file {file} ({key})"
