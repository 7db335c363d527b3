"""A mirror's package index: ``DIR/pypi/simple/<project>/``, a PEP 503 simple index with hashes.

What pip installs for a build — the build environment's pip requirements (a venv's whole
environment), NVIDIA's component and cuDNN/NCCL wheels the toolchain providers fetch, an
extension's sdist — is fetched with ``pip download`` through the index pip is configured with on
the connected machine (pip checks the index's hashes; the toolchain's wheels with
``--require-hashes`` against srcbuild's data), then put at ``pypi/simple/<project>/<file>``. Each
project's ``index.html`` links its files with ``#sha256=`` fragments, so pip on the other machine
checks every file it takes, and ``pypi/simple/index.html`` lists the projects (PEP 503). Any
static web server serves it as it is; pip reads it from a ``file://`` URL too.

Wheels are chosen for the other machine: the recipe's Python and the platforms its glibc runs
(``--python-version`` and ``--platform``, newest first, from ``mirror create --python/--platform``;
pip then takes wheels alone, ``--only-binary=:all:``, since it cannot build an sdist for another
machine). A set without platforms takes this machine's, as a plain ``pip download`` does.
"""

from __future__ import annotations

import html
import shutil
import sys
import tarfile
import urllib.parse
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from srcbuild import proc
from srcbuild.errors import HostError, NotFoundError
from srcbuild.files import sha256_file, write_atomic
from srcbuild.mirror.layout import PYPI
from srcbuild.mirror.manifest import Entry
from srcbuild.records import record

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SIMPLE = f"{PYPI}/simple"


@record
class PipSet:
    """One ``pip download``: requirements (with their dependencies unless ``hashed``) for a Python."""

    requirements: tuple[str, ...]
    python: str | None = None  # "3.8": wheels for that Python; None: the Python running srcbuild
    hashed: bool = False  # each line carries --hash=sha256:...; no dependencies, wheels only
    why: str = ""  # "the build environment of kepler-cu92", "the toolchain of kepler-cu92"
    exact: bool = False  # an exact pin the user named (torch==2.0.1): pip's configured constraints are lifted
    platforms: tuple[str, ...] = ()  # the other machine's wheel platforms, newest first; (): this machine's

    def describe_target(self) -> str:
        """"Python 3.8 on manylinux_2_17_x86_64", for messages."""
        python = self.python or f"{sys.version_info[0]}.{sys.version_info[1]}"
        return f"Python {python} on {self.platforms[0] if self.platforms else 'this machine'}"


def project_of(filename: str) -> str | None:
    """The normalized project a wheel or sdist belongs to (``PyYAML-6.0.tar.gz`` -> ``pyyaml``)."""
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[0])
        return str(parse_sdist_filename(filename)[0])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None


def download_argv(pip_set: PipSet, requirements_file: Path, dest: Path) -> list[str]:
    """``pip download`` of one set into ``dest`` (pip's own configuration and PIP_* apply)."""
    argv = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input", "-d", str(dest)]
    host = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if pip_set.platforms:  # another machine: its Python and platforms (pip then takes wheels alone)
        argv += ["--python-version", pip_set.python or host, "--only-binary=:all:"]
        for platform in pip_set.platforms:
            argv += ["--platform", platform]
    elif pip_set.python and pip_set.python != host:
        argv += ["--python-version", pip_set.python, "--only-binary=:all:"]
    if pip_set.hashed:
        argv += ["--no-deps", "--require-hashes"]
        if "--only-binary=:all:" not in argv:
            argv.append("--only-binary=:all:")
    return [*argv, "-r", str(requirements_file)]


def place(root: Path, downloaded: Path, origin: str) -> tuple[str, Entry] | None:
    """Move one downloaded file to its project's directory; its manifest row (None: not a package)."""
    project = project_of(downloaded.name)
    if project is None:
        return None
    rel = f"{SIMPLE}/{project}/{downloaded.name}"
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(downloaded), target)
    return rel, Entry(sha256_file(target), target.stat().st_size, origin)


