"""An extension build up to its plan: resolve, find the torch, find the source, key it, plan it.

``prepare_ext`` does everything before the plan: the recipe's torch build is resolved (host probe
included), the torch is found (the recipe's own wheel in the cache, a file, a version on the index
pip is configured with, or the environment's) and read, the sdist is looked up, the preflight
findings and the cache key are computed. ``srcbuild plan ext`` prints the plan it makes;
``srcbuild.pipeline.run_ext`` looks the key up in the cache and otherwise hands that plan to the
executor.

It downloads nothing and writes nothing: for ``--torch VERSION`` it reads the index's pages and
plans the wheel's download as the ``fetch-torch`` step (``ext.fetch``). What only that wheel's
files tell (its CUDA version, kernels and sha256: the torch findings and the cache key) is then
read at run time: ``with_fetched_torch`` runs that step's work before the cache is asked (the key
holds the wheel's identity), and ``with_torch`` completes the findings and the key.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from srcbuild import proc
from srcbuild.errors import MirrorMissing, NotFoundError, UsageError
from srcbuild.ext.actions import FetchTorchWheel
from srcbuild.ext.fetch import fetch_torch, index_torch
from srcbuild.ext.host import (
    cpu_gcc,
    disk_findings,
    disk_need,
    for_extension,
    python_finding,
    wheel_python,
    without_torch_disk,
)
from srcbuild.ext.knowledge import knowledge_for
from srcbuild.ext.resolve import ExtBuild, TorchChoice, ext_variables
from srcbuild.ext.source import ExtRequest, Sdist, find_sdist, pip_indexes
from srcbuild.ext.torch import TorchIdentity, from_environment, from_wheel
from srcbuild.findings import Finding
from srcbuild.host.jobs import jobs_memory_allows
from srcbuild.host.system import probe_resources
from srcbuild.offline import DIR_VAR as MIRROR_DIR_VAR
from srcbuild.paths import Paths
from srcbuild.plan.model import Plan
from srcbuild.precedence import env_value
from srcbuild.recipe import Recipe
from srcbuild.records import record
from srcbuild.resolve import BuildOptions, ResolvedBuild
from srcbuild.resolve.model import Setting
from srcbuild.resolve.prepare import resolve_on_host

if TYPE_CHECKING:
    from srcbuild.ext.key import ExtKeyInputs


@record
class TorchRequest:
    """What the command line said about torch (at most one of these)."""

    wheel: Path | None = None  # --torch-wheel FILE
    version: str | None = None  # --torch VERSION[+LOCAL]

    def describe(self) -> str:
        if self.wheel:
            return f"--torch-wheel {self.wheel}"
        return f"--torch {self.version}" if self.version else "the recipe's torch wheel"


@record
class PreparedExt:
    """An extension build decided: its plan, and (once its torch is read) its findings and key."""

    build: ExtBuild
    plan: Plan
    identity: TorchIdentity | None  # None: --torch VERSION, read when the fetch-torch step has run
    findings: tuple[Finding, ...]  # the early ones, then (once the torch is read) the torch's
    inputs: ExtKeyInputs | None  # None until the torch is read
    fingerprint: str  # "" until the torch is read
    nvcc_version: str | None
    python: str = ""
    early: tuple[Finding, ...] = ()  # the findings no torch file is read for: Python, recipe, host, torch range

    @property
    def torch_deferred(self) -> bool:
        """Whether the torch is fetched by the plan's fetch-torch step (and read after it)."""
        return self.identity is None


def _recipe_torch_wheel(recipe: Recipe, paths: Paths, environ: Mapping[str, str]) -> Path:
    from srcbuild.cache.install import find_wheel
    from srcbuild.cache.store import WheelCache
    from srcbuild.resolve.request import request_fingerprint

    fp = request_fingerprint(recipe, "torch", environ)
    found = find_wheel(WheelCache(paths.cache_dir), recipe, "torch", [], fp, environ=environ)
    if found is None:
        from srcbuild.recipe.catalog import recipe_argument

        where = recipe_argument(recipe, paths)
        raise NotFoundError(
            f"no torch wheel of recipe {recipe.name} in the cache {paths.cache_dir} to build against",
            f"build it first (srcbuild torch --recipe {where}), or pass --torch-wheel FILE or --torch VERSION",
        )
    return found.entry.wheel_path


