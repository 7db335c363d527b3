"""``srcbuild knowledge scan``: read facts from upstream's wheels, print them as data-file rows with
their evidence, and with ``--check`` compare them with the shipped tables (exit 6 on a contradiction)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Callable, Optional

import click

from srcbuild.cli.common import command_environ, json_option, print_json, resolve_paths
from srcbuild.errors import UsageError, VerificationFailed


@click.group("knowledge")
def knowledge_group() -> None:
    """The compatibility knowledge: facts read from upstream's wheels, checked against the tables."""


@knowledge_group.command("scan")
@click.argument("wheels", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--fetch", "specs", multiple=True, metavar="PROJECT==VERSION", help="Download a wheel to read (repeatable)."
)
@click.option(
    "--dest", type=click.Path(file_okay=False), default=None, help="Where fetched wheels go [default: <work dir>/scan]."
)
@click.option(
    "--python", "python", default=None, metavar="X.Y", help="Fetch the wheel for this Python (pip --python-version)."
)
@click.option(
    "--platform", "platforms", multiple=True, metavar="TAG", help="Fetch the wheel for this platform tag (repeatable)."
)
@click.option(
    "--index-url", default=None, help="Fetch from this index (e.g. PyTorch's per-CUDA index) instead of pip's."
)
@click.option("--check", is_flag=True, help="Compare with the shipped tables; exit 6 on a contradiction.")
@json_option
def scan_command(
    wheels: tuple[str, ...],
    specs: tuple[str, ...],
    dest: Optional[str],
    python: Optional[str],
    platforms: tuple[str, ...],
    index_url: Optional[str],
    check: bool,
    as_json: bool,
) -> int:
    """Read torch, torchvision, cuDNN, NCCL and nvcc wheels (files, or --fetch PROJECT==VERSION from
    the index pip uses) and print what they state as rows of the knowledge tables, with the file, its
    sha256 and the date read as evidence."""
    from srcbuild.factscan.compare import CONTRADICTS
    from srcbuild.factscan.compare import check as compare
    from srcbuild.factscan.fetch import fetch
    from srcbuild.factscan.read import scan_wheel
    from srcbuild.factscan.rows import render
    from srcbuild.knowledge import load_knowledge

    if not wheels and not specs:
        raise UsageError("knowledge scan: no wheel to read", "pass wheel files, or --fetch torch==2.15.0")
    paths = [Path(w) for w in wheels]
    if specs:
        target = Path(dest) if dest else resolve_paths().work_dir / "scan"
        environ = command_environ()
        for spec in specs:
            paths.append(fetch(spec, target, environ, python=python, platforms=platforms, index_url=index_url))
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    kb = load_knowledge()
    results = []
    for path in paths:
        facts = scan_wheel(path, today)
        results.append((facts, compare(kb, facts) if check else []))
    contradictions = [c for _, comparisons in results for c in comparisons if c.status == CONTRADICTS]
    if as_json:
        print_json(
            {
                "ok": not contradictions,
                "wheels": [
                    {**facts.to_json(), "rows": render(facts), "checks": [c.to_json() for c in comparisons]}
                    for facts, comparisons in results
                ],
                "contradictions": len(contradictions),
            }
        )
    else:
        for index, (facts, comparisons) in enumerate(results):
            if index:
                click.echo()
            for line in render(facts):
                click.echo(line)
            for comparison in comparisons:
                click.echo(f"# {comparison.line()}")
    if check:
        agreed = sum(1 for _, cs in results for c in cs if c.status != CONTRADICTS)
        if contradictions:
            first = contradictions[0]
            more = f" (and {len(contradictions) - 1} more)" if len(contradictions) > 1 else ""
            raise VerificationFailed(
                f"{first.file}: {first.table} {first.row} {first.fact} is {first.shipped}, "
                f"the binary says {first.binary}{more}",
                "correct the table from the binary (its row above carries the evidence), or check the wheel",
            )
        if not as_json:
            click.echo(f"# {agreed} shipped facts checked against {len(results)} wheel(s): no contradiction")
    return 0