def mirror_pip(
    root: Path,
    pip_set: PipSet,
    scratch: Path,
    environ: Mapping[str, str],
    log_path: Path | None = None,
    echo: IO[str] | None = None,
) -> dict[str, Entry]:
    """Download one set into ``root/pypi/simple``; the manifest rows of the files it put there."""
    if not pip_set.requirements:
        return {}
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    requirements = scratch / "requirements.txt"
    requirements.write_text("".join(r + "\n" for r in pip_set.requirements), encoding="utf-8")
    dest = scratch / "files"
    if echo is not None:
        print(f"  pip download: {pip_set.why or ', '.join(pip_set.requirements)}", file=echo, flush=True)
    argv = download_argv(pip_set, requirements, dest)
    try:
        env = {**environ, "PIP_CONSTRAINT": ""} if pip_set.exact else environ
        result = proc.run(argv, env=env, log_path=log_path)
    except FileNotFoundError:
        raise HostError(f"{argv[0]} is not installed", "reinstall srcbuild") from None
    if not result.ok:
        last = next((line.strip() for line in reversed(result.tail) if line.strip()), "no output")
        where = f"; pip's output is in {log_path}" if log_path else ""
        target = (
            f"; the wheels are chosen for {pip_set.describe_target()} (mirror create's --python and --platform)"
            if pip_set.platforms else ""
        )
        raise NotFoundError(
            f"pip download for {pip_set.why or 'the mirror'} failed (exit {result.returncode}): {last}",
            f"check the requirement and pip's index (python -m pip config list){target}{where}",
        )
    added: dict[str, Entry] = {}
    origin = f"pip download ({pip_set.why})" if pip_set.why else "pip download"
    for path in sorted(dest.iterdir()) if dest.is_dir() else ():
        row = place(root, path, origin)
        if row is not None:
            added[row[0]] = row[1]
    shutil.rmtree(scratch, ignore_errors=True)
    return added


def index_pypi(root: Path, files: Mapping[str, Entry]) -> dict[str, Entry]:
    """Write each project's ``index.html`` (links with ``#sha256=``) and the root page from the
    manifest's rows under ``pypi/simple/``; the rows of the pages it wrote."""
    projects: dict[str, list[tuple[str, str]]] = {}
    for rel, entry in files.items():
        parts = rel.split("/")
        if len(parts) == 4 and rel.startswith(SIMPLE + "/") and parts[3] != "index.html":
            projects.setdefault(parts[2], []).append((parts[3], entry.sha256))
    written: dict[str, Entry] = {}
    for project, rows in sorted(projects.items()):
        links = "".join(
            f'<a href="{urllib.parse.quote(name)}#sha256={digest}">{html.escape(name)}</a><br>\n'
            for name, digest in sorted(rows)
        )
        rel = f"{SIMPLE}/{project}/index.html"
        written[rel] = _page(root, rel, f"Links for {project}", links)
    listing = "".join(f'<a href="{p}/">{p}</a><br>\n' for p in sorted(projects))
    if projects:
        written[f"{SIMPLE}/index.html"] = _page(root, f"{SIMPLE}/index.html", "Simple index", listing)
    return written


def _page(root: Path, rel: str, title: str, body: str) -> Entry:
    text = (
        f'<!DOCTYPE html>\n<html><head><meta name="pypi:repository-version" content="1.0">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n{body}</body></html>\n"
    )
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(root / rel, text)
    return Entry(sha256_file(root / rel), (root / rel).stat().st_size, "simple index")


def build_requirements(sdist: Path) -> tuple[str, ...]:
    """The ``[build-system] requires`` of an sdist's top ``pyproject.toml``, torch left out (the
    extension builds against the recipe's own torch); none when it has no pyproject.toml."""
    text = _top_member(sdist, "pyproject.toml")
    if text is None:
        return ()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return ()
    requires = data.get("build-system", {}).get("requires", [])
    out = []
    for item in requires if isinstance(requires, list) else []:
        try:
            name = canonicalize_name(Requirement(str(item)).name)
        except InvalidRequirement:
            continue
        if name != "torch":
            out.append(str(item))
    return tuple(out)


def _top_member(archive: Path, name: str) -> str | None:
    """The text of ``<top dir>/name`` in a .tar.gz or .zip sdist, or None."""
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zipped:
                for member in zipped.namelist():
                    if member.count("/") == 1 and member.endswith("/" + name):
                        return zipped.read(member).decode("utf-8", "replace")
            return None
        with tarfile.open(archive) as tarred:
            for info in tarred:
                if info.isfile() and info.name.count("/") == 1 and info.name.endswith("/" + name):
                    handle = tarred.extractfile(info)
                    return handle.read().decode("utf-8", "replace") if handle else None
    except (OSError, tarfile.TarError, zipfile.BadZipFile):
        return None
    return None
