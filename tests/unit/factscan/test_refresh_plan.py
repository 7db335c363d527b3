"""knowledge refresh's pure half: what counts as new against the tables, and where rows go."""

from __future__ import annotations

from packaging.version import Version

from srcbuild import tables
from srcbuild.factscan import refresh
from srcbuild.factscan.index import IndexFile


def wheel(project: str, version: str, size: int = 1000) -> IndexFile:
    dist = project.replace("-", "_")
    return IndexFile(
        project=project,
        version=Version(version),
        filename=f"{dist}-{version}-py3-none-manylinux2014_x86_64.whl",
        url=f"file:///nowhere/{dist}-{version}.whl",
        sha256="0" * 64,
        size=size,
        uploaded="2026-11-01",
        platform_tags=("manylinux2014_x86_64",),
        python_tags=("py3",),
    )


def shipped() -> dict[str, dict[str, object]]:
    return {name: tables.read_table(name) for name in ("torch", "cuda", "cudnn", "nccl")}


def test_only_what_is_newer_than_the_tables_is_new() -> None:
    listings = {
        "torch": [wheel("torch", "2.14.1"), wheel("torch", "2.15.0"), wheel("torch", "2.16.0", 900 << 20)],
        "nvidia-cuda-nvcc-cu12": [wheel("nvidia-cuda-nvcc-cu12", "12.9.86")],
        "nvidia-cuda-nvcc": [wheel("nvidia-cuda-nvcc", "13.5.37"), wheel("nvidia-cuda-nvcc", "13.6.1", 50 << 20)],
        "nvidia-cuda-crt": [wheel("nvidia-cuda-crt", "13.6.1", 200 << 10)],
        "nvidia-cudnn-cu12": [wheel("nvidia-cudnn-cu12", "9.28.0.42"), wheel("nvidia-cudnn-cu12", "9.29.0.1")],
        "nvidia-nccl-cu13": [wheel("nvidia-nccl-cu13", "2.32.3"), wheel("nvidia-nccl-cu13", "2.33.1")],
    }
    found = refresh.plan(shipped(), listings, {"75", "100"})
    new = {(n.project, n.name): n for n in found.new}
    assert sorted(new) == [
        ("nvidia-cuda-nvcc", "13.6"),
        ("nvidia-cudnn-cu12", "9.29"),
        ("nvidia-nccl-cu13", "2.33"),
        ("torch", "2.16.0"),
    ]
    nvcc = new["nvidia-cuda-nvcc", "13.6"]
    assert [f.filename.split("-")[0] for f in nvcc.read] == ["nvidia_cuda_nvcc", "nvidia_cuda_crt"]
    assert nvcc.gaps == ("min_driver",) and nvcc.read_bytes == (50 << 20) + (200 << 10)
    assert new["torch", "2.16.0"].read == () and "cuda_min" in new["torch", "2.16.0"].gaps
    assert dict(found.newest)["torch"] == "2.16.0"


def test_a_new_cudnn_row_is_written_only_when_its_binary_was_read() -> None:
    item = refresh.NewRelease("nvidia-cudnn-cu12", "cudnn", "9.29", ("9.29.0.1",), (), ("lowest_cc",), None, 12)
    assert refresh.library_row("cudnn", "9.29", [(item, ())]) is None
    nccl = refresh.library_row("nccl", "2.33", [(item, ())])
    assert nccl is not None and 'gaps = ["lowest_cc.12"]' in nccl


def test_rows_go_after_the_last_row_of_their_table() -> None:
    text = (
        '[[cuda]]\nversion = "1.0"\n\n[[cuda.patch]]\nfrom = "1.0.1"\n\n'
        "# Caveats\n[[gcc_caveat]]\ngcc = 1\n\n[sources]\nx = \"y\"\n"
    )
    out = refresh.insert_rows(text, "cuda", ['[[cuda]]\nversion = "2.0"'])
    assert out == (
        '[[cuda]]\nversion = "1.0"\n\n[[cuda.patch]]\nfrom = "1.0.1"\n\n[[cuda]]\nversion = "2.0"\n\n'
        "# Caveats\n[[gcc_caveat]]\ngcc = 1\n\n[sources]\nx = \"y\"\n"
    )
    assert refresh.insert_rows("# head\n", "nccl", ["[[nccl]]"]) == "# head\n\n[[nccl]]\n"


def test_a_package_pinned_to_one_torch_release_is_paired_with_it() -> None:
    item = refresh.NewRelease("torchvision", "torchvision", "0.30.0", ("0.30.0",), (), ("pairing",))
    said, pairs, left = refresh.metadata_facts(item, "Requires-Python: >=3.11\nRequires-Dist: torch==2.16.0\n")
    assert (said, pairs, left) == (["Requires-Python >=3.11", "Requires-Dist torch==2.16.0"], [
        ("torchvision", "2.16.0", "0.30.0")], [])
    _, pairs, left = refresh.metadata_facts(item, "Requires-Dist: torch>=2.14.0\n")
    assert pairs == [] and left == ["the torch release it pairs with (Requires-Dist torch>=2.14.0: not one release)"]
    torch = refresh.NewRelease("torch", "torch", "2.16.0", ("2.16.0",), (), ("cuda_min",))
    metadata = 'Requires-Dist: nvidia-cudnn-cu13==9.29.0.1; platform_system == "Linux"\nRequires-Dist: sympy\n'
    said, _, left = refresh.metadata_facts(torch, metadata)
    assert said == ["Requires-Dist nvidia-cudnn-cu13==9.29.0.1"] and left == ["cuda_min"]


def test_pairings_go_into_the_row_of_the_torch_line() -> None:
    text = '[[torch]]\nversion = "2.15"\ntorchvision = { "2.15.0" = ["0.29.2"] }\npython_min = "3.11"\n\n[[pip]]\n'
    out = refresh.add_pairing(text, "torchvision", "2.15.1", "0.29.3")
    assert out == text.replace('{ "2.15.0" = ["0.29.2"] }', '{ "2.15.0" = ["0.29.2"], "2.15.1" = ["0.29.3"] }')
    out = refresh.add_pairing(text, "torchaudio", "2.15.0", "2.11.0")
    assert out is not None and 'version = "2.15"\ntorchaudio = { "2.15.0" = ["2.11.0"] }\ntorchvision' in out
    assert refresh.add_pairing(text, "torchvision", "2.16.0", "0.30.0") is None
