"""``srcbuild container build --recipe R``: build in the recipe's devel image, keep the wheel on the host.

1. the build context (srcbuild's own source, the recipe file when it is not in the catalog) and
   the Dockerfile of ``plan --format dockerfile`` go to ``<work>/containers/<recipe>/context``;
2. ``<engine> build --target devel`` makes the devel image; its id (``sha256:...``) is read back;
3. ``<engine> run`` runs ``srcbuild PACKAGE --recipe R`` in it with the host's work dir and wheel
   cache mounted at the same paths (so the build tree, and every path a build embeds in its
   binaries, is the one a host build has): the srcbuild inside verifies the wheel and stores it in
   the host's cache like a host build, and records the image id in the entry's resolved facts
   (``container_image``, from ``SRCBUILD_BUILD_IMAGE``);
4. with ``--image-tag T``, a runtime image with only the wheels installed, built from the runtime
   stage's base and the wheels just stored.

``plan_*`` functions decide the commands; ``run_container_build`` runs them through ``proc``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, TextIO

from srcbuild import proc
from srcbuild.command import Command
from srcbuild.container import BUILD_IMAGE_VAR, dockerfile_spec
from srcbuild.container.dockerfile import (
    CONTEXT_FILES,
    DockerfileSpec,
    recipe_arg,
    render_dockerfile,
    runtime_stage,
)
from srcbuild.container.engine import Engine
from srcbuild.errors import StepFailed, UsageError
from srcbuild.offline import DIR_VAR as MIRROR_DIR_VAR
from srcbuild.paths import Paths, checkout_root
from srcbuild.recipe import Recipe
from srcbuild.records import record


@record
class ContainerRequest:
    """What the user asked ``container build`` for."""

    recipe: Recipe
    package: str = "torch"
    base: Optional[str] = None
    image_tag: Optional[str] = None
    mirrors: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()  # SRC[:DST], DST defaulting to SRC
    build_args: tuple[str, ...] = ()  # passed to `srcbuild PACKAGE` inside (--env, --cuda-home, --max-jobs)
    mirror_dir: Optional[str] = None  # --mirror-dir: mounted read-only at its path (a URL is passed as is)
    # the cache fingerprint of the torch wheel the runtime image of a package built against torch
    # (torchvision, torchaudio) installs beside its own
    # (``srcbuild.resolve.request.request_fingerprint``); None: the runtime image gets no torch wheel
    torch_fingerprint: Optional[str] = None


@record
class ContainerLayout:
    """Where one recipe's container build keeps its files on the host."""

    root: Path

    @classmethod
    def for_recipe(cls, paths: Paths, recipe: Recipe) -> ContainerLayout:
        return cls(paths.work_dir / "containers" / recipe.name)

    @property
    def context(self) -> Path:
        return self.root / "context"

    @property
    def runtime_context(self) -> Path:
        return self.root / "runtime-context"


def devel_tag(recipe: Recipe) -> str:
    return f"localhost/srcbuild-devel-{recipe.name}:{recipe.torch.tag}"