def _wheel_version(path: Path) -> str:
    from packaging.utils import parse_wheel_filename

    return str(parse_wheel_filename(path.name)[1])


# Names the edit made to an sdist (``ExtensionKnowledge.parallel``), so that the cache key holds it.
EDIT_VAR = "SRCBUILD_EXT_SOURCE_EDIT"


def ext_settings(settings: tuple[Setting, ...], recipe: Recipe, python: str, why: str) -> tuple[Setting, ...]:
    """The settings as the extension build really takes them: its Python from the torch, and no
    cuDNN or MPI whatever the recipe pins (an extension links neither)."""
    out = []
    for s in settings:
        if s.name == "python" and python != recipe.toolchain.python:
            s = replace(s, source=f"{why} (the recipe pins {recipe.toolchain.python})")
        elif s.name == "gcc" and s.value != recipe.toolchain.gcc:
            s = replace(s, source=f"the newest gcc here: a CPU extension needs no CUDA's compiler (the recipe pins "
                        f"{recipe.toolchain.gcc})")
        elif s.name in ("cudnn", "mpi"):
            s = replace(s, source="an extension links no " + ("cuDNN" if s.name == "cudnn" else "MPI"))
        out.append(s)
    return tuple(out)


def _size(path: Path | None) -> int | None:
    try:
        return path.stat().st_size if path is not None else None
    except OSError:
        return None


def _free(path: Path) -> int | None:
    import shutil

    from srcbuild.errors import filesystem_of

    try:
        return shutil.disk_usage(filesystem_of(path)).free
    except OSError:
        return None


def env_python(prefix: Path, environ: Mapping[str, str]) -> str:
    """The Python version ("3.11") of the environment at ``prefix``."""
    python = prefix / "bin" / "python"
    out = proc.probe([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], env=environ, timeout=60)
    if not out or not out.strip():
        raise UsageError(f"--env {prefix}: {python} does not run", "pass the prefix of a venv or conda env")
    return out.strip().splitlines()[-1]


def _find_sdist(request: ExtRequest, environ: Mapping[str, str]) -> Sdist:
    """The request's sdist on pip's indexes; with ``--mirror-dir`` (the mirror's index alone) one
    it lacks is named with the ``mirror create`` option that adds it."""
    try:
        return find_sdist(request, pip_indexes(sys.executable, environ))
    except NotFoundError as exc:
        mirror_dir = env_value(environ, MIRROR_DIR_VAR)
        if not mirror_dir:
            raise
        raise MirrorMissing(
            f"the sdist of {request} is not in the mirror {mirror_dir}'s package index ({exc.message})",
            f"add it on a connected machine: srcbuild mirror create {mirror_dir} --ext {request}",
            {"create_options": ["--ext", str(request)]},
        ) from None


def check_git_mirror(request: ExtRequest, environ: Mapping[str, str]) -> None:
    """With ``--mirror-dir``, a git source the mirror lacks (its repository, or the tag or commit
    asked for) fails before anything runs, naming the ``mirror create`` option that adds it."""
    from srcbuild.ext.source import is_commit
    from srcbuild.mirror.manifest import read_git_refs

    base = env_value(environ, MIRROR_DIR_VAR)
    if not base or not request.is_git:
        return
    ref = request.git_ref or ""
    refs = read_git_refs(base, request.git_url or "")
    if refs is not None and (ref in refs.values() if is_commit(ref) else f"refs/tags/{ref}" in refs):
        return
    lacks = "its repository" if refs is None else f"{ref}"
    raise MirrorMissing(
        f"the git source {request} is not in the mirror {base} (it lacks {lacks})",
        f"add it on a connected machine: srcbuild mirror create {base} --ext {request}",
        {"create_options": ["--ext", str(request)]},
    )


