"""``srcbuild knowledge scan``: read facts from upstream's wheels, print them as data-file rows with
their evidence, and with ``--check`` compare them with the shipped tables (exit 6 on a contradiction)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Optional

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
