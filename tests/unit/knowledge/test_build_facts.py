"""Build facts as data: every row has a source, and a new row is a data-only change."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from srcbuild.capability import ComputeCapability
from srcbuild.knowledge.build_facts import DATA_DIR, FILE, load_build_facts


def test_shipped_facts() -> None:
    facts = load_build_facts()
    assert facts.minor_compat_floor[11] == "450.80.02"
    assert "minor-version-compatibility" in facts.minor_compat_source
    kepler = facts.ptx_isa_limit(ComputeCapability.parse("3.5"))
    assert kepler is not None and (kepler.max_isa, kepler.driver_branch, kepler.max_isa_cuda) == ((7, 4), 470, "11.4")
    assert facts.ptx_isa_limit(ComputeCapability.parse("5.0")) is None
    assert facts.unlisted_arches == (ComputeCapability.parse("3.0"),)
    assert facts.reads_variable("CUDNN_LIBRARY", Version("1.7.1"))
    assert not facts.reads_variable("CUDNN_LIBRARY", Version("1.1.0"))
    assert facts.reads_variable("NO_CUDA", Version("1.0.1")) and not facts.reads_variable("NO_CUDA", Version("1.2"))
    assert facts.reads_variable("CUDA_HOST_COMPILER", Version("1.13.1"))
    assert not facts.reads_variable("CUDA_HOST_COMPILER", Version("2.5.1"))
    assert facts.reads_variable("USE_CUDA", Version("2.5.1"))  # no era row: every release


def test_a_new_row_is_a_data_change(tmp_path: Path) -> None:
    text = (DATA_DIR / FILE).read_text()
    text += '\n[[unlisted_arch]]\narch = "3.2"\nsource = "a test row"\n'
    text += '\n[[variable_era]]\nnames = ["USE_NEW_THING"]\nsince = "2.6"\nsource = "a test row"\n'
    (tmp_path / FILE).write_text(text)
    facts = load_build_facts(tmp_path)
    assert ComputeCapability.parse("3.2") in facts.unlisted_arches
    assert facts.reads_variable("USE_NEW_THING", Version("2.6.0"))
    assert not facts.reads_variable("USE_NEW_THING", Version("2.5.1"))
