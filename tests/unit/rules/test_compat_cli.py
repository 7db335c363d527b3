"""`srcbuild recipes check` runs the rules; `srcbuild compat` shows one GPU's window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srcbuild.cli import main

COMBOS = Path(__file__).resolve().parents[2] / "fixtures" / "combos"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_recipes_check_passes_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "recipes", "check")
    assert code == 0
    count = len(list((Path(__file__).resolve().parents[3] / "recipes").glob("*.toml")))
    assert out.splitlines()[-1] == f"{count} of {count} recipes valid"
    assert "ok     cpu" in out.splitlines()
    assert "ok     kepler-cu92" in out.splitlines()


def test_recipes_check_rejects_an_impossible_recipe_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "recipes", "check", str(COMBOS / "torch2-on-sm30.toml"))
    assert code == 3
    lines = out.splitlines()
    assert lines[0] == "error  torch2-on-sm30: 7 compatibility errors"
    assert "       error: CUDA 11.3 cannot target compute capability 3.0 (nvcc 11.0 removed" in lines
    # wrapped to 80 columns when not a terminal; a path or URL longer than that stands whole on its line
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in lines)
    assert "         fix: Use CUDA ≤ 10.2, e.g. the recipe kepler-cu102." in lines
    assert "         fix: Use torchvision v0.15.2." in lines
    assert lines[-1] == "0 of 1 recipes valid"


def test_recipes_check_json_fills_findings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "recipes", "check", "--json", str(COMBOS / "cuda1140-gcc11.toml"), "kepler-cu102")
    assert code == 3
    bad, good = json.loads(out)
    assert set(bad) == {"recipe", "ok", "error", "findings"}
    assert (bad["ok"], bad["error"]) == (False, "cuda1140-gcc11: 1 compatibility error")
    errors = [f for f in bad["findings"] if f["severity"] == "error"]
    assert errors == [
        {
            "rule": "gcc-cuda",
            "severity": "error",
            "message": "CUDA 11.4.0 accepts host gcc ≤ 10, not gcc 11 (its crt/host_config.h rejects newer gcc).",
            "source": errors[0]["source"],
            "fix": "Use gcc 10, or CUDA 11.4.1 or later for gcc 11.",
            "field": "toolchain.gcc",
        }
    ]
    assert "conflicts('%gcc@11:', when='%cuda@:11.4.0')" in errors[0]["source"]
    assert good["ok"] is True and good["error"] is None
    assert {f["rule"] for f in good["findings"]} >= {"breakage-torchvision-sm30-supported-arches"}


def test_compat_gpu_gt_750m(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compat", "--gpu", "GT 750M")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "GeForce GT 750M (GK107): compute capability 3.0 (Kepler) [PCI 10de:0fe4"
    assert lines[1] == "  10de:0fe9]"  # wrapped to 80 columns, continued two columns in
    del lines[1]
    assert "CUDA range: 5.0 to 10.2 (CUDA before 8.0 is not in srcbuild's tables; source:" in lines
    assert "Newest torch: 1.13.1 with torchvision 0.14.1" in lines
    assert lines[1] == "Newest torch: 1.13.1 in theory; 1.10.2 reported to work"
    assert lines[2] == "Knowledge last checked: 2026-11-28 (newest torch it knows: 2.15.0)"
    assert "Official wheels with sm_30 SASS: torch 1.3.0 cu101" in lines
    assert "Last driver: R470 (runs CUDA ≤ 11.4 natively); last CUDA toolkit: 10.2" in lines
    assert "10.2  ≤ 8       440.33      1.0–1.13     7.6–8.4" in lines  # a table to a pipe: plain lines
    assert "kepler-cu102          yes   1.10.2  10.2  -" in lines
    assert any(line.startswith("maxwell-cu126         no    2.15.0  12.6  It builds") for line in lines)


def test_compat_pci_id_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compat", "--pci-id", "10de:0fe9", "--json")
    assert code == 0
    data = json.loads(out)
    assert (data["cc"], data["generation"], data["gpu"], data["pci_ids"]) == (
        "3.0",
        "Kepler",
        "GeForce GT 750M Mac Edition (GK107)",
        ["10de:0fe9"],
    )
    assert [c["cuda"] for c in data["cuda"]] == ["8.0", "9.0", "9.1", "9.2", "10.0", "10.1", "10.2"]
    assert data["cuda"][-1]["gcc"] == "≤ 8"
    assert (data["newest_torch"], data["newest_torchvision"]) == ("1.13.1", "0.14.1")
    assert (data["last_driver_branch"], data["last_cuda"]) == (470, "10.2")
    fits = {r["name"]: r["fits"] for r in data["recipes"]}
    assert fits["kepler-cu102"] and fits["kepler-cu92"] and not fits["kepler-k80-cu118"]


def test_compat_arch_for_k80_and_pascal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compat", "--arch", "3.7", "--json")
    data = json.loads(out)
    assert code == 0 and data["cuda"][-1]["cuda"] == "11.8" and data["newest_torch"] == "2.8.0"
    assert data["official_wheel"] == "torch 2.7.1 cu118"  # RELEASE.md: CUDA 11.8 stable for 2.7; moi90: sm_37
    assert data["newest_torch_reported"] == "2.7.1"
    code, out, _ = run(capsys, "compat", "--arch", "6.1", "--json")
    data = json.loads(out)
    assert data["cuda"][-1]["cuda"] == "12.9" and data["last_driver_branch"] == 580
    assert {r["name"] for r in data["recipes"] if r["fits"]} == {
        "pascal-cu126",
        "pascal-cu126-mpi",
        "pascal-mx150-cu113",
    }


def test_compat_ambiguous_name_answers_for_each_gpu_and_asks_for_lspci(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "compat", "--gpu", "GT 730")
    assert (code, err) == (0, "")  # an answer, as `recommend` gives for the same name
    flat = " ".join(out.split())
    assert '"GT 730" names GPUs of different compute capabilities (2.1, 3.0, 3.5)' in flat
    assert "10de:1287" in out and "10de:0fc9" in out
    for chip, cc in (("GF108", "2.1 (Fermi)"), ("GK107", "3.0 (Kepler)"), ("GK208B", "3.5 (Kepler)")):
        assert f"if it is GeForce GT 730 ({chip})" in out
        assert f"GeForce GT 730 ({chip}): compute capability {cc}" in out
    assert flat.endswith(
        "To tell which: `lspci -nn | grep -i nvidia` shows which one you have; then "
        "`srcbuild compat --pci-id 10de:0f02` (GF108) or `srcbuild compat --pci-id 10de:0fc9` (GK107) or "
        "`srcbuild compat --pci-id 10de:1287` (GK208B)"
    )
    code, out, _ = run(capsys, "compat", "--gpu", "GT 730", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ambiguous"] is True
    assert sorted(c["cc"] for c in data["candidates"]) == ["2.1", "3.0", "3.5"]
    assert [a["cc"] for a in data["answers"]] == ["2.1", "3.0", "3.5"]
    assert data["hint"].startswith("`lspci -nn | grep -i nvidia` shows which one you have")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compat"], "error: give exactly one of --arch, --gpu and --pci-id"),
        (["compat", "--arch", "3.3"], "error: --arch: '3.3' is not a compute capability any NVIDIA GPU has"),
        (["compat", "--pci-id", "8086:0fe9"], "error: --pci-id 8086:0fe9: vendor 8086 is not NVIDIA (10de)"),
        (["compat", "--pci-id", "10de:0001"], "error: --pci-id 10de:0001: srcbuild does not know NVIDIA device 0001"),
        (["compat", "--gpu", "GT 7500M"], "error: --gpu 'GT 7500M': no GPU of that name is known"),
    ],
)
def test_compat_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.splitlines()[0].startswith(message)


def test_a_mistyped_gpu_name_suggests_its_family_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "recommend", "--gpu", "GTX 1800")
    assert code == 2
    assert err.splitlines()[1] == "hint: did you mean 'GeForce GTX 1080', 'GeForce GTX 1070', 'GeForce GTX 1050'?"


def test_mpi_for_a_gpu_no_recipe_builds_says_how_to_make_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "recommend", "--gpu", "RTX 3090", "--mpi")
    assert code == 0
    text = " ".join(out.split())
    assert "no catalog recipe builds torch with MPI for it make one: srcbuild recipes new my-mpi --extends " in text
    assert "without MPI, no build is needed: pip install torch==" in text
    assert "does not fit (" not in text and "other recipes do not fit it (srcbuild compat --arch 8.6 says why)" in text
    assert len(out.splitlines()) < 20


@pytest.mark.parametrize(
    ("recipe", "cc", "cuda", "absent"),
    [
        ("torch28-cu128-sm103", "10.3", "12.8", "sm_103"),
        ("torch28-cu128-sm110", "11.0", "12.8", "sm_110"),
        ("torch210-cu130-sm101", "10.1", "13.0", "sm_101"),
    ],
)
def test_a_capability_inside_the_span_but_outside_ptxas_set_is_refused(
    capsys: pytest.CaptureFixture[str], recipe: str, cc: str, cuda: str, absent: str
) -> None:
    """CUDA 12.8 targets 10.0 and 12.0 but not 10.3 or 11.0; CUDA 13.0 renamed 10.1 to 11.0: the set
    read from the nvcc wheel's ptxas is the evidence, not a min..max span."""
    code, out, _ = run(capsys, "recipes", "check", "--json", str(COMBOS / f"{recipe}.toml"))
    assert code == 3
    (report,) = json.loads(out)
    (finding,) = [f for f in report["findings"] if f["rule"] == "cuda-arch"]
    assert finding["message"].startswith(f"CUDA {cuda} cannot target compute capability {cc} (")
    evidence = finding["source"]
    accepted = evidence.split(": binary:")[0].split()
    assert evidence.startswith(f"CUDA {cuda}'s ptxas accepts sm_") and absent not in accepted
    assert "binary: nvidia_cuda_nvcc" in evidence and "sha256:" in evidence


def test_a_kepler_cuda_range_starts_before_the_tables_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    """3.0 cards: CUDA 5.0; K80 (3.7): CUDA 6.5, from Spack's cuda.py, though the tables start at 8.0."""
    for cc, first in (("3.0", "5.0"), ("3.7", "6.5")):
        code, out, _ = run(capsys, "compat", "--arch", cc, "--json")
        data = json.loads(out)
        assert code == 0 and data["cuda_first"] == first and data["cuda"][0]["cuda"] == "8.0"
        assert f"depends_on('cuda@{first}:" in data["cuda_first_source"]
    code, out, _ = run(capsys, "compat", "--arch", "6.1", "--json")
    assert (json.loads(out)["cuda_first"], json.loads(out)["cuda_first_source"]) == ("8.0", None)
