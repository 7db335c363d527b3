"""``--torch VERSION``: which torch wheel of the index an extension builds against, and fetching it.

Deciding is reading the index's simple pages (``index_torch``) and the listing of pip's
``find-links`` locations: the torch wheels of that version for this platform, the Python to build
with among them (``ext.host.pick_python``) and the one file pip would take for that Python (its
name, URL and the sha256 the page states). That is what ``srcbuild plan ext`` may read: page
listings of a few kilobytes, the same pages the sdist lookup reads; it downloads no file and
writes nothing. The plan's ``fetch-torch`` step (``ext.actions.FetchTorchWheel``) says which file
comes from where into where.

Doing is ``fetch_torch``, the step's handler: ``pip download`` of that URL (pip's own index
configuration, credentials and proxies; a configured constraints file is lifted for this one
download), the sha256 checked against the page's; a file already there with that sha256 is kept.
The wheel's CUDA version, kernels and identity are read from it only then (``ext.torch.from_wheel``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import urllib.parse
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from packaging import tags
from packaging.utils import parse_wheel_filename

from srcbuild import proc
from srcbuild.errors import CacheIntegrityError, NotFoundError
from srcbuild.ext.actions import FetchTorchWheel
from srcbuild.ext.host import pick_python, wheel_python
from srcbuild.ext.source import find_links_files, index_files, pip_locations
from srcbuild.files import sha256_file


def _matches(wheel_version: str, version: str) -> bool:
    """``torch==version`` as pip reads it: a version without a local label matches any label."""
    return wheel_version == version or ("+" not in version and wheel_version.split("+")[0] == version)


def supported_tags(python: str, platforms: Sequence[str]) -> list[tags.Tag]:
    """The tags pip accepts for CPython ``python`` on ``platforms``, most preferred first (what
    ``pip download --python-version X --implementation cp --abi cpXY --platform ...`` accepts)."""
    major, minor = (int(p) for p in python.split(".")[:2])
    return [*tags.cpython_tags((major, minor), abis=[f"cp{major}{minor}"], platforms=platforms),
            *tags.compatible_tags((major, minor), f"cp{major}{minor}", platforms)]


def _rank(filename: str, order: dict[tags.Tag, int]) -> int | None:
    try:
        wheel_tags = parse_wheel_filename(filename)[3]
    except ValueError:
        return None
    ranks = [order[t] for t in wheel_tags if t in order]
    return min(ranks) if ranks else None


def index_torch(version: str, pin: str, into: Path, environ: Mapping[str, str]) -> FetchTorchWheel:
    """The torch wheel ``--torch version`` builds against (see the module docstring); NotFoundError
    when neither an index page nor a find-links location lists one for this platform and a Python
    this machine has."""
    from srcbuild.envs.runtime import pythons_here

    indexes, find_links = pip_locations(sys.executable, environ)  # pip's configuration read once
    files = [*index_files("torch", indexes), *find_links_files(find_links)]
    here = pythons_here(environ.get("PATH"))
    return pick_torch_wheel(version, pin, files, here, list(tags.platform_tags()), into)


def pick_torch_wheel(
    version: str, pin: str, files: Sequence[tuple[str, str]], here: Collection[str], platforms: Sequence[str],
    into: Path,
) -> FetchTorchWheel:
    """Of the listed ``files`` (name, URL), the torch wheel pip would take for ``torch==version``
    on ``platforms`` (most preferred first) with the Python ``pick_python`` chooses among those
    they are for and those this machine has (``here``)."""
    listed: list[tuple[str, str]] = []
    for filename, url in files:
        if not filename.endswith(".whl"):
            continue
        try:
            name, wheel_version, _, _ = parse_wheel_filename(filename)
        except ValueError:
            continue
        if name == "torch" and _matches(str(wheel_version), version):
            listed.append((filename, url))
    offered = {
        python for filename, _ in listed
        if (python := wheel_python(Path(filename)))
        and any(t.platform in platforms for t in parse_wheel_filename(filename)[3])
    }
    chosen = pick_python(pin, offered, here) if offered else None
    if chosen is None:
        have = ", ".join(sorted(here)) or "none"
        lists = f"lists torch {version} for Python {', '.join(sorted(offered))}" if offered else (
            f"lists no torch {version} wheel for this platform")
        make = (f"make one of those Pythons (srcbuild env runtime {max(offered)} DIR) and pass --env DIR after "
                f"installing torch=={version} into it, or " if offered else "")
        raise NotFoundError(
            f"--torch {version}: the package index {lists} and this machine has Python {have}",
            f"{make}download a torch wheel yourself (python -m pip download --no-deps --only-binary=:all: "
            f"torch=={version} -d DIR) and pass --torch-wheel with the file it saves",
        )
    order = {t: i for i, t in enumerate(supported_tags(chosen, platforms))}
    ranked = [(parse_wheel_filename(filename)[1], rank, filename, url)
              for filename, url in listed if (rank := _rank(filename, order)) is not None]
    if not ranked:  # a Python tag pip would not take for this platform: said as pip would say it
        raise NotFoundError(f"--torch {version}: no torch {version} wheel on the index fits Python {chosen} here",
                            "pass --torch-wheel FILE")
    # pip's choice: the highest version (a local label counts), then the most preferred tag
    newest = max(r[0] for r in ranked)
    _, _, filename, url = min((r for r in ranked if r[0] == newest), key=lambda r: r[1])
    base, _, fragment = url.partition("#")
    digest = dict(urllib.parse.parse_qsl(fragment)).get("sha256", "")
    return FetchTorchWheel(version, chosen, filename, base, digest, into)


def fetch_torch(
    action: FetchTorchWheel, environ: Mapping[str, str], on_line: Callable[[str], None] | None = None
) -> Path:
    """Do ``action`` (see the module docstring): the wheel's path, its sha256 checked; ``on_line``
    hears each line pip prints (a heartbeat)."""
    dest = action.into / action.filename
    if dest.is_file() and (not action.sha256 or sha256_file(dest) == action.sha256):
        return dest
    dest.unlink(missing_ok=True)  # another file under that name: fetched again, then checked
    action.into.mkdir(parents=True, exist_ok=True)
    # pip writes into a directory of this fetch's own, and only a whole, checked file is moved to
    # its name: a killed download never leaves a file that a later run would take (a find-links
    # wheel has no sha256 to catch it)
    with tempfile.TemporaryDirectory(dir=action.into, prefix=".fetch-") as staging:
        got_file = _pip_download(action, Path(staging), environ, on_line)
        if action.sha256:
            got = sha256_file(got_file)
            if got != action.sha256:
                raise CacheIntegrityError(
                    f"{action.filename} from {action.url} has sha256 {got}, the index states {action.sha256}; "
                    "it was deleted",
                    "run the same command again; if it persists, the index or a proxy serves another file",
                )
        os.replace(got_file, dest)
    return dest


def _pip_download(
    action: FetchTorchWheel, into: Path, environ: Mapping[str, str], on_line: Callable[[str], None] | None
) -> Path:
    """``pip download`` of the action's URL into ``into``: the file's path (NotFoundError when pip fails)."""
    digits = action.python.replace(".", "")
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(into),
            "--python-version", action.python, "--implementation", "cp", "--abi", f"cp{digits}"]
    for platform in tags.platform_tags():
        argv += ["--platform", platform]
    argv.append(action.url)
    log = action.into / "download.log"
    result = proc.run(argv, env={**environ, "PIP_CONSTRAINT": os.devnull}, log_path=log, on_line=on_line)
    got_file = into / action.filename
    if not result.ok or not got_file.is_file():
        tail = result.tail[-1] if result.tail else "no output"
        raise NotFoundError(
            f"--torch {action.version}: pip could not fetch {action.url} ({tail})",
            f"check the network and pip's index (python -m pip config list), or pass --torch-wheel FILE; "
            f"pip's log: {log}",
        )
    return got_file