def prepare_ext(
    recipe: Recipe,
    request: ExtRequest,
    torch: TorchRequest,
    options: BuildOptions,
    paths: Paths,
    environ: Mapping[str, str],
) -> PreparedExt:
    """Resolve the build, find and read the torch, find the source; then plan (see the module docstring)."""
    from srcbuild.ext.plan import make_ext_plan
    from srcbuild.ext.preflight import label_findings, range_findings

    if torch.wheel and torch.version:
        raise UsageError("--torch-wheel and --torch name two torches", "pass one of them")
    if options.env_prefix and (torch.wheel or torch.version):
        raise UsageError(
            f"--env builds against the torch installed in {options.env_prefix}, and {torch.describe()} names another",
            "pass --env alone, or drop --env",
        )
    check_git_mirror(request, environ)
    memo = paths.work_dir / "torch-identity"
    wheel: Path | None = None
    fetch: FetchTorchWheel | None = None
    if options.env_prefix:
        python, why = env_python(Path(options.env_prefix), environ), f"the Python of --env {options.env_prefix}"
    elif torch.wheel:
        python, why = wheel_python(torch.wheel) or recipe.toolchain.python, f"the Python of {torch.wheel.name}"
    elif torch.version:
        fetch = index_torch(torch.version, recipe.toolchain.python, paths.work_dir / "torch-wheels", environ)
        python, why = fetch.python, f"a Python the index has torch=={torch.version} for and this machine has"
    else:
        wheel = _recipe_torch_wheel(recipe, paths, environ)
        python, why = wheel_python(wheel) or recipe.toolchain.python, f"the Python of {wheel.name}"
    gcc = cpu_gcc(recipe.toolchain.gcc, environ.get("PATH")) if recipe.toolchain.cuda is None else None
    view = for_extension(recipe, python, gcc)
    base = resolve_on_host(view, replace(options, package="torch", extension=True), paths, environ)
    identity: TorchIdentity | None = None
    if options.env_prefix:
        identity = from_environment(Path(options.env_prefix), dict(environ))
        choice = TorchChoice("env", identity.version, None, identity.origin)
    elif fetch is not None:
        choice = TorchChoice("index", _wheel_version(fetch.wheel), fetch.wheel, f"the package index ({fetch.url})")
    else:
        if torch.wheel:
            choice = TorchChoice.from_wheel_file(torch.wheel)
        else:
            assert wheel is not None
            choice = TorchChoice("cache", _wheel_version(wheel), wheel, f"the cache (recipe {recipe.name}'s torch)")
        assert choice.wheel is not None
        identity = replace(from_wheel(choice.wheel, memo), origin=choice.origin)
    knowledge = knowledge_for(request.name)
    sdist = None if request.is_git else _find_sdist(request, environ)
    cuda = recipe.toolchain.cuda is not None
    memory = probe_resources(paths.work_dir).memory_bytes
    env = ext_variables(base, knowledge, jobs_memory_allows(memory) if memory else None)
    if sdist is not None and knowledge.parallel is not None and not sdist.filename.endswith(".zip"):
        env = env.set(EDIT_VAR, knowledge.parallel.describe(),
                      f"known extension {knowledge.name}: its sdist edited to compile in parallel (in the cache key)")
    root = paths.builds_dir / f"{recipe.name}-ext-{knowledge.name}"
    if fetch is not None:
        digest = fetch.sha256
    else:
        assert identity is not None
        digest = identity.identity.partition("sha256:")[2] if identity.identity.startswith("sha256:") else ""
    b = ExtBuild(base, request, knowledge, choice, sdist, env, knowledge.options(cuda), root, digest, fetch)
    nvcc = base.toolchain("cuda").version if cuda else None
    early = (*python_finding(recipe, python, why), *without_torch_disk(recipe_findings(base)),
             *range_findings(knowledge, sdist.version if sdist else None, choice.version))
    need = disk_need(None, len(recipe.gpu.arch) if cuda else 0, _size(choice.wheel))
    plan = make_ext_plan(b)
    plan = replace(plan, settings=ext_settings(plan.settings, recipe, python, why),
                   continue_command=continue_command(recipe, request, torch, options, paths), disk_need_bytes=need)
    # what the version's label says of its CUDA, until the wheel itself is read (``with_torch``)
    said = label_findings(recipe.name, recipe.toolchain.cuda, list(recipe.gpu.arch), choice.version, nvcc)
    findings = (*early, *disk_findings(need, _free(paths.work_dir), paths.work_dir), *said)
    prepared = PreparedExt(b, plan, None, findings, None, "", nvcc, python, early)
    return prepared if identity is None else with_torch(prepared, identity)