def volume_args(volumes: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for volume in volumes:
        src, _, dst = volume.partition(":")
        if not src.startswith("/") or (dst and not dst.startswith("/")):
            raise UsageError(
                f"--volume {volume}: give absolute paths, SRC or SRC:DST", f"--volume {Path(src).resolve()}"
            )
        out += ["-v", f"{src}:{dst or src}"]
    return tuple(out)


def plan_devel_build(engine: Engine, request: ContainerRequest, layout: ContainerLayout) -> Command:
    argv = (engine.program, "build", *engine.build_runtime_args(), "--target", "devel")
    argv += ("-t", devel_tag(request.recipe), "-f", str(layout.context / "Dockerfile"), str(layout.context))
    return Command(argv, f"build the devel image of {request.recipe.name}")


def plan_inspect(engine: Engine, image: str) -> Command:
    return Command((engine.program, "image", "inspect", "--format", "{{.Id}}", image), "the devel image's id")


def plan_container_run(engine: Engine, request: ContainerRequest, paths: Paths, image_id: str) -> Command:
    """``srcbuild PACKAGE --recipe R`` inside the devel image, the host's work dir and cache mounted
    at the same paths."""
    spec = dockerfile_spec(request.recipe, request.package, request.mirrors, request.base)
    work, cache = str(paths.work_dir), str(paths.cache_dir)
    argv = [engine.program, "run", "--rm", *engine.runtime_args(), "-v", f"{work}:{work}", "-v", f"{cache}:{cache}"]
    argv += volume_args(request.volumes)
    argv += ["-e", f"SRCBUILD_WORK_DIR={work}", "-e", f"SRCBUILD_CACHE_DIR={cache}"]
    argv += ["-e", f"{BUILD_IMAGE_VAR}={image_id}"]
    if request.mirrors:
        argv += ["-e", f"SRCBUILD_MIRROR={' '.join(request.mirrors)}"]
    if request.mirror_dir:
        if not request.mirror_dir.startswith(("http://", "https://")):
            argv += ["-v", f"{request.mirror_dir.rstrip('/')}:{request.mirror_dir.rstrip('/')}:ro"]
        argv += ["-e", f"{MIRROR_DIR_VAR}={request.mirror_dir}"]
    argv += [devel_tag(request.recipe), "srcbuild", request.package, "--recipe", recipe_arg(spec), *request.build_args]
    return Command((*argv, "--json"), f"build {request.package} for {request.recipe.name} in the devel image")


def runtime_dockerfile(spec: DockerfileSpec, wheels: Sequence[str]) -> str:
    """The runtime stage alone, its wheels taken from the context instead of the build stage."""
    lines = [f"# {spec.package} for recipe {spec.recipe.name}: the runtime image of `srcbuild container build`."]
    lines.append(f"ARG RUNTIME_IMAGE={spec.bases.runtime}")
    for line in runtime_stage(replace(spec, bases=replace(spec.bases, provision=False))):
        if line.startswith("COPY --from=build /wheels"):
            lines += [f"COPY {name} /tmp/wheels/{name}" for name in wheels]
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def write_context(spec: DockerfileSpec, layout: ContainerLayout) -> None:
    """srcbuild's source and the Dockerfile, replaced as a whole (a temp dir renamed into place)."""
    root = checkout_root()
    if root is None:
        raise UsageError(
            "container build: the devel image installs srcbuild from its source tree, and this srcbuild is "
            "an installed copy",
            "run it from a srcbuild checkout: git clone <srcbuild repository> && cd srcbuild && "
            "python3 -m pip install . && srcbuild container build --recipe R",
        )
    tmp = layout.root / "context.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in CONTEXT_FILES:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, tmp / name, ignore=skip)
        else:
            shutil.copy2(source, tmp / name)
    if spec.recipe_file and spec.recipe.path is not None:
        (tmp / "recipes-extra").mkdir()
        shutil.copy2(spec.recipe.path, tmp / "recipes-extra" / spec.recipe_file)
    (tmp / "Dockerfile").write_text(render_dockerfile(spec))
    shutil.rmtree(layout.context, ignore_errors=True)
    tmp.rename(layout.context)


@record
class ContainerResult:
    wheel: Path
    image_id: str
    devel_image: str
    runtime_image: Optional[str]
    cached: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "wheel": str(self.wheel),
            "image_id": self.image_id,
            "devel_image": self.devel_image,
            "runtime_image": self.runtime_image,
            "cached": self.cached,
        }


def _run(command: Command, log: Path, echo: Optional[TextIO], environ: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    result = proc.run(command.argv, env=dict(environ), log_path=log, on_line=lines.append, echo=echo)
    if not result.ok:
        tail = next((line for line in reversed(lines) if line.strip()), "no output")
        raise StepFailed(f"container build: {command.why} failed (exit {result.returncode}): {tail}", f"see {log}")
    return lines


def host_wheel(lines: Sequence[str]) -> tuple[Path, bool]:
    """The wheel the srcbuild inside reported (its ``--json`` result, the last object printed):
    a path in the host's cache, mounted at the same place."""
    starts = [n for n, line in enumerate(lines) if line == "{"]
    for start in reversed(starts):
        try:
            data = json.loads("\n".join(lines[start:]))
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("wheel"):
            return Path(data["wheel"]), bool(data.get("cached"))
    raise StepFailed("container build: srcbuild in the container printed no wheel", "see the log")


def run_container_build(
    engine: Engine,
    request: ContainerRequest,
    paths: Paths,
    environ: Mapping[str, str],
    log: Path,
    echo: Optional[TextIO] = None,
) -> ContainerResult:
    spec = dockerfile_spec(request.recipe, request.package, request.mirrors, request.base)
    layout = ContainerLayout.for_recipe(paths, request.recipe)
    write_context(spec, layout)
    paths.cache_dir.mkdir(parents=True, exist_ok=True)
    _run(plan_devel_build(engine, request, layout), log, echo, environ)
    image_id = _run(plan_inspect(engine, devel_tag(request.recipe)), log, None, environ)[-1].strip()
    lines = _run(plan_container_run(engine, request, paths, image_id), log, echo, environ)
    wheel, cached = host_wheel(lines)
    runtime = None
    if request.image_tag:
        runtime = request.image_tag
        ctx = layout.runtime_context
        shutil.rmtree(ctx, ignore_errors=True)
        ctx.mkdir(parents=True)
        wheels = [wheel]
        if request.torch_fingerprint:  # a package built against torch: and the torch it was built against
            from srcbuild.cache.install import find_wheel
            from srcbuild.cache.store import WheelCache

            cache = WheelCache(paths.cache_dir)
            found = find_wheel(cache, request.recipe, "torch", [], request.torch_fingerprint, environ=environ)
            if found is not None:
                wheels.insert(0, found.entry.wheel_path)
        for w in wheels:
            shutil.copy2(w, ctx / w.name)
        (ctx / "Dockerfile").write_text(runtime_dockerfile(spec, [w.name for w in wheels]))
        argv = (
            engine.program,
            "build",
            *engine.build_runtime_args(),
            "-t",
            runtime,
            "-f",
            str(ctx / "Dockerfile"),
            str(ctx),
        )
        _run(Command(argv, f"build the runtime image {runtime}"), log, echo, environ)
    return ContainerResult(wheel, image_id, devel_tag(request.recipe), runtime, cached)
