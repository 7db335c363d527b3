"""install passes pip only the requirements that apply: no extra's, no direct reference."""

from __future__ import annotations

from srcbuild.cache.install import applicable

# torch_geometric-style Requires-Dist lines, with an extra that points at git
REQUIRES = [
    "numpy",
    "scipy>=1.7; python_version >= \"3.8\"",
    "torch-scatter ; extra == \"full\"",
    "pytest ; extra == 'test' and python_version >= '3.8'",
    "pyg-lib @ git+https://github.com/pyg-team/pyg-lib.git ; extra == \"dev\"",
    "torch-geometric-benchmark @ https://example.org/b-1.0.tar.gz",
    "tqdm",
]


def test_extras_and_direct_references_are_left_out() -> None:
    assert applicable(REQUIRES) == ["numpy", "scipy>=1.7; python_version >= \"3.8\"", "tqdm"]
    assert applicable([]) == []
