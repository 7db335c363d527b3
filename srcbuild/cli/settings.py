"""``srcbuild config show``: every setting (``srcbuild.settings``) with its value and where that
value came from (default, the config file, the environment; the command line for the options it
takes, decided as the commands that take them decide them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from srcbuild.cli.common import command_environ, json_option, path_options, print_json
from srcbuild.console import print_table
from srcbuild.precedence import Chosen


@click.group("config")
def config_group() -> None:
    """The settings: SRCBUILD_* variables and srcbuild.toml keys, with their values and origins."""


def _defaults(environ: Mapping[str, str], work_dir: str | None = None) -> dict[str, str]:
    """The defaults that are files and directories of this machine, as paths rather than words: as
    the commands resolve them (``srcbuild.precedence``), from the other settings where they follow
    one (the toolchain directory in the work directory, the signing key in the config directory)."""
    from srcbuild.cache.signing import signing_key_choice, trusted_signers_path
    from srcbuild.config import default_config_path
    from srcbuild.paths import Paths, default_config_dir

    paths = Paths.resolve(work_dir, environ=environ)
    key = signing_key_choice(None, {k: v for k, v in environ.items() if k != "SRCBUILD_SIGNING_KEY"}).value
    return {
        "SRCBUILD_WORK_DIR": str(paths.work_dir),
        "SRCBUILD_CACHE_DIR": str(paths.cache_dir),
        "SRCBUILD_TOOLCHAIN_DIR": str(paths.toolchain_dir),
        "SRCBUILD_CONFIG": str(default_config_path()),
        "SRCBUILD_CONFIG_DIR": str(default_config_dir({})),
        "SRCBUILD_SIGNING_KEY": f"{key}" + ("" if key.is_file() else " (none there yet)"),
        "SRCBUILD_TRUSTED_SIGNERS": str(trusted_signers_path({k: v for k, v in environ.items()
                                                              if k != "SRCBUILD_TRUSTED_SIGNERS"})),
    }


def _given(environ: Mapping[str, str], options: dict[str, str | None]) -> dict[str, Chosen[str]]:
    """The settings the command-line options name, decided as a command with the same options
    decides them (``srcbuild.precedence``): value and origin, by variable."""
    from srcbuild.cache.remotes import RemoteOptions
    from srcbuild.cache.signing import signing_key_choice
    from srcbuild.cli.mirror_dir import mirror_dir_choice
    from srcbuild.paths import Paths

    paths = Paths.resolve(options["work_dir"], options["cache_dir"], environ=environ)
    remote = RemoteOptions.resolve(options["s3_endpoint_url"], environ=environ)
    mirror = mirror_dir_choice(options["mirror_dir"], dict(environ))
    key = signing_key_choice(options["signing_key"], environ)
    chosen: list[tuple[str, Chosen[Any]]] = [
        *((var, paths.chosen(var)) for var in ("SRCBUILD_WORK_DIR", "SRCBUILD_CACHE_DIR", "SRCBUILD_TOOLCHAIN_DIR")),
        ("SRCBUILD_S3_ENDPOINT_URL", Chosen(remote.s3_endpoint_url, remote.s3_endpoint_origin)),
        ("SRCBUILD_MIRROR_DIR", mirror),
        ("SRCBUILD_SIGNING_KEY", key),
    ]
    return {var: Chosen(str(c.value), c.origin) for var, c in chosen if c.origin.startswith("command line")}


@config_group.command("show")
@path_options
@click.option("--mirror-dir", default=None, help="As a command given --mirror-dir DIR would take it.")
@click.option("--signing-key", default=None, help="As cache push given --signing-key KEY would take it.")
@click.option("--s3-endpoint-url", default=None, help="As a command given --s3-endpoint-url URL would take it.")
@json_option
def show_cmd(as_json: bool, **options: str | None) -> int:
    """Every setting, its value and where it came from (default, config file, environment, or the
    command line for the options given here, as a command given them takes them)."""
    from srcbuild.precedence import Shown, shown

    environ = command_environ()
    given = _given(environ, options)
    rows = [Shown(r.setting, given[r.setting.var].value, given[r.setting.var].origin)
            if r.setting.var in given else r for r in shown(environ)]
    defaults = _defaults(environ, options["work_dir"])
    if as_json:
        settings = [
            {
                "variable": r.setting.var,
                "key": r.setting.key,
                "value": r.value,
                "default": defaults.get(r.setting.var, r.setting.default),
                "origin": r.origin,
                "about": r.setting.about,
            }
            for r in rows
        ]
        print_json({"settings": settings})
        return 0
    table = [
        (r.setting.var, r.value if r.value is not None else defaults.get(r.setting.var, r.setting.default), r.origin)
        for r in rows
    ]
    print_table("srcbuild settings (config show --json adds what each does)", ("variable", "value", "origin"), table)
    return 0
