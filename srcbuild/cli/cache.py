"""``srcbuild cache ls|show|verify|rm|gc|push|pull|index|serve|trust|key``: the wheel cache and its remotes."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.signing import TrustPolicy, signing_key_path
from srcbuild.cache.store import CacheEntry, WheelCache
from srcbuild.cache.transfer import Transfer, pull_entries, push_entries
from srcbuild.cli.common import (
    F,
    command_environ,
    json_option,
    open_remotes,
    path_options,
    print_json,
    remote_options,
    resolve_paths,
    trust_option,
)
from srcbuild.console import echo_text
from srcbuild.errors import UsageError
from srcbuild.files import human_size
from srcbuild.packages import pinned_packages
from srcbuild.precedence import env_value

if TYPE_CHECKING:
    from srcbuild.cache.index import EntrySummary


def signing_options(func: F) -> F:
    """``--signing-key`` (also SRCBUILD_SIGNING_KEY) and ``--unsigned``."""
    func = click.option("--unsigned", is_flag=True, help="Do not sign (pullers then need --trust-unsigned).")(func)
    func = click.option(
        "--signing-key",
        default=None,
        help="OpenSSH private key (or the .pub of an ssh-agent key) that signs the manifests "
        "[env SRCBUILD_SIGNING_KEY; default: CONFIG/signing-key].",
    )(func)
    return func


def resolve_signing_key(signing_key: str | None, unsigned: bool) -> Path | None:
    if unsigned:
        return None
    key = signing_key_path(signing_key, command_environ())
    if key is None:
        raise UsageError(
            "no signing key: pushed entries are signed so that others can trust them",
            "create one with `srcbuild cache key new`, or pass --signing-key KEY (or --unsigned)",
        )
    return key


def open_cache(work_dir: str | None, cache_dir: str | None) -> WheelCache:
    return WheelCache(resolve_paths(work_dir, cache_dir).cache_dir)


def kernels_label(manifest: Manifest) -> str:
    return kernels_text(manifest.sass, manifest.ptx, str(manifest.key_inputs.get("cuda") or ""))


def kernels_text(sass: Sequence[int], ptx: Sequence[int], cuda: str) -> str:
    """``3.5 3.7 +PTX 3.7``; ``CPU only`` for a build without CUDA, ``none measured`` otherwise."""
    sass_text = " ".join(f"{sm // 10}.{sm % 10}" for sm in sass)
    ptx_text = " ".join(f"{sm // 10}.{sm % 10}" for sm in ptx)
    if not sass_text and not ptx_text:
        return "CPU only" if not cuda else "none measured"
    return sass_text + (f" +PTX {ptx_text}" if ptx_text else "")


def age_label(created: float, now: float | None = None) -> str:
    seconds = max(0.0, (now or time.time()) - created)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def entry_row(entry: EntrySummary, now: float | None = None) -> dict[str, Any]:
    return {
        "package": entry.package,
        "version": entry.version,
        "recipe": entry.recipe,
        "compute_capabilities": kernels_text(entry.sass, entry.ptx, entry.cuda),
        "kernels": {"sass": list(entry.sass), "ptx": list(entry.ptx)},
        "size": entry.size,  # the entry on disk: wheel, manifest, logs
        "wheel_size": entry.wheel_size,
        "created": entry.created,
        "age": age_label(entry.created, now),
        "wheel": entry.wheel,
        "fingerprint": entry.fingerprint,
        "entry_key": entry.key,
        "path": entry.location,
    }


@click.group("cache")
def cache_group() -> None:
    """The wheel cache: list, inspect, verify, clean, share."""


@cache_group.command("ls")
@path_options
@json_option
def ls_cmd(work_dir: str | None, cache_dir: str | None, as_json: bool) -> int:
    """The cached wheels: package, version, recipe, kernels (compute capabilities), wheel size, age."""
    from srcbuild.cache.index import summaries

    cache = open_cache(work_dir, cache_dir)
    now = time.time()
    rows = [entry_row(e, now) for e in summaries(cache)]
    if as_json:
        print_json(rows)
        return 0
    if not rows:
        echo_text(f"no cached wheels in {cache.root}\n")
        return 0
    from srcbuild.console import print_table

    print_table(
        f"srcbuild cache: {cache.root}",
        ("key", "package", "version", "recipe", "kernels", "size", "age"),
        (
            (
                row["entry_key"][:12],
                row["package"],
                row["version"],
                row["recipe"],
                row["compute_capabilities"],
                human_size(row["wheel_size"]),
                row["age"],
            )
            for row in rows
        ),
    )
    return 0


def _one(cache: WheelCache, ref: str) -> CacheEntry:
    from srcbuild.cache.index import find

    matches = find(cache, ref)
    if not matches:
        raise UsageError(f"no cache entry matches {ref!r}", "list the entries with `srcbuild cache ls`")
    if len(matches) > 1:
        keys = ", ".join(e.key[:12] for e in matches)
        raise UsageError(f"{ref!r} matches {len(matches)} entries ({keys})", "give more of the entry key")
    return matches[0]


def _sources_label(m: Manifest) -> str:
    """``clean (tag plus patches)`` or ``MODIFIED: 2 file(s) (csrc/a.c, ...), diff 1a2b3c4d5e6f``."""
    if not m.modified:
        return "clean (tag plus patches)"
    files = m.changed_files
    shown = ", ".join(files[:2]) + (", ..." if len(files) > 2 else "")
    diff = str(m.changes.get("diff_sha256") or dict(m.resolved.get("extra") or {}).get("source_diff") or "-")
    return f"MODIFIED: {len(files)} file(s) ({shown}), diff {diff[:12]}"


@cache_group.command("add")
@click.argument("wheel", type=click.Path(dir_okay=False))
@click.option("--recipe", "recipe_name", default=None, help="Check it runs on this recipe's GPUs (its gpu.arch).")
@click.option("--arch", "arch", multiple=True, help="Or the compute capabilities it must run on (repeat, or 3.5,3.7).")
@click.option("--source", default=None, help="Where it came from: the URL it was downloaded from [default: by hand].")
@path_options
@json_option
def add_cmd(
    wheel: str,
    recipe_name: str | None,
    arch: tuple[str, ...],
    source: str | None,
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Add a wheel srcbuild did not build (by hand, or downloaded): verified against the GPUs it is
    for, stored with where it came from, never keyed as srcbuild's build of a recipe."""
    from srcbuild.cache.add import add_wheel
    from srcbuild.capability import ComputeCapability
    from srcbuild.recipe import RecipeCatalog

    if recipe_name and arch:
        raise UsageError("give --recipe or --arch, not both", "--recipe checks the recipe's gpu.arch")
    paths = resolve_paths(work_dir, cache_dir)
    recipe = RecipeCatalog(paths).load(recipe_name) if recipe_name else None
    ccs = []
    for text in (part.strip() for value in arch for part in value.split(",") if part.strip()):
        try:
            ccs.append(ComputeCapability.parse(text))
        except ValueError as exc:
            raise UsageError(f"--arch {text!r}: {exc}", "write it like 3.7 or 6.1") from None
    entry = add_wheel(WheelCache(paths.cache_dir), Path(wheel), recipe, ccs, source)
    if as_json:
        print_json({**entry.manifest.to_json(), "path": str(entry.path)})
        return 0
    m = entry.manifest
    checked = f"recipe {recipe.name}'s GPUs" if recipe is not None else f"compute capability {', '.join(map(str, ccs))}"
    echo_text(
        f"added {m.wheel} ({entry.key[:12]}): runs on {checked}; kernels {kernels_label(m)}\n"
        f"push it like any entry: srcbuild cache push --remote R {entry.key[:12]}\n"
    )
    return 0