def with_torch(prepared: PreparedExt, identity: TorchIdentity) -> PreparedExt:
    """``prepared`` with its torch read: the torch's findings after the early ones, the disk need
    with the wheel's size, and the cache key (``ext.key``), which holds the torch's identity."""
    from srcbuild.cache.key import python_abi_tag
    from srcbuild.ext.key import ExtKeyInputs, ext_fingerprint
    from srcbuild.ext.preflight import ext_findings
    from srcbuild.knowledge import load_knowledge

    b, nvcc = prepared.build, prepared.nvcc_version
    recipe, sdist, paths = b.recipe, b.sdist, b.base.paths
    release = load_knowledge().cuda(nvcc) if nvcc else None
    accepts = release.targets.capabilities if release is not None else None
    torch_findings = ext_findings(recipe.name, recipe.toolchain.cuda, list(recipe.gpu.arch), identity, nvcc,
                                  accepts, release.source if release is not None else "")
    source = {"sdist": sdist.filename, "sha256": sdist.sha256} if sdist else {
        "git": b.request.git_url or "", "ref": b.request.git_ref or ""}
    inputs = ExtKeyInputs.create(
        name=b.knowledge.name, source=source, against=identity.identity, torch=identity.version,
        torch_cuda=identity.cuda, build_env=b.env_changes.final_values(), options=b.options,
        python_abi=python_abi_tag(prepared.python), gcc=recipe.toolchain.gcc,
        cuda=recipe.toolchain.cuda, platform=b.base.platform,
        nvcc_flags_variable=b.knowledge.nvcc_threads.variable if b.knowledge.nvcc_threads else None,
    )
    need = disk_need(None, len(recipe.gpu.arch) if b.cuda else 0, _size(identity.wheel or b.torch.wheel))
    findings = (*prepared.early, *disk_findings(need, _free(paths.work_dir), paths.work_dir), *torch_findings)
    plan = replace(prepared.plan, disk_need_bytes=need)
    return replace(prepared, plan=plan, identity=identity, findings=findings, inputs=inputs,
                   fingerprint=ext_fingerprint(inputs))


def with_fetched_torch(
    prepared: PreparedExt, environ: Mapping[str, str], on_line: Callable[[str], None] | None = None
) -> PreparedExt:
    """``prepared`` with the torch of its fetch-torch step fetched and read (the step's own work,
    which the executor then finds done); as it is when its torch is read already. ``on_line``
    hears the download's output."""
    fetch = prepared.build.fetch
    if fetch is None or prepared.identity is not None:
        return prepared
    wheel = fetch_torch(fetch, environ, on_line)
    memo = prepared.build.base.paths.work_dir / "torch-identity"
    identity = from_wheel(wheel, memo, fetch.sha256 or None)  # fetch_torch checked that sha256
    return with_torch(prepared, replace(identity, origin=prepared.build.torch.origin))


def continue_command(
    recipe: Recipe, request: ExtRequest, torch: TorchRequest, options: BuildOptions, paths: Paths
) -> str:
    """The ``srcbuild ext ... --resume`` command that continues this build after a failure or an
    interrupt (the CLI prints the user's own command line with --resume instead, when it has one)."""
    import shlex

    from srcbuild.recipe.catalog import recipe_argument

    args = ["srcbuild", "ext", str(request)]
    if torch.wheel:
        args += ["--torch-wheel", str(torch.wheel)]
    elif torch.version:
        args += ["--torch", torch.version]
    if options.env_prefix:
        args += ["--env", str(options.env_prefix)]
    return " ".join([shlex.join(args), "--recipe", recipe_argument(recipe, paths), "--resume"])


# The recipe's compatibility findings that bear on an extension: the compiler and CUDA pins and the
# archs (nvcc and gcc must accept them); not those about building torch itself (its tag, patches, MPI).
EXT_RULE_FIELDS = ("toolchain.gcc", "toolchain.cuda", "gpu.arch", "gpu.ptx", "build.env")


def recipe_findings(base: ResolvedBuild) -> tuple[Finding, ...]:
    """The host findings and the recipe rule findings an extension build shares with torch's."""
    rules = tuple(f for f in base.rule_findings if f.field in EXT_RULE_FIELDS)
    return (*rules, *base.host_findings)
