"""The fixture extension's world: ``tests/worlds/tiny_ext`` published as a git repository with a
submodule, as an sdist, and a stand-in torch to build it against.

``publish_tiny_ext(root)`` writes, in the layout ``World.mirror_rule`` maps GitHub onto:

- ``root/example/tiny-greet.git``: the greet C library (``greet.c``, ``greet.h``), one commit;
- ``root/example/tiny-ext.git``: the extension, annotated tag ``v1.0``, whose ``.gitmodules`` names
  ``https://github.com/example/tiny-greet.git`` at ``third_party/greet`` (pinned to that commit);
- ``root/dist/tiny_ext-1.0.tar.gz``: the same tree as an sdist, made by its own build backend;
- ``root/dist/torch-2.5.1-py3-none-any.whl``: a pure-Python torch 2.5.1 with ``torch.version.cuda
  = None`` (a CPU torch), the one the extension imports while it builds.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.worlds.gitworld import isolated_git_env

SOURCE = Path(__file__).resolve().parent / "tiny_ext"
EXT_URL = "https://github.com/example/tiny-ext.git"
GREET_URL = "https://github.com/example/tiny-greet.git"
TAG = "v1.0"
GREET_C = b'#include "greet.h"\nconst char *greet_text(void) { return "hello from the greet submodule"; }\n'
GREET_H = b"const char *greet_text(void);\n"


@dataclass(frozen=True)
class TinyExtWorld:
    root: Path
    tag_commit: str  # the commit v1.0 points to
    greet_commit: str  # the submodule's pinned commit
    sdist: Path
    torch_wheel: Path

    @property
    def mirror_rule(self) -> str:
        return f"https://github.com/=file://{self.root}/"

    @property
    def requirement(self) -> str:
        return f"git+{EXT_URL}@{TAG}"


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=isolated_git_env(), check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _publish(work: Path, bare: Path) -> None:
    bare.parent.mkdir(parents=True, exist_ok=True)
    _git("clone", "-q", "--bare", str(work), str(bare), cwd=work.parent)


def torch_wheel(directory: Path, version: str = "2.5.1", tag: str = "py3-none-any") -> Path:
    """A pure-Python torch: ``__version__`` and ``torch.version.cuda = None``, with its RECORD;
    ``tag`` is the one its name and WHEEL file claim (an index's torch names its CPython and platform)."""
    dist = f"torch-{version}.dist-info"
    files = {
        "torch/__init__.py": f"from torch import version\n__version__ = {version!r}\n".encode(),
        "torch/version.py": f"__version__ = {version!r}\ncuda = None\n".encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: srcbuild-tests\nRoot-Is-Purelib: true\nTag: {tag}\n".encode(),
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"torch-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return path


def publish_tiny_ext(root: Path) -> TinyExtWorld:
    work = root / "work"
    greet = work / "tiny-greet"
    greet.mkdir(parents=True)
    (greet / "greet.c").write_bytes(GREET_C)
    (greet / "greet.h").write_bytes(GREET_H)
    _git("init", "-q", cwd=greet)
    _git("add", ".", cwd=greet)
    _git("commit", "-q", "-m", "greet", cwd=greet)
    greet_commit = _git("rev-parse", "HEAD", cwd=greet)
    _publish(greet, root / "example" / "tiny-greet.git")

    ext = work / "tiny-ext"
    shutil.copytree(SOURCE, ext, ignore=shutil.ignore_patterns("__pycache__"))
    _git("init", "-q", cwd=ext)
    (ext / ".gitmodules").write_text(f'[submodule "greet"]\n\tpath = third_party/greet\n\turl = {GREET_URL}\n')
    _git("add", ".", cwd=ext)
    _git("update-index", "--add", "--cacheinfo", f"160000,{greet_commit},third_party/greet", cwd=ext)
    _git("commit", "-q", "-m", "tiny-ext 1.0", cwd=ext)
    _git("tag", "-a", TAG, "-m", TAG, cwd=ext)
    tag_commit = _git("rev-parse", f"{TAG}^{{commit}}", cwd=ext)
    _publish(ext, root / "example" / "tiny-ext.git")

    tree = work / "sdist-tree"  # the checkout with its submodule, packed by its own backend
    shutil.copytree(SOURCE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(greet, tree / "third_party" / "greet", ignore=shutil.ignore_patterns(".git"))
    dist = root / "dist"
    dist.mkdir()
    script = "import sys, tiny_backend; print(tiny_backend.build_sdist(sys.argv[1]))"
    name = subprocess.run([sys.executable, "-c", script, str(dist)], cwd=tree, check=True, capture_output=True,
                          text=True).stdout.strip()
    shutil.rmtree(work)
    return TinyExtWorld(root, tag_commit, greet_commit, dist / name, torch_wheel(dist))