def _provenance_label(m: Manifest) -> str:
    """``added, downloaded from URL; checked for recipe R`` for a wheel srcbuild did not build."""
    found = dict(m.extra.get("provenance") or {})
    checked = dict(found.get("checked_for") or {})
    what = f"recipe {checked['recipe']}" if checked.get("recipe") else "compute capability " + ", ".join(
        checked.get("arch") or ()
    )
    source = f" from {found['source']}" if found.get("source") else ""
    return f"added ({found.get('how', 'by hand')}{source}), not built by srcbuild; checked for {what}"


@cache_group.command("show")
@click.argument("ref")
@path_options
@json_option
def show_cmd(ref: str, work_dir: str | None, cache_dir: str | None, as_json: bool) -> int:
    """One entry's manifest; REF is an entry key or fingerprint prefix, or a wheel file name."""
    entry = _one(open_cache(work_dir, cache_dir), ref)
    m = entry.manifest
    if as_json:
        print_json({**m.to_json(), "path": str(entry.path)})
        return 0
    click.echo(f"{m.wheel}")
    lines = [
        ("package", f"{m.package} {m.version}"),
        ("recipe", m.recipe_name),
        ("kernels", kernels_label(m)),
        ("sha256", m.sha256),
        ("size", human_size(m.size)),
        ("fingerprint", m.fingerprint),
        ("entry key", entry.key),
        ("platform", str(m.key_inputs.get("platform", "-"))),
        ("toolchain", ", ".join(f"{k} {v}" for k, v in m.toolchain.items()) or "-"),
        ("source commit", str(m.resolved.get("source_commit") or "-")),
        ("sources", _sources_label(m)),
        *((("origin", _provenance_label(m)),) if m.extra.get("provenance") else ()),
        ("created", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.created))),
        ("path", str(entry.path)),
    ]
    # labels of 14 columns leave 66 for a value: a sha256 (64) stays on its line in 80 columns
    echo_text("".join(f"{label + ':':15}{value}\n" for label, value in lines))
    return 0


