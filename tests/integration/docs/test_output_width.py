"""Every command that prints a table or columns fits 80 columns, and has ``--json`` that parses.

Each runs here as a user would run it in an 80-column terminal or a log file (``COLUMNS=80``; stdout
is not a terminal): the host is probed for real (``doctor``, ``plan``), the catalog and the fixture
machines are the inputs, the cache holds three entries and the wheel is a synthetic one whose
kernels ``verify`` reads. ``smoke`` needs a real install of a torch wheel, so its table is checked
through its renderer with the longest details its checks write.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.cli.verify import render_smoke
from srcbuild.console import make_console, shell_words
from srcbuild.verify.smoke import SmokeCheck, SmokeReport
from tests.unit.cache.synthetic import make_manifest, make_wheel
from tests.worlds.wheels import fatbin_container, write_elf, write_wheel

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
WIDTH = 80

COMMANDS = [
    ["recipes", "list"],
    ["recipes", "show", "kepler-cu92"],
    ["recipes", "check"],
    ["recipes", "check", str(FIXTURES / "combos" / "torch2-on-sm30.toml")],
    ["compat", "--arch", "3.0"],
    ["compat", "--gpu", "GT 750M"],
    ["compat", "--gpu", "GTX 860M"],
    ["compat", "--pci-id", "10de:0fe9"],
    ["doctor"],
    ["recommend"],
    ["recommend", "--gpu", "GTX 860M"],
    ["recommend", "--lspci", str(FIXTURES / "machines" / "gt750m-laptop" / "lspci.txt")],
    ["recommend", "--paste", str(FIXTURES / "paste" / "smi-r470-k80.txt"), "--mpi"],
    ["plan", "torch", "--recipe", "kepler-cu92", "--ignore-preflight"],
    ["plan", "torchvision", "--recipe", "kepler-k80-cu118-mpi", "--ignore-preflight", "--mirror", "gitee"],
    ["env", "show", "--recipe", "kepler-cu92"],
    ["toolchain", "ls"],  # none provisioned: tests/unit/toolchain checks the table of two
    ["work", "ls"],
    ["cache", "ls"],
    ["cache", "show", "{entry}"],
    ["cache", "trust", "ls"],
    ["verify", "{wheel}", "--recipe", "kepler-cu92", "--no-cross-check"],
]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    cache = WheelCache(Path(os.environ["SRCBUILD_CACHE_DIR"]))
    for i, (sass, ptx) in enumerate((((30,), (30,)), ((35, 37), ()), ((50,), ()))):
        wheel = make_wheel(tmp_path / f"d{i}", version="1.7.1+cu92.sm30", payload=b"x" * (1000 * (i + 1)))
        cache.store(wheel, make_manifest(wheel, sass=sass, ptx=ptx, commit=str(i) * 40, created=1000.0 + i))
    entry = next(iter(cache.entries())).key
    lib = tmp_path / "libtorch_cuda.so"
    write_elf(lib, fatbin_container([("sass", 30), ("ptx", 30)]), needed=["libcudart.so.9.2"])
    wheel = write_wheel(
        tmp_path,
        "torch",
        "1.7.1+cu92.sm30",
        "cp38-cp38-linux_x86_64",
        {"torch/lib/libtorch_cuda.so": lib, "torch/version.py": b"cuda = '9.2'\n"},
    )
    return {"wheel": str(wheel), "entry": entry}


def _too_wide(text: str) -> list[str]:
    """Lines over 80 columns, but for one word that must not be split (a URL, a path, a quoted
    shell argument), which stands alone on its line (before a `` \\`` when a command goes on)."""
    return [
        line
        for line in text.splitlines()
        if len(line) > WIDTH and len(shell_words(line.strip().removesuffix(" \\"))) > 1
    ]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_fits_80_columns_and_has_json(
    argv: list[str], world: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [arg.format(**world) for arg in argv]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 3), err  # 3: `recipes check` of a recipe the rules reject still prints its report
    assert out.strip()
    assert _too_wide(out) == [] and _too_wide(err) == []
    assert main([*argv, "--json"]) == code
    out, _ = capsys.readouterr()
    json.loads(out)


def test_the_smoke_table_fits_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    device = "NVIDIA GeForce GTX 1080 (6.1); arch list sm_35 sm_37 sm_50 sm_60 compute_61"
    error = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    checks = (
        SmokeCheck("cuda-available", "pass", device),
        SmokeCheck("conv2d", "fail", error),
        SmokeCheck("mpi-allreduce", "pass", "2 ranks, all_reduce(sum) = 3 (expected 3)"),
    )
    stream = io.StringIO()
    render_smoke(SmokeReport("kepler-k80-cu118-mpi", checks), make_console(file=stream))
    text = stream.getvalue()
    assert _too_wide(text) == []
    assert "no kernel image is available" in " ".join(text.split())
