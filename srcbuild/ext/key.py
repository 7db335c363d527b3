"""The cache key of an extension wheel: a contract, like ``srcbuild.cache.key``'s for torch.

The request fingerprint is the sha256 (hex) of the canonical JSON (``cache.key.canonical_json``)
of ``ExtKeyInputs.to_json()``::

    {"schema": 1,                                  # EXT_SCHEMA; bump it on any change below
     "kind": "extension",                          # no torch/torchvision key has it
     "package": "torch-scatter",                   # the normalized project name (the wheel's)
     "source": {"sdist": "torch_scatter-2.1.2.tar.gz", "sha256": ..}
               or {"git": URL, "ref": <40-hex commit or tag>},  # what was compiled
     "against": "sha256:<hex>" or "record-sha256:<hex>",   # the torch wheel's identity
     "torch": "2.0.1+cu117", "torch_cuda": "11.7" or null,
     "build_env": {"FORCE_CUDA": "1", ...},        # filtered as cache.key.filter_build_env does
     "options": ["--cpp_ext", ...],                # setup.py options
     "python_abi": "cp311", "gcc": "11", "cuda": "11.8" or null,
     "platform": "linux_x86_64"}

As for torch, the compute capability list is left out (the store checks the kernels measured
in the wheel), and so is everything that only changes speed (MAX_JOBS, compiler launchers, and
nvcc's ``--threads N`` in the variable the package reads extra nvcc flags from, which
``srcbuild.ext.resolve`` sets by what the machine's memory allows: the same wheel keys the same
on every machine of a lab).
The entry key is ``cache.key.entry_key(fp, ResolvedFacts)`` with the measured gcc and nvcc
versions, the archs built and, for a git source, the commit checked out. An sdist is named by its
sha256 and a git commit by itself; a git tag is checked against the commit it named when first
seen on this machine before anything is built (``CheckExtCommit``, exit 7 otherwise), and the
entry key names the commit measured.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from srcbuild.cache.key import canonical_json, filter_build_env
from srcbuild.records import record

EXT_SCHEMA = 1
KIND = "extension"
# nvcc's --threads N (or --threads=N): how many archs of a file compile at once, never what they compile
NVCC_THREADS_FLAG = re.compile(r"(?<!\S)--threads(?:=|\s+)\d+(?!\S)")


def without_nvcc_threads(build_env: Mapping[str, str], variable: str | None) -> dict[str, str]:
    """``build_env`` with ``--threads N`` taken out of ``variable`` (the package's extra nvcc flags),
    and the variable left out when nothing else is in it."""
    env = dict(build_env)
    if variable is None or variable not in env:
        return env
    rest = " ".join(NVCC_THREADS_FLAG.sub(" ", env[variable]).split())
    if rest:
        env[variable] = rest
    else:
        del env[variable]
    return env


@record
class ExtKeyInputs:
    """Everything an extension's request fingerprint hashes, as plain data."""

    name: str
    source: tuple[tuple[str, str], ...]  # sorted items of the source's identity
    against: str
    torch: str
    torch_cuda: str | None
    build_env: tuple[tuple[str, str], ...]
    options: tuple[str, ...]
    python_abi: str
    gcc: str
    cuda: str | None
    platform: str
    schema: int = EXT_SCHEMA

    @classmethod
    def create(
        cls,
        name: str,
        source: Mapping[str, str],
        against: str,
        torch: str,
        torch_cuda: str | None,
        build_env: Mapping[str, str],
        options: tuple[str, ...],
        python_abi: str,
        gcc: str,
        cuda: str | None,
        platform: str,
        nvcc_flags_variable: str | None = None,
    ) -> ExtKeyInputs:
        """``nvcc_flags_variable``: the variable the package reads extra nvcc flags from, whose
        ``--threads N`` the key leaves out (``without_nvcc_threads``)."""
        return cls(
            name=name,
            source=tuple(sorted(source.items())),
            against=against,
            torch=torch,
            torch_cuda=torch_cuda,
            build_env=tuple(sorted(filter_build_env(without_nvcc_threads(build_env, nvcc_flags_variable)).items())),
            options=tuple(options),
            python_abi=python_abi,
            gcc=gcc,
            cuda=cuda,
            platform=platform,
        )

    @property
    def package(self) -> str:
        return self.name

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "kind": KIND,
            "package": self.package,
            "source": dict(self.source),
            "against": self.against,
            "torch": self.torch,
            "torch_cuda": self.torch_cuda,
            "build_env": dict(self.build_env),
            "options": list(self.options),
            "python_abi": self.python_abi,
            "gcc": self.gcc,
            "cuda": self.cuda,
            "platform": self.platform,
        }


def ext_fingerprint(inputs: ExtKeyInputs) -> str:
    """sha256 hex of the canonical JSON of ``inputs.to_json()``."""
    return hashlib.sha256(canonical_json(inputs.to_json())).hexdigest()
