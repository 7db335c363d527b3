"""A package-index file a recipe's toolchain would fetch: what a mirror of the index must hold.

``srcbuild.mirror.gather`` lists them from the data alone (no network): the component wheels of
the Debian route for a CUDA (``debian.toml``) and the ``pypi`` provider's cuDNN and NCCL wheels
(``pypi.toml``), each with its requirement, sha256 and size. ``pip download --require-hashes`` of
those requirements fetches exactly these files.
"""

from __future__ import annotations

from srcbuild.records import record


@record
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
