"""The PyG family's checked edit on their real sdists: each of torch-scatter, torch-cluster and
torch-spline-conv turns ninja off in exactly the setup.py line extensions.toml names, and the edit
the ext build's step makes turns it on; torch-sparse keeps ninja (no edit); an sdist whose line is
not there is built as it ships, and the build says so; a second run keeps the tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from srcbuild.ext.knowledge import knowledge_for
from srcbuild.ext.plan import sdist_top, unpack_argv
from tests.real.artifacts import (
    TORCH_CLUSTER_163_SDIST,
    TORCH_SCATTER_212_SDIST,
    TORCH_SPARSE_0618_SDIST,
    TORCH_SPLINE_CONV_122_SDIST,
    Artifact,
    fetch,
)

pytestmark = [pytest.mark.real, pytest.mark.integration]


def _edit(sdist: Path, sha: str, dest: Path, project: str) -> str:
    edit = knowledge_for(project).parallel
    assert edit is not None
    done = subprocess.run(unpack_argv(sys.executable, str(sdist), sha, str(dest), edit), capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("artifact", [TORCH_SCATTER_212_SDIST, TORCH_CLUSTER_163_SDIST, TORCH_SPLINE_CONV_122_SDIST])
def test_the_edit_turns_ninja_back_on(tmp_path: Path, artifact: Artifact) -> None:
    sdist = fetch(artifact)
    edit = knowledge_for(artifact.project).parallel
    assert edit is not None
    line = edit.source.split("setup.py line ")[1].split(":")[0]
    top = sdist_top(artifact.filename)
    with tarfile.open(sdist) as tar:
        member = tar.extractfile(f"{top}/setup.py")
        assert member is not None
        shipped = member.read().decode().splitlines()
    assert "use_ninja=False" in shipped[int(line) - 1]  # the line the data names, as the sdist ships it
    out = _edit(sdist, artifact.sha256, tmp_path / "src", artifact.project)
    assert out == (
        "setup.py: use_ninja=False -> use_ninja=True: its files compile MAX_JOBS at once, its extensions side by "
        "side (build_ext_at_once.py.in before it)"
    )
    assert edit.prepend_path is not None
    before = edit.prepend_path.read_text().splitlines()
    edited = (tmp_path / "src" / top / "setup.py").read_text().splitlines()
    assert edited[: len(before)] == before  # srcbuild's lines first, then the package's own
    edited = edited[len(before) :]
    assert "use_ninja=True" in edited[int(line) - 1] and "use_ninja=False" not in "\n".join(edited)
    assert len(edited) == len(shipped)
    assert [i for i, (a, b) in enumerate(zip(shipped, edited)) if a != b] == [int(line) - 1]
    (tmp_path / "src" / top / "build").mkdir()  # a resumed build keeps its objects
    assert _edit(sdist, artifact.sha256, tmp_path / "src", artifact.project).endswith("edited")
    assert (tmp_path / "src" / top / "build").is_dir()


def test_torch_sparse_keeps_ninja_and_a_missing_line_is_built_as_shipped(tmp_path: Path) -> None:
    assert knowledge_for("torch-sparse").parallel is None
    sdist = fetch(TORCH_SPARSE_0618_SDIST)
    with tarfile.open(sdist) as tar:
        member = tar.extractfile(f"{sdist_top(sdist.name)}/setup.py")
        assert member is not None
        assert "use_ninja=False" not in member.read().decode()
    # torch-scatter's edit on an sdist without its line: nothing changes, and the build says so
    copy = tmp_path / "torch_sparse-0.6.18.tar.gz"
    shutil.copy(sdist, copy)
    out = _edit(copy, TORCH_SPARSE_0618_SDIST.sha256, tmp_path / "src", "torch-scatter")
    assert out == "setup.py: use_ninja=False is there 0 times, not once: built as it ships, one file at a time"
