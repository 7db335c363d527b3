"""``make_ext_plan``: an ``ExtBuild`` becomes a ``Plan``. Pure: no I/O.

The steps: preflight (the recipe's rule and host findings, then the torch's), the toolchain the
recipe's torch build provisions and its compiler selection, the build environment, torch installed
into it from exactly one wheel (never from an index: ``--no-index``), the extension's source
(the sdist checked against the sha256 the index states, or a git checkout), a constraints file
pinning that torch, ``pip wheel --no-build-isolation`` (so setup.py compiles against that torch and
pip never replaces it), verification and the cache.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from srcbuild.command import Command
from srcbuild.envmods import EnvChanges
from srcbuild.ext.actions import (
    CacheExtWheel,
    CheckExtCommit,
    ExtPreflight,
    TorchWheelInstalled,
    VerifyExtWheel,
)
from srcbuild.ext.knowledge import SourceEdit
from srcbuild.ext.resolve import ExtBuild
from srcbuild.ext.source import is_commit
from srcbuild.plan.make import compiler_step, environment_step, provision_step
from srcbuild.plan.model import Plan, Step
from srcbuild.plan.vision import supported_arches_step
from srcbuild.sources.tagpins import EXT_TAG_RECORD

# Run by the build environment's python: fetch URL to DEST unless DEST already has SHA256.
FETCH_SCRIPT = r"""import hashlib, os, shutil, sys, urllib.request
url, want, dest = sys.argv[1:4]
def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
if os.path.exists(dest) and digest(dest) == want:
    print(dest + ": already here, sha256 " + want); sys.exit(0)
os.makedirs(os.path.dirname(dest), exist_ok=True)
with urllib.request.urlopen(url, timeout=60) as r, open(dest + ".part", "wb") as out:
    shutil.copyfileobj(r, out)
got = digest(dest + ".part")
if got != want:
    os.remove(dest + ".part"); sys.exit(dest + ": sha256 " + got + ", the index states " + want)
os.replace(dest + ".part", dest); print(dest + ": sha256 " + want)
"""
# Run by sh with the ref first and the git fetch command after it: a shallow fetch of the ref, else the
# whole ref (git's "dumb" HTTP protocol, which a static server speaks, has no shallow fetch), else for
# a commit no server sends by its id the branches (a srcbuild mirror keeps each pinned commit as one).
FETCH_REF = ('"$@" --depth 1 origin "$0" || "$@" origin "$0" || '
             '"$@" origin "+refs/heads/*:refs/remotes/origin/*"')
# Run by the build environment's python: unpack SDIST (sha256 SHA) into DEST (its one top directory
# TOP), then replace OLD by NEW in FILE when it is there exactly once, and put the lines of BEFORE
# (srcbuild's file, checked against BEFORE_SHA; "" for none) before FILE's unless FILE imports from
# __future__ (which must stay first); a DEST already unpacked from that sdist with that edit is kept
# (a resumed build keeps its objects).
UNPACK_SCRIPT = r"""import hashlib, os, shutil, sys, tarfile
sdist, sha, dest, top, name, old, new, before, before_sha = sys.argv[1:10]
marker = os.path.join(dest, ".srcbuild-unpacked")
want = sha + " " + name + ": " + old + " -> " + new + " " + before_sha + "\n"
if os.path.exists(marker) and open(marker).read() == want:
    print(dest + ": already unpacked from " + os.path.basename(sdist) + ", edited"); sys.exit(0)
shutil.rmtree(dest, ignore_errors=True)
os.makedirs(dest)
with tarfile.open(sdist) as tar:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
    else:
        for m in tar.getmembers():
            if m.name.startswith("/") or ".." in m.name.split("/") or not (m.isfile() or m.isdir()):
                sys.exit(os.path.basename(sdist) + ": unsafe member " + m.name)
        tar.extractall(dest)
if sorted(os.listdir(dest)) != [top]:
    sys.exit(os.path.basename(sdist) + ": its top directory is not " + top)
path = os.path.join(dest, top, name)
text = open(path, encoding="utf-8").read()
found = text.count(old)
if found == 1:
    text = text.replace(old, new)
    said = name + ": " + old + " -> " + new + ": its files compile MAX_JOBS at once"
    if before:
        lines = open(before, "rb").read()
        if hashlib.sha256(lines).hexdigest() != before_sha:
            sys.exit(before + ": its sha256 is not " + before_sha + ": reinstall srcbuild")
        if "from __future__" in text:
            said += "; it imports from __future__, so its extensions build one after another"
        else:
            text = lines.decode("utf-8") + text
            said += ", its extensions side by side (" + os.path.basename(before) + " before it)"
    open(path, "w", encoding="utf-8").write(text)
    print(said)
else:
    print(name + ": " + old + " is there " + str(found) + " times, not once: built as it ships, one file at a time")