@knowledge_group.command("refresh")
@click.option("--dry-run", is_flag=True, help="List what is new and what would be downloaded; change nothing.")
@click.option(
    "--max-download",
    type=click.IntRange(min=0),
    default=512,
    show_default=True,
    metavar="MIB",
    help="Download at most this much in all; a row that needs more is left as a named gap.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write the rows into the data files here [default: srcbuild's own knowledge data].",
)
@click.option(
    "--dest",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep the wheels read here [default: a directory under the work dir, removed after reading].",
)
@json_option
def refresh_command(
    dry_run: bool, max_download: int, data_dir: Optional[str], dest: Optional[str], as_json: bool
) -> int:
    """Ask the package index pip is configured with for torch, torchvision, torchaudio, nvcc, cuDNN
    and NCCL releases newer than the knowledge tables; read the wheels that settle their rows (ptxas
    targets, host gcc bounds, library GPUs) and write those rows into the data files, printed as a
    diff, with what no binary states named as gaps."""
    import sys

    from srcbuild import tables
    from srcbuild.ext.source import pip_indexes
    from srcbuild.factscan import refresh
    from srcbuild.factscan.index import project_files, read_metadata
    from srcbuild.factscan.read import scan_wheel

    directory = Path(data_dir) if data_dir else tables.DATA_DIR
    if not (directory / "cuda.toml").is_file():
        raise UsageError(f"--data-dir {directory}: no cuda.toml there", "name a copy of srcbuild's knowledge data")
    environ = command_environ()
    indexes = pip_indexes(sys.executable, environ)
    listings = {item.project: project_files(item.project, indexes) for item in refresh.TRACKED}
    listings[refresh.CRT] = project_files(refresh.CRT, indexes)
    data = {
        name: tables.read_table(name, directory)
        for name in ("torch", "cuda", "cudnn", "nccl", "torchaudio", "capabilities")
        if (directory / f"{name}.toml").is_file()
    }
    capabilities = {
        str(int(float(row["cc"]) * 10 + 0.5)) for row in data["capabilities"].get("capability", [])
    }
    found = refresh.plan(data, listings, capabilities)
    total = sum(n.read_bytes for n in found.new)
    if dry_run:
        if as_json:
            print_json({**found.to_json(), "download_bytes": total, "index_count": len(indexes)})
            return 0
        _print_plan(found, total)
        return 0
    import shutil
    import tempfile

    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    work = resolve_paths().work_dir
    if dest is None:
        work.mkdir(parents=True, exist_ok=True)
    # without --dest the wheels go to a directory of their own, removed once read (NCCL: 300 MB each)
    target = Path(dest) if dest else Path(tempfile.mkdtemp(prefix="refresh-", dir=work))
    try:
        settled = refresh.settle(
            found,
            _fetcher(target),
            lambda path: scan_wheel(path, today),
            max_download << 20,
            capabilities,
            _gcc_floor(data["cuda"]),
            read_metadata,
        )
    finally:
        if dest is None:
            shutil.rmtree(target, ignore_errors=True)
    changes = _write(directory, settled, found, today)
    if as_json:
        print_json(
            {
                **found.to_json(),
                "written": [{"table": t, "row": r} for t, r in settled.rows],
                "gaps": [{"release": r, "gap": g} for r, g in settled.gaps],
                "unread": [{"release": r, "why": w} for r, w in settled.unread],
                "stated": [{"release": r, "fact": f} for r, f in settled.stated],
                "paired": [{"package": p, "torch": t, "release": r} for p, t, r in settled.pairings],
                "diff": changes,
            }
        )
        return 0
    _print_plan(found, total)
    for line in changes:
        click.echo(line)
    for release, fact in settled.stated:
        click.echo(f"read: {release}: {fact}")
    for release, why in settled.unread:
        click.echo(f"not read: {release}: {why} (rerun with a larger --max-download)")
    for release, gap in settled.gaps:
        click.echo(f"gap: {release}: {gap}")
    return 0


