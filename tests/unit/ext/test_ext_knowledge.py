"""Per-package extension knowledge: the shipped rows, the generic path, malformed rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.ext.knowledge import ExtensionDataError, knowledge_for, load_rows, normalize, parse_rows


def test_every_shipped_row_has_a_source_and_a_module() -> None:
    rows = load_rows()
    assert {"torch-scatter", "torch-sparse", "torch-cluster", "torch-spline-conv", "mmcv", "apex", "detectron2",
            "pytorch3d", "torchaudio", "xformers"} <= set(rows)
    for row in rows.values():
        assert row.source and row.module and row.known


def test_spellings_pip_accepts_find_the_same_row() -> None:
    assert normalize("Torch_Scatter") == "torch-scatter"
    scatter = knowledge_for("torch_scatter")
    assert scatter.name == "torch-scatter"
    assert dict(scatter.env(cuda=True)) == {"FORCE_CUDA": "1"}
    assert dict(scatter.env(cuda=False)) == {"FORCE_ONLY_CPU": "1"}


def test_mmcv_and_apex_carry_their_switches() -> None:
    assert dict(knowledge_for("mmcv").env(cuda=True))["MMCV_WITH_OPS"] == "1"
    assert knowledge_for("apex").options(cuda=True) == ("--cpp_ext", "--cuda_ext")


def test_stated_torch_ranges_have_sources() -> None:
    scatter = knowledge_for("torch-scatter")
    assert scatter.torch_range("2.1.2") == ">=1.4.0" and scatter.torch_range("2.0.9") is None
    audio = knowledge_for("torchaudio")
    assert audio.torch_range("2.0.2") == "==2.0.1" and audio.torch_range("2.11.0") == ">=2.11"
    for row in load_rows().values():
        assert bool(row.torch) == bool(row.torch_source), row.name


def test_an_unknown_package_takes_the_generic_path() -> None:
    row = knowledge_for("My.Ext")
    assert not row.known
    assert row.name == "my-ext" and row.module == "my_ext"
    assert dict(row.env(cuda=True)) == {"FORCE_CUDA": "1"}
    assert row.env(cuda=False) == ()
    assert "cpp_extension.py" in row.source


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({"name": "x", "module": "x"}, "source is required"),
        ({"name": "x", "module": "x", "source": "s", "cuda_env": {"A B": "1"}}, "cuda_env must be a table"),
        ({"name": "x", "module": "x", "source": "s", "cuda_env": {"A": 1}}, "cuda_env must be a table"),
        ({"name": "x", "module": "x", "source": "s", "oops": 1}, "unknown key 'oops'"),
        ({"name": "x", "module": "x", "source": "s", "cuda_options": "--a"}, "cuda_options must be an array"),
        ({"name": "x", "module": "x", "source": "s", "torch": {"1.0": ">=2"}}, "torch_source is required"),
        ({"name": "x", "module": "x", "source": "s", "torch": {"1.0": "two"}, "torch_source": "s"},
         "must map a release to a torch specifier"),
        ({"name": "x", "module": "x", "source": "s", "torch": ["1.0"], "torch_source": "s"}, "torch must be a table"),
    ],
)
def test_a_malformed_row_names_the_file_and_row(row: dict[str, object], words: str) -> None:
    with pytest.raises(ExtensionDataError, match=words) as info:
        parse_rows({"extension": [row]}, Path("extensions.toml"))
    assert "extensions.toml: [[extension]] #1" in str(info.value)


def test_a_row_listed_twice_is_refused() -> None:
    row = {"name": "x", "module": "x", "source": "s"}
    with pytest.raises(ExtensionDataError, match="listed twice"):
        parse_rows({"extension": [row, {**row, "name": "X"}]})


def test_a_parallel_edit_is_exact_data_with_its_source() -> None:
    from srcbuild.ext.knowledge import SourceEdit

    row = {"name": "x", "module": "x", "source": "s"}
    edit = {"file": "setup.py", "replace": "use_ninja=False", "by": "use_ninja=True", "source": "x-1.0.tar.gz line 9"}
    (got,) = parse_rows({"extension": [{**row, "parallel": edit}]}).values()
    assert got.parallel == SourceEdit("setup.py", "use_ninja=False", "use_ninja=True", "x-1.0.tar.gz line 9")
    (got,) = parse_rows({"extension": [{**row, "parallel": {**edit, "prepend": "build_ext_at_once.py.in"}}]}).values()
    assert got.parallel is not None and got.parallel.prepend_path is not None and got.parallel.prepend_path.is_file()
    assert got.parallel.describe().startswith("setup.py: use_ninja=False -> use_ninja=True; before it: build_ext_")
    bad_prepends = ({**edit, "prepend": "../extensions.toml"}, {**edit, "prepend": "missing.py.in"})
    for bad in ({**edit, "file": "../setup.py"}, {k: v for k, v in edit.items() if k != "source"}, "use_ninja",
                *bad_prepends, {**edit, "extra": "x"}):
        try:
            parse_rows({"extension": [{**row, "parallel": bad}]})
        except ExtensionDataError:
            continue
        raise AssertionError(f"accepted {bad!r}")
    names = ("torch-scatter", "torch-cluster", "torch-spline-conv", "torch-sparse")
    pyg = {n: knowledge_for(n).parallel for n in names}
    assert {n for n, e in pyg.items() if e is not None} == {"torch-scatter", "torch-cluster", "torch-spline-conv"}


def test_an_nvcc_threads_row_names_a_variable_and_its_source() -> None:
    from srcbuild.ext.knowledge import NvccThreads

    row = {"name": "x", "module": "x", "source": "s"}
    (got,) = parse_rows({"extension": [{**row, "nvcc_threads": {"variable": "NVCC_FLAGS", "source": "x line 7"}}]}
                        ).values()
    assert got.nvcc_threads == NvccThreads("NVCC_FLAGS", "x line 7")
    assert got.to_json()["nvcc_threads"] == {"variable": "NVCC_FLAGS", "source": "x line 7"}
    for bad in ({"variable": "NVCC FLAGS", "source": "s"}, {"variable": "NVCC_FLAGS"}, "NVCC_FLAGS"):
        with pytest.raises(ExtensionDataError, match="nvcc_threads must be a table"):
            parse_rows({"extension": [{**row, "nvcc_threads": bad}]})
    pyg = ("torch-scatter", "torch-cluster", "torch-spline-conv", "torch-sparse")
    assert {knowledge_for(n).nvcc_threads.variable for n in pyg} == {"NVCC_FLAGS"}  # type: ignore[union-attr]
    assert knowledge_for("mmcv").nvcc_threads is None