open(marker, "w").write(want)
"""
WRITE_SCRIPT = "import sys; open(sys.argv[1], 'w').write(sys.argv[2] + '\\n')"


def make_ext_plan(b: ExtBuild) -> Plan:
    """The ordered steps of the extension build ``b`` describes."""
    r = b.base
    py = str(b.python)
    steps: list[Step] = []
    if b.fetch is not None:
        steps.append(Step(
            id="fetch-torch",
            title=f"Fetch {b.fetch.filename}",
            why=f"--torch {b.fetch.version}: the wheel the package index lists for Python {b.fetch.python} on this "
            "platform; its CUDA version and kernels are read from it for the preflight (before it, only the recipe "
            "and this host are checked) and its sha256 is in the cache key",
            action=b.fetch,
        ))
    steps.append(Step(
        id="preflight",
        title="Preflight: recipe, host, torch and nvcc",
        why=("stop before any compile when the recipe's pins, this machine, the torch and nvcc cannot make a "
             "working extension") if b.fetch is not None else (
            "stop before any download or compile when the recipe's pins, this machine, the torch and nvcc "
            "cannot make a working extension"),
        action=ExtPreflight(
            f"recipe {r.recipe.name}, this host, {b.torch.origin} and nvcc", r.options.ignore_preflight
        ),
    ))
    if r.provisioning:
        steps.append(provision_step(r))
    steps.append(compiler_step(r))
    steps.append(environment_step(r))
    if b.torch.wheel is not None:
        steps.append(Step(
            id="install-torch",
            title=f"Install torch {b.torch.version} into the build environment",
            why="the extension's setup.py imports torch and compiles against its headers and libraries",
            commands=(
                Command(
                    (py, "-m", "pip", "install", "--no-deps", "--force-reinstall", "--no-index", str(b.torch.wheel)),
                    f"this exact wheel ({b.torch.origin}), never one from an index",
                ),
                Command(
                    (py, "-m", "pip", "install", str(b.torch.wheel)),
                    "the libraries it needs to import (for a CUDA torch from the index: NVIDIA's CUDA library "
                    "wheels), from the index pip is configured with; torch itself is already this wheel",
                ),
                *((Command((py, "-c", WRITE_SCRIPT, str(b.torch_marker), b.torch_sha256),
                           f"record the wheel's sha256 in {b.torch_marker} (a later build skips this step)"),)
                  if b.torch_sha256 else ()),
            ),
            skip_if=TorchWheelInstalled(b.python, b.torch_marker, b.torch_sha256, b.torch.version)
            if b.torch_sha256 else None,
        ))
    arches = supported_arches_step(r.unlisted_arches, r.unlisted_source, b.python, b.request.name)
    if arches is not None:
        steps.append(arches)
    steps.append(_source_step(b))
    if b.request.is_git and not is_commit(b.request.git_ref or ""):
        url, ref = b.request.git_url or "", b.request.git_ref or ""
        steps.append(Step(
            id="source-commit",
            title=f"Check the commit of {ref}",
            why="a tag is a name a mirror can move: the commit it names now must be the one it named when "
            "first seen here (exit 7 otherwise; --accept-moved-tag records a new one)",
            action=CheckExtCommit(b.source_dir, url, ref, r.mirrors.rewrite(url),
                                  r.paths.work_dir / EXT_TAG_RECORD, r.options.accept_moved_tag),
        ))
    edit = _edit_step(b)
    if edit is not None:
        steps.append(edit)
    steps.append(Step(
        id="constraints",
        title=f"Pin torch=={b.torch.version}",
        why="a constraints file keeps pip from replacing the torch the extension is compiled against",
        commands=(Command((py, "-c", WRITE_SCRIPT, str(b.constraints), f"torch=={b.torch.version}"),
                          f"write {b.constraints}"),),
    ))
    steps.append(_build_step(b))
    cuda = b.cuda
    archs = tuple(str(a) for a in sorted(r.recipe.gpu.arch)) if cuda else ()
    steps.append(Step(
        id="verify",
        title="Verify the wheel",
        why="the extension's libraries must hold kernels for every arch of the recipe; a wheel that does not is "
        "never cached",
        action=VerifyExtWheel(b.dist_dir, b.wheel_pattern, archs),
    ))
    steps.append(Step(
        id="cache",
        title="Store the wheel in the cache",
        why="a later build of the same source, torch and toolchain reuses it; srcbuild install and the cache "
        "remotes share it",
        action=CacheExtWheel(b.dist_dir, b.wheel_pattern, r.paths.cache_dir),
    ))
    return Plan(
        package=b.request.name,
        recipe=r.recipe.name,
        version=b.sdist.version if b.sdist else (b.request.git_ref or ""),
        settings=tuple(
            replace(s, value=b.request.name, source="command line") if s.name == "package" else s for s in r.settings
        ),
        steps=tuple(steps),
        env=b.env_changes,
        checkout=b.source_dir,
        build_root=b.root,
        dist_dir=b.dist_dir,
        keep_build=r.keep_build,
        system_alternatives=r.compiler.system,
        compiler_tree=r.compiler.tree,
    )


def _source_step(b: ExtBuild) -> Step:
    py = str(b.python)
    if b.sdist is not None:
        dest = b.root / b.sdist.filename
        return Step(
            id="source",
            title=f"Fetch {b.sdist.filename}",
            why=f"the sdist of {b.label} from the package index, checked against the sha256 the index states",
            commands=(Command((py, "-c", FETCH_SCRIPT, b.sdist.url, b.sdist.sha256, str(dest)),
                              f"download {b.sdist.url} and check its sha256 {b.sdist.sha256}"),),
        )
    url, ref = b.request.git_url or "", b.request.git_ref or ""
    src = str(b.source_dir)
    rules = b.base.mirrors
    git = ("git", *rules.git_config_args(own_urls=(url,)))
    refspec = ref if is_commit(ref) else f"+refs/tags/{ref}:refs/tags/{ref}"
    fetched = rules.rewrite(url)
    via = f" from {fetched}" if fetched != url else ""
    return Step(
        id="source",
        title=f"Check out {url} at {ref}",
        why="the extension's git source at the tag or commit asked for, with its submodules, through the mirror "
        "rules; the commit is recorded in the cache",
        commands=(
            Command(("rm", "-rf", src), "start from an empty checkout"),
            Command(("git", "init", "-q", src), "an empty repository"),
            Command(("git", "-C", src, "remote", "add", "origin", url), "the repository asked for"),
            Command(("sh", "-c", FETCH_REF, refspec, *git, "-C", src, "fetch", "--no-tags"),
                    f"fetch {ref} only{via}"),
            Command(("git", "-C", src, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach",
                     ref if is_commit(ref) else f"refs/tags/{ref}"), f"check out {ref}"),
            Command((*git, "-C", src, "submodule", "update", "--init", "--recursive"),
                    "its submodules at every depth, through the same rules"),
        ),
    )


def sdist_top(filename: str) -> str:
    """The top directory of an sdist (``torch_scatter-2.1.2`` for ``torch_scatter-2.1.2.tar.gz``)."""
    for suffix in (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip"):
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


def unpack_argv(
    python: str, sdist: str, sha256: str, dest: str, edit: SourceEdit, *, edited: bool = True, prepend: bool = True
) -> tuple[str, ...]:
    """The command that unpacks ``sdist`` into ``dest`` and makes ``edit`` (``UNPACK_SCRIPT``);
    ``edited=False`` unpacks it as it ships, ``prepend=False`` leaves srcbuild's lines out."""
    before = edit.prepend_path if prepend and edited else None
    return (python, "-c", UNPACK_SCRIPT, sdist, sha256, dest, sdist_top(Path(sdist).name), edit.file, edit.old,
            edit.new if edited else edit.old, str(before or ""), edit.prepend_sha256() if before else "")


