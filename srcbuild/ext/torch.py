"""The torch an extension is built against, identified from its own files.

``TorchIdentity`` holds what decides an extension's binary and what the preflight checks: the
version (``2.0.1+cu117``), ``torch.version.cuda`` (from ``torch/version.py``, which torch's build
writes: pytorch/pytorch: tools/generate_torch_version.py; None for a CPU-only torch), the archs its
libraries hold SASS and PTX for (read from the fat binaries with srcbuild's reader, never from a
table) and an identity for the cache key: the wheel's sha256, or for a torch installed in an
environment the sha256 of its ``RECORD`` (which lists the sha256 of every file pip installed).

Reading a wheel's libraries takes a while for a CUDA torch (hundreds of MB), so the identity is
remembered by the wheel's sha256 in ``DIR/torch-identity/<sha256>.json`` (``remember``: a build
writes it, ``srcbuild plan`` only reads it).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from srcbuild import proc
from srcbuild.errors import EnvironmentError_, UsageError
from srcbuild.files import sha256_file, write_atomic
from srcbuild.records import record
from srcbuild.verify.fatbin import count_entries
from srcbuild.verify.kernels import Kernels, sm_list

IDENTITY_SCHEMA = 1
_SO_RE = re.compile(r"\.so(\.\d+)*$")

# Run by the environment's python: where torch is, what it says it is, and its RECORD.
PROBE_SCRIPT = r"""import json, os, sys
try:
    import torch
except Exception as exc:
    print(json.dumps({"error": repr(exc)})); sys.exit(0)
from importlib import metadata
dist = metadata.distribution("torch")
record = dist.read_text("RECORD") or ""
print(json.dumps({"version": torch.__version__, "cuda": torch.version.cuda,
                  "dir": os.path.dirname(torch.__file__), "record": record}))
"""


@record
class TorchIdentity:
    """One torch: its version, CUDA, kernels and the identity the cache key hashes."""

    version: str  # "2.0.1+cu117"
    cuda: str | None  # torch.version.cuda: "11.7", None for a CPU-only torch
    kernels: Kernels
    identity: str  # "sha256:<hex>" of the wheel, or "record-sha256:<hex>" of an installed torch
    origin: str  # "wheel FILE", "environment PREFIX", "cache entry KEY", "index torch==V"
    wheel: Path | None = None  # the wheel file, when there is one to install

    @property
    def public_version(self) -> str:
        return self.version.split("+", 1)[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": IDENTITY_SCHEMA,
            "version": self.version,
            "cuda": self.cuda,
            "kernels": self.kernels.to_json(),
            "identity": self.identity,
            "origin": self.origin,
            "wheel": str(self.wheel) if self.wheel else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TorchIdentity:
        from srcbuild.capability import ComputeCapability

        def sms(values: list[str]) -> frozenset[int]:
            return frozenset(ComputeCapability.parse(v).sm for v in values)

        kernels = Kernels(sms(data["kernels"]["sass"]), sms(data["kernels"]["ptx"]))
        wheel = Path(data["wheel"]) if data.get("wheel") else None
        return cls(data["version"], data["cuda"], kernels, data["identity"], data["origin"], wheel)

    def describe(self) -> str:
        cuda = f"CUDA {self.cuda}" if self.cuda else "CPU-only"
        archs = ", ".join(sm_list(self.kernels.sass)) or "none"
        return f"torch {self.version} ({cuda}; SASS for {archs}) from {self.origin}"


def from_wheel(wheel: Path, memo_dir: Path | None = None, sha256: str | None = None) -> TorchIdentity:
    """Read a torch wheel (its version.py and every library's fat binaries), or what ``remember``
    kept of the same bytes in ``memo_dir``; ``sha256``: the wheel's, when the caller has just checked it."""
    from srcbuild.verify.wheel import measure_wheel

    if not wheel.is_file():
        raise UsageError(f"{wheel}: no such torch wheel", "pass the path of a torch-*.whl file")
    digest = sha256 or sha256_file(wheel)
    memo = memo_dir / f"{digest}.json" if memo_dir is not None else None
    if memo is not None and memo.is_file():
        try:
            data = json.loads(memo.read_text(encoding="utf-8"))
            if data.get("schema") == IDENTITY_SCHEMA:
                return TorchIdentity.from_json({**data, "wheel": str(wheel), "origin": f"wheel {wheel}"})
        except (ValueError, KeyError):
            pass
    report = measure_wheel(wheel)
    if report.distribution.replace("-", "_").lower() != "torch":
        raise UsageError(f"{wheel.name}: a wheel of {report.distribution}, not torch", "pass a torch-*.whl file")
    cuda = report.cuda_version_py or None
    return TorchIdentity(report.version, cuda, report.kernels, f"sha256:{digest}", f"wheel {wheel}", wheel)


def remember(identity: TorchIdentity, memo_dir: Path) -> None:
    """Keep what was read of a torch wheel for the next ``from_wheel`` of the same bytes."""
    digest = identity.identity.partition("sha256:")[2]
    memo = memo_dir / f"{digest}.json"
    if not identity.identity.startswith("sha256:") or memo.is_file():
        return
    memo.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(memo, json.dumps(identity.to_json(), sort_keys=True))


def library_kernels(torch_dir: Path) -> Kernels:
    """SASS and PTX of every shared library under an installed torch's ``lib`` directory."""
    merged = Kernels()
    lib = torch_dir / "lib"
    for path in sorted(lib.iterdir()) if lib.is_dir() else ():
        if path.is_file() and _SO_RE.search(path.name):
            merged = merged | Kernels.from_entries(count_entries(path))
    return merged


def from_environment(prefix: Path, environ: dict[str, str] | None = None) -> TorchIdentity:
    """The torch installed in the environment at ``prefix`` (its python imports it)."""
    python = prefix / "bin" / "python"
    if not python.is_file():
        raise UsageError(
            f"{prefix}: not an environment (no bin/python)", "pass --env the prefix of a venv or conda env"
        )
    out = proc.probe([str(python), "-c", PROBE_SCRIPT], env=environ, timeout=300)
    data: dict[str, Any] = {}
    if out:
        try:
            data = json.loads(out.strip().splitlines()[-1])
        except ValueError:
            data = {}
    if not data or "error" in data:
        why = data.get("error", "it printed nothing readable") if data else "python did not run"
        raise EnvironmentError_(
            f"{prefix}: torch cannot be imported there ({why})",
            f"install torch into it first ({python} -m pip install torch==VERSION), or pass --torch-wheel FILE",
        )
    record = hashlib.sha256(str(data["record"]).encode("utf-8")).hexdigest()
    return TorchIdentity(
        version=str(data["version"]),
        cuda=data.get("cuda") or None,
        kernels=library_kernels(Path(data["dir"])),
        identity=f"record-sha256:{record}",
        origin=f"environment {prefix}",
    )
