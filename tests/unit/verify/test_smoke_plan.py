"""The smoke plan is data: which commands run, with which environment, decided before running."""

from __future__ import annotations

import json
import os
from pathlib import Path

from srcbuild.paths import Paths
from srcbuild.recipe import Recipe, RecipeCatalog
from srcbuild.verify.smoke import CHECKS_SCRIPT, SmokeCheck, SmokeReport, _parse, plan_smoke


def recipe(name: str) -> Recipe:
    return RecipeCatalog(Paths.resolve(environ=os.environ)).load(name)


def test_plan_for_an_mpi_recipe_as_root(tmp_path: Path) -> None:
    wheels = [tmp_path / "torch-1.7.1+cu92.sm30.mpi-cp38-cp38-linux_x86_64.whl", tmp_path / "torchvision-0.8.2-x.whl"]
    venv = tmp_path / "venv"
    plan = plan_smoke(recipe("kepler-cu92-mpi"), wheels, "python3.8", venv, False, "mpirun", True, as_root=True)
    create, install, checks, mpirun = plan.commands
    assert create.argv == ("python3.8", "-m", "venv", str(venv))
    assert install.argv[-2:] == tuple(str(w) for w in wheels)
    assert checks.argv[:3] == (str(venv / "bin/python"), str(CHECKS_SCRIPT), "checks")
    assert json.loads(checks.argv[3]) == {"archs": ["sm_30"], "cudnn": True, "torchvision": True, "mpi": True}
    assert mpirun.argv == (
        "mpirun",
        "-np",
        "2",
        "--oversubscribe",
        str(venv / "bin/python"),
        str(CHECKS_SCRIPT),
        "allreduce",
    )
    assert mpirun.env.final_values() == {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def test_plan_reuses_an_existing_venv_and_skips_mpi(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    plan = plan_smoke(recipe("kepler-k80-cu118"), [tmp_path / "t.whl"], "python3.10", venv, True)
    assert [c.why for c in plan.commands] == ["install the wheel and its dependencies", "run the checks"]
    assert json.loads(plan.commands[1].argv[3])["archs"] == ["sm_35", "sm_37"]


def test_parse_and_verdict() -> None:
    lines = [
        "Processing ./torch.whl",
        'SMOKE {"name": "import", "status": "pass", "detail": "torch 2.13.0+cpu", "seconds": 0}',
        'SMOKE {"name": "kernel-launch", "status": "skipped", "detail": "no GPU", "seconds": 0}',
    ]
    checks = _parse(lines)
    assert checks == [
        SmokeCheck("import", "pass", "torch 2.13.0+cpu", 0),
        SmokeCheck("kernel-launch", "skipped", "no GPU", 0),
    ]
    report = SmokeReport("r", tuple(checks))
    assert report.ok and not report.gpu
    assert not SmokeReport("r", (*checks, SmokeCheck("mpi-allreduce", "fail", "x"))).ok


def test_a_garbled_report_line_is_a_failed_check_not_a_crash() -> None:
    from srcbuild.verify.smoke import _parse

    good = 'SMOKE {"name": "import", "status": "pass", "detail": "", "seconds": 0.1}'
    checks = _parse([good, good + good[len("SMOKE ") :]])  # two ranks' reports on one line
    assert [(c.name, c.status) for c in checks] == [("import", "pass"), ("report", "fail")]
    assert checks[1].detail.startswith("unreadable report line: SMOKE {")


def test_plan_for_an_installed_environment_creates_and_installs_nothing(tmp_path: Path) -> None:
    env = tmp_path / "env"
    plan = plan_smoke(recipe("kepler-k80-cu118"), [], str(env / "bin/python"), env, True, installed=True)
    (checks,) = plan.commands
    assert checks.argv[:3] == (str(env / "bin/python"), str(CHECKS_SCRIPT), "checks")
    assert json.loads(checks.argv[3])["torchvision"] is None  # decided by whether it imports there