@cache_group.command("verify")
@click.option("--remove", is_flag=True, help="Remove the damaged entries.")
@path_options
@json_option
def verify_cmd(remove: bool, work_dir: str | None, cache_dir: str | None, as_json: bool) -> int:
    """Re-hash every cached wheel against its manifest (exit 7 when one is damaged)."""
    from srcbuild.cache.maintenance import verify_store  # imported by the commands that use it
    result = verify_store(open_cache(work_dir, cache_dir), remove=remove)
    if as_json:
        print_json(result.to_json())
    else:
        for problem in result.problems:
            click.echo(f"{'removed' if problem.removed else 'damaged'}  {problem.message}")
        click.echo(f"{result.checked} entries checked, {len(result.problems)} damaged")
        if result.problems and not remove:
            click.echo("hint: remove them with `srcbuild cache verify --remove`")
    return 0 if result.ok or remove else 7


@cache_group.command("rm")
@click.argument("refs", nargs=-1, required=True)
@path_options
def rm_cmd(refs: tuple[str, ...], work_dir: str | None, cache_dir: str | None) -> int:
    """Remove entries; each REF is an entry key or fingerprint prefix, or a wheel file name."""
    cache = open_cache(work_dir, cache_dir)
    targets: dict[Path, CacheEntry] = {}
    for ref in refs:
        matches = cache.find(ref)
        if not matches:
            raise UsageError(f"no cache entry matches {ref!r}", "list the entries with `srcbuild cache ls`")
        targets.update((e.path, e) for e in matches)
    for entry in targets.values():
        cache.remove(entry)
        click.echo(f"removed {entry.key[:12]}  {entry.manifest.wheel}")
    return 0


