"""The package-index files a recipe's toolchain would fetch: what a mirror of the index must hold.

``index_files(recipe, facts)`` lists, from the data alone (no network), each wheel the toolchain
providers fetch from the package index for the recipe's pins: the component wheels of the Debian
route for its CUDA (``debian.toml``) and the ``pypi`` provider's cuDNN (and, with ``nccl``, NCCL)
wheel (``pypi.toml``), each with its requirement, sha256 and size. ``pip download
--require-hashes`` of those requirements fetches exactly these files.
"""

from __future__ import annotations

from dataclasses import dataclass

from srcbuild.recipe.model import Recipe
from srcbuild.toolchain.facts import ToolchainFacts


@dataclass(frozen=True)
class IndexFile:
    tool: str  # "cuda", "cudnn", "nccl"
    requirement: str  # "nvidia-cublas-cu11==11.11.3.6"
    sha256: str
    size: int | None
    filename: str | None = None  # when the data names it

    @property
    def hashed_requirement(self) -> str:
        """One line of a ``--require-hashes`` requirements file."""
        return f"{self.requirement} --hash=sha256:{self.sha256}"

    def to_json(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "requirement": self.requirement,
            "sha256": self.sha256,
            "size": self.size,
            "filename": self.filename,
        }


def index_files(recipe: Recipe, facts: ToolchainFacts, nccl: str | None = None) -> tuple[IndexFile, ...]:
    """The index wheels for ``recipe``'s CUDA (Debian route) and cuDNN, and NCCL ``nccl`` if given."""
    cuda = recipe.toolchain.cuda
    if cuda is None:
        return ()
    out: list[IndexFile] = []
    route = facts.debian_for(cuda)
    if route is not None:
        out.extend(IndexFile("cuda", w.requirement, w.sha256, w.size) for w in route.wheels)
    pins = [("cudnn", recipe.toolchain.cudnn), ("nccl", nccl)]
    for tool, pin in pins:
        wheel = facts.index_wheel_for(tool, pin, cuda) if pin else None
        if wheel is not None:
            out.append(IndexFile(tool, wheel.requirement, wheel.sha256, wheel.size, wheel.filename))
    return tuple(out)