def _edit_step(b: ExtBuild) -> Step | None:
    """Unpack the sdist and restore its parallel compiles (``ExtensionKnowledge.parallel``)."""
    edit = b.knowledge.parallel
    if b.sdist is None or edit is None or b.sdist.filename.endswith(".zip"):
        return None
    before = edit.prepend_path
    side_by_side = (
        f"; {edit.prepend} before its {edit.file} builds its extensions side by side (MAX_JOBS of them at most, "
        "each in a build directory of its own, every extension's CUDA files before any extension's other files), "
        "the compiles in flight still MAX_JOBS"
        if before is not None
        else ""
    )
    return Step(
        id="parallel",
        title=f"Unpack {b.sdist.filename} and restore parallel compiles",
        why=f"its {edit.file} turns ninja off, so its files would compile one at a time whatever MAX_JOBS says; "
        f"the exact edit {edit.file}: {edit.old} -> {edit.new} (checked: made only where the text is there once) "
        f"turns it back on ({edit.source}){side_by_side}",
        commands=(Command(unpack_argv(str(b.python), str(b.root / b.sdist.filename), b.sdist.sha256,
                                      str(b.source_dir), edit),
                          f"unpack into {b.source_dir} and edit {edit.describe()}"),),
    )


def build_source(b: ExtBuild) -> str:
    """What pip builds: the unpacked, edited sdist; else the sdist file; else the git checkout."""
    if b.sdist is not None and _edit_step(b) is not None:
        return str(b.source_dir / sdist_top(b.sdist.filename))
    return str(b.root / b.sdist.filename) if b.sdist is not None else str(b.source_dir)


def _build_step(b: ExtBuild) -> Step:
    source = build_source(b)
    argv = [str(b.python), "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "--no-cache-dir",
            "-c", str(b.constraints), "-w", str(b.dist_dir)]
    for option in b.options:
        argv += ["--config-settings", f"--build-option={option}"]
    argv.append(source)
    env = EnvChanges(tuple(b.env_changes))
    return Step(
        id="build",
        title=f"Build {b.label}",
        why="pip wheel --no-build-isolation compiles against the torch installed above, with the variables "
        "above; full output goes to the log",
        commands=(Command(tuple(argv), f"build the {b.request.name} wheel", env=env),),
        progress=True,
    )