def _gcc_floor(cuda: dict[str, Any]) -> tuple[int, str] | None:
    """(min_gcc, version) of the newest CUDA row that states a host gcc floor."""
    rows = [r for r in cuda.get("cuda", []) if r.get("min_gcc") is not None]
    if not rows:
        return None
    newest = max(rows, key=lambda r: tuple(int(p) for p in str(r["version"]).split(".")))
    return int(newest["min_gcc"]), str(newest["version"])


def _fetcher(target: Path) -> Callable[[Any], Path]:
    import sys

    from srcbuild.errors import CacheIntegrityError
    from srcbuild.toolchain.download import Artifact, Downloader

    downloader = Downloader(target, stream=sys.stderr)  # the download progress, beside the diff on stdout

    def fetch(found: Any) -> Path:
        if not found.sha256:
            raise CacheIntegrityError(
                f"{found.url}: the index gives no sha256 for {found.filename}, so it is not downloaded",
                "use an index that lists sha256 digests (PEP 503 #sha256= fragments or PEP 691 hashes)",
            )
        fetched = downloader.fetch(Artifact(found.url, found.sha256, found.size))
        named = fetched.path.with_name(found.filename)  # the readers take the project from the file name
        if not named.exists():
            named.hardlink_to(fetched.path)
        return named

    return fetch


def _print_plan(found: Any, total: int) -> None:
    from srcbuild.files import human_size

    if not found.new:
        click.echo("Nothing new: the knowledge tables know every release the index lists.")
    for item in found.new:
        when = f" (uploaded {item.uploaded})" if item.uploaded else ""
        click.echo(f"new: {item.project} {item.name}{when}: {' '.join(item.versions)}")
        for wheel in item.read:
            size = human_size(wheel.size) if wheel.size is not None else "size not listed"
            click.echo(f"  read {wheel.filename} ({size})")
        if item.metadata_of is not None:
            click.echo(f"  read the METADATA of {item.metadata_of.filename} (in place, not downloaded)")
        if item.gaps:
            click.echo(f"  gaps: {', '.join(item.gaps)}")
    for note in found.notes:
        click.echo(f"note: {note}")
    if found.new:
        click.echo(f"To download: {human_size(total)}")


def _write(directory: Path, settled: Any, found: Any, today: str) -> list[str]:
    """Append the settled rows to their data files and record what the index listed; the diff."""
    from srcbuild.factscan import refresh

    out: list[str] = []
    tables_written: dict[str, list[str]] = {}
    for table, row in settled.rows:
        tables_written.setdefault(table, []).append(row)
    for table, rows in tables_written.items():
        path = directory / f"{table}.toml"
        before = path.read_text(encoding="utf-8") if path.is_file() else _new_table_head(table)
        after = refresh.insert_rows(before, table, rows)
        out += refresh.diff(f"{table}.toml", before if path.is_file() else "", after)
        _replace(path, after)
    if settled.pairings:
        path = directory / "torch.toml"
        before = path.read_text(encoding="utf-8")
        after = before
        for package, torch, release in settled.pairings:
            paired = refresh.add_pairing(after, package, torch, release)
            if paired is None:
                out.append(f"# {package} {release} pairs with torch {torch}, which has no row: add the row by hand")
                continue
            after = paired
        out += refresh.diff("torch.toml", before, after)
        _replace(path, after)
    record = directory / "index.toml"
    before = record.read_text(encoding="utf-8") if record.is_file() else ""
    after = refresh.record_text(before, today, found.newest)
    out += refresh.diff("index.toml", before, after)
    _replace(record, after)
    return out


def _new_table_head(table: str) -> str:
    return (
        f"# {table} releases, one row per line, written by `srcbuild knowledge refresh`.\n"
        "# - cuda: the CUDA majors a build of the line exists for (\"12.x\": one build for every 12 minor).\n"
        "# - lowest_cc: per CUDA major, the lowest compute capability every library carries SASS for.\n"
        "# - gaps: what no source read so far states.\n"
    )


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a temporary file renamed over it)."""
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