@cache_group.command("gc")
@click.option("--keep", type=int, default=None, help="Keep the newest N entries.")
@click.option("--max-size", default=None, help="Keep the newest entries that fit in this size (e.g. 10G).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed.")
@path_options
@json_option
def gc_cmd(
    keep: int | None, max_size: str | None, dry_run: bool, work_dir: str | None, cache_dir: str | None, as_json: bool
) -> int:
    """Remove the oldest entries beyond --keep N or --max-size SIZE (and stale staging files)."""
    from srcbuild.cache.maintenance import gc, parse_size  # imported by the commands that use it
    if keep is None and max_size is None:
        raise UsageError("gc needs --keep N or --max-size SIZE", "e.g. `srcbuild cache gc --keep 5`")
    result = gc(open_cache(work_dir, cache_dir), keep, parse_size(max_size) if max_size else None, dry_run)
    if as_json:
        print_json(result.to_json())
        return 0
    verb = "would remove" if dry_run else "removed"
    for entry in result.removed:
        echo_text(f"{verb} {entry.key[:12]}  {entry.wheel}\n")
    click.echo(f"{verb} {len(result.removed)} entries ({human_size(result.freed)}), kept {result.kept}")
    return 0


def _print_transfers(results: list[Transfer], as_json: bool) -> int:
    if as_json:
        print_json([r.to_json() for r in results])
    else:
        for r in results:
            if r.action == "unusable":  # an entry the remote's listing left out: hostile or damaged
                echo_text(f"warning: {r.remote}: entry {r.wheel} left out: {r.detail}\n", stderr=True)
                continue
            echo_text(f"{r.action:9}{r.wheel}  ({r.entry_key[:12]})" + (f": {r.detail}" if r.detail else "") + "\n")
        actions = ("sent", "fetched", "present", "rejected", "unusable", "refused", "skipped")
        counts = {a: sum(r.action == a for r in results) for a in actions}
        click.echo(", ".join(f"{n} {a}" for a, n in counts.items() if n) or "nothing to transfer")
    if any(r.action in ("rejected", "unusable") for r in results):
        return 7
    return 2 if any(r.action == "refused" for r in results) else 0


def allow_modified_option(func: F) -> F:
    return click.option(
        "--allow-modified",
        is_flag=True,
        help="Also take entries built from sources with local modifications (cache show lists the files).",
    )(func)


