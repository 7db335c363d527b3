"""``srcbuild work ls|clean``: what the work directory holds (checkouts, builds, environments,
toolchains, logs) with sizes and last use, and removing what is old or of one recipe."""

from __future__ import annotations

import click

from srcbuild.cli.common import json_option, path_options, print_json, resolve_paths
from srcbuild.console import echo_text, print_table
from srcbuild.errors import UsageError
from srcbuild.files import human_size
from srcbuild.work import WorkItem, age_label, now, parse_age, remove, scan, select


@click.group("work")
def work_group() -> None:
    """The work directory: sources, build trees, environments, toolchains and logs."""


def _rows(items: list[WorkItem], at: float) -> list[tuple[str, ...]]:
    return [
        (item.kind, item.recipe or "-", human_size(item.size), age_label(at - item.last_used), item.path.name)
        for item in items
    ]


@work_group.command("ls")
@path_options
@json_option
def ls_cmd(work_dir: str | None, cache_dir: str | None, as_json: bool) -> int:
    """Checkouts, build trees, environments, toolchains and logs, with sizes and last use."""
    paths = resolve_paths(work_dir, cache_dir)
    items = scan(paths)
    if as_json:
        print_json({"work_dir": str(paths.work_dir), "items": [i.to_json() for i in items]})
        return 0
    if not items:
        echo_text(f"nothing in {paths.work_dir}\n")
        return 0
    columns = ("kind", "recipe", "size", "last used", "name")
    print_table(f"srcbuild work: {paths.work_dir}", columns, _rows(items, now()))
    click.echo(f"{human_size(sum(i.size for i in items))} in all")
    return 0


@work_group.command("clean")
@click.option("--older-than", default=None, metavar="AGE", help="Only what was not used for AGE (30d, 12h, 2w).")
@click.option("--recipe", "recipe", default=None, help="Only the checkout, builds and environment of this recipe.")
@click.option("--all", "everything", is_flag=True, help="Every checkout, build and environment.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@path_options
@json_option
def clean_cmd(
    older_than: str | None,
    recipe: str | None,
    everything: bool,
    dry_run: bool,
    work_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> int:
    """Remove checkouts, build trees and environments (the git object cache and toolchains stay:
    `srcbuild toolchain gc` cleans those)."""
    if not (older_than or recipe or everything):
        raise UsageError(
            "work clean needs --older-than AGE, --recipe R or --all", "e.g. srcbuild work clean --older-than 30d"
        )
    paths = resolve_paths(work_dir, cache_dir)
    at = now()
    chosen = select(scan(paths), at, parse_age(older_than) if older_than else None, recipe)
    if not dry_run:
        remove(chosen, paths)
    if as_json:
        print_json({"removed" if not dry_run else "would_remove": [i.to_json() for i in chosen]})
        return 0
    verb = "would remove" if dry_run else "removed"
    for item in chosen:
        echo_text(f"{verb} {item.kind} {item.path} ({human_size(item.size)}, {age_label(at - item.last_used)})\n")
    click.echo(f"{verb} {len(chosen)} item(s), {human_size(sum(i.size for i in chosen))}")
    return 0