@cache_group.command("push")
@click.argument("refs", nargs=-1)
@signing_options
@allow_modified_option
@remote_options
@path_options
@json_option
def push_cmd(
    refs: tuple[str, ...],
    signing_key: str | None,
    unsigned: bool,
    allow_modified: bool,
    remotes: tuple[str, ...],
    s3_endpoint_url: str | None,
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Sign and send entries (all, or those matching REFS) to each --remote.

    An entry built from modified sources is refused (exit 2) unless --allow-modified."""
    key = resolve_signing_key(signing_key, unsigned)
    cache = open_cache(work_dir, cache_dir)
    entries = list(cache.entries())
    if refs:
        entries = [e for ref in refs for e in (cache.find(ref) or _no_match(ref))]
    results: list[Transfer] = []
    for remote in open_remotes(remotes, s3_endpoint_url, required=True):
        remote.check(for_push=True)
        results.extend(push_entries(entries, remote, key, allow_modified))
    return _print_transfers(results, as_json)


def _no_match(ref: str) -> list[CacheEntry]:
    raise UsageError(f"no cache entry matches {ref!r}", "list the entries with `srcbuild cache ls`")


@cache_group.command("pull")
@click.option("--recipe", "recipe_name", default=None, help="Only the wheels of this recipe (each package it pins).")
@click.option("--fingerprint", "fp", default=None, help="Only entries of this fingerprint.")
@trust_option
@allow_modified_option
@remote_options
@path_options
@json_option
def pull_cmd(
    recipe_name: str | None,
    fp: str | None,
    trust_unsigned: bool,
    allow_modified: bool,
    remotes: tuple[str, ...],
    s3_endpoint_url: str | None,
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Fetch the entries of each --remote that the local cache lacks (signature and sha256 checked)."""
    trust = TrustPolicy.resolve(trust_unsigned, environ=command_environ())
    if fp is not None and not re.fullmatch(r"[0-9a-f]{64}", fp):
        raise UsageError(
            f"--fingerprint {fp[:80]!r} is not a fingerprint (64 hex digits)",
            "copy it from `srcbuild cache show REF` or `srcbuild cache ls --json`",
        )
    cache = open_cache(work_dir, cache_dir)
    fingerprints: list[str | None] = [fp]
    fits_here = None
    if recipe_name is not None:  # a recipe's wheels: those that run on this machine (cache.fit)
        from srcbuild.cache.fit import Machine, fits
        from srcbuild.resolve.request import request_fingerprint

        machine = Machine.host(command_environ())

        def fits_here(manifest: Manifest) -> bool:
            return fits(manifest, machine)

        from srcbuild.recipe import RecipeCatalog

        recipe = RecipeCatalog(resolve_paths(work_dir, cache_dir)).load(recipe_name)
        packages = pinned_packages(recipe)
        fingerprints = [request_fingerprint(recipe, package, command_environ()) for package in packages]
    results: list[Transfer] = []
    for remote in open_remotes(remotes, s3_endpoint_url, required=True):
        remote.check()
        for wanted in fingerprints:
            results.extend(pull_entries(cache, remote, trust, wanted, allow_modified, fits_here))
    return _print_transfers(results, as_json)


def _note_unsigned(key: Path | None, as_json: bool) -> None:
    if key is None and not as_json:
        echo_text(
            "note: no signing key, so the index is unsigned: srcbuild pulls from it need --trust-unsigned "
            "(pass --signing-key KEY to sign it)\n",
            stderr=True,
        )


@cache_group.command("index")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Where to write it [default: CACHE/index].")
@signing_options
@path_options
@json_option
def index_cmd(
    out: str | None, signing_key: str | None, unsigned: bool, work_dir: str | None, cache_dir: str | None, as_json: bool
) -> int:
    """Write a signed PEP 503 simple index of the cache (pip install --index-url DIR-URL/simple/)."""
    from srcbuild.cache.simple_index import write_index

    key = None if unsigned else signing_key_path(signing_key, command_environ())
    cache = open_cache(work_dir, cache_dir)
    target = Path(out) if out else cache.root / "index"
    wheels = write_index(cache, target.resolve(), key)
    _note_unsigned(key, as_json)
    if as_json:
        print_json({"out": str(target), "wheels": [w.filename for w in wheels]})
        return 0
    for w in wheels:
        click.echo(f"  {w.filename}")
    click.echo(f"wrote a simple index of {len(wheels)} wheels to {target / 'simple'}")
    return 0


@cache_group.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8080, show_default=True, help="Port (0 picks a free one).")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Index directory [default: CACHE/index].")
@signing_options
@path_options
def serve_cmd(
    host: str,
    port: int,
    out: str | None,
    signing_key: str | None,
    unsigned: bool,
    work_dir: str | None,
    cache_dir: str | None,
) -> int:
    """Write the signed simple index, then serve it over HTTP until Ctrl-C."""
    from srcbuild.cache.simple_index import make_server, write_index

    key = None if unsigned else signing_key_path(signing_key, command_environ())
    cache = open_cache(work_dir, cache_dir)
    target = (Path(out) if out else cache.root / "index").resolve()
    wheels = write_index(cache, target, key)
    _note_unsigned(key, False)
    try:
        log = bool(env_value(command_environ(), "SRCBUILD_SERVE_LOG"))
        server = make_server(target, host, port, log_requests=log)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}", "choose another --port") from None
    address = server.server_address
    bound_host = address[0].decode() if isinstance(address[0], bytes) else str(address[0])
    bound_port = int(address[1])
    click.echo(f"serving {len(wheels)} wheels from {target} at http://{bound_host}:{bound_port}/simple/")
    click.echo(f"  pip install --index-url http://{bound_host}:{bound_port}/simple/ <package>==<version>")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


from srcbuild.cli.cache_trust import key_group, trust_group  # noqa: E402

cache_group.add_command(trust_group)
cache_group.add_command(key_group)
