"""Every setting is registered in ``srcbuild.settings`` and read through ``srcbuild.precedence``;
``srcbuild config show`` lists each with its value and origin.

The scan reads the source: a new ``SRCBUILD_*`` name anywhere in ``srcbuild/`` that is not
registered fails here, and so does a read of one (``environ.get``, ``environ[...]``, ``in environ``,
``os.getenv``) outside precedence, which is how a setting would escape ``config show``. The scan
follows literals, module constants and loops over literal names; a read through a name it cannot
follow (a loop over a table kept elsewhere) is not seen, so such tables are read with
``precedence.env_value`` too (``cache/netlimits.py``).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import srcbuild
from srcbuild import config
from srcbuild.cli import main
from srcbuild.precedence import Chosen, env_value, from_env, setting, shown
from srcbuild.settings import BY_VAR, NOT_SETTINGS, SETTINGS

ROOT = Path(srcbuild.__file__).parent
SOURCES = sorted(ROOT.rglob("*.py"))
# a name, not a pattern such as SRCBUILD_NET_* in prose
NAME = re.compile(r"\bSRCBUILD_[A-Z0-9_]*[A-Z0-9]\b(?!_?\*)")
# the modules that read settings: the one precedence, and the config file it reads from
READERS = {ROOT / "precedence.py", ROOT / "config.py"}


def _constants() -> dict[str, str]:
    """Module-level names bound to a SRCBUILD_* string anywhere in srcbuild (``ENV_VAR = "SRCBUILD_MIRROR"``)."""
    found: dict[str, str] = {}
    for path in SOURCES:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and node.value.value.startswith("SRCBUILD_")
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = node.value.value
    for path in SOURCES:  # and the names they are imported as (``import DIR_VAR as MIRROR_DIR_VAR``)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.asname and alias.name in found:
                        found[alias.asname] = found[alias.name]
    return found


CONSTANTS = _constants()


def _variable(node: ast.expr) -> str | None:
    """The SRCBUILD_* variable an expression names: a literal, or a name/attribute bound to one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("SRCBUILD_"):
        return node.value
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return CONSTANTS.get(name) if name else None


def _loop_names(tree: ast.AST) -> dict[str, str]:
    """Loop variables that run over SRCBUILD_* names (``for name in {"SRCBUILD_NET_TIMEOUT": ...}``)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        target = node.target if isinstance(node, (ast.For, ast.comprehension)) else None
        if isinstance(target, ast.Tuple) and target.elts:  # for name, (field, kind) in {...}.items()
            target = target.elts[0]
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(target, ast.Name):
            named = [
                n.value
                for n in ast.walk(node.iter)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("SRCBUILD_")
            ]
            if named:
                found[target.id] = named[0]
    return found


def _reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, variable) of each direct read of a SRCBUILD_* variable from a mapping."""
    out = []
    loops = _loop_names(tree)
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr in ("get", "getenv"):
                key = _variable(node.args[0])
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = _variable(node.slice)
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            key = _variable(node.left)
        if key is None and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            first = node.args[0]
            if node.func.attr in ("get", "getenv") and isinstance(first, ast.Name):
                key = loops.get(first.id)
        if key:
            out.append((node.lineno, key))
    return out


def test_every_srcbuild_name_in_the_code_is_a_setting_or_says_why_not() -> None:
    unknown = {
        f"{path.relative_to(ROOT.parent)}: {name}"
        for path in SOURCES
        for name in NAME.findall(path.read_text(encoding="utf-8"))
        if name not in BY_VAR and name not in NOT_SETTINGS
    }
    assert not unknown, "register each in srcbuild/settings.py (one Setting line): " + ", ".join(sorted(unknown))


def test_settings_are_read_only_through_precedence() -> None:
    direct = [
        f"{path.relative_to(ROOT.parent)}:{line}: {var}"
        for path in SOURCES
        if path not in READERS
        for line, var in _reads(ast.parse(path.read_text(encoding="utf-8")))
        if var in BY_VAR
    ]
    assert not direct, "read these with srcbuild.precedence (env_value, from_env, ...): " + ", ".join(direct)


def test_the_read_finder_finds_each_kind_of_read() -> None:
    code = (
        'A_VAR = "SRCBUILD_WORK_DIR"\n'
        'x = environ.get("SRCBUILD_MIRROR")\n'
        "y = os.environ[A_VAR]\n"
        'z = "SRCBUILD_DEBUG" in environ\n'
        'environ["SRCBUILD_REMOTES"] = "w"\n'
    )
    CONSTANTS.setdefault("A_VAR", "SRCBUILD_WORK_DIR")
    assert _reads(ast.parse(code)) == [(2, "SRCBUILD_MIRROR"), (3, "SRCBUILD_WORK_DIR"), (4, "SRCBUILD_DEBUG")]
    looped = 'for name in ("SRCBUILD_NET_TIMEOUT", "SRCBUILD_NET_DEADLINE"):\n    raw = environ.get(name, "")\n'
    assert _reads(ast.parse(looped)) == [(2, "SRCBUILD_NET_TIMEOUT")]


def test_registry_is_well_formed() -> None:
    assert len(BY_VAR) == len(SETTINGS)
    assert not set(BY_VAR) & set(NOT_SETTINGS)
    kinds = {"path", "paths", "list", "str", "bool", "int", "number"}
    for entry in SETTINGS:
        assert entry.var.startswith("SRCBUILD_") and entry.about and entry.kind in kinds, entry
    # every config file key is a registered setting, under the variable it stands for
    assert {s.key: (s.var, s.kind) for s in SETTINGS if s.key} == config.KEYS


def test_an_unregistered_variable_cannot_be_read() -> None:
    with pytest.raises(AssertionError, match="SRCBUILD_NOPE is not a registered setting"):
        env_value({"SRCBUILD_NOPE": "1"}, "SRCBUILD_NOPE")


def test_the_s3_endpoint_falls_back_to_aws_with_its_origin() -> None:
    assert setting("SRCBUILD_S3_ENDPOINT_URL").fallback == "AWS_ENDPOINT_URL"
    environ = {"AWS_ENDPOINT_URL": "http://aws"}
    chosen = from_env(environ, "SRCBUILD_S3_ENDPOINT_URL", str)
    assert chosen is not None and (chosen.value, chosen.origin) == ("http://aws", "environment AWS_ENDPOINT_URL")
    environ["SRCBUILD_S3_ENDPOINT_URL"] = "http://mine"
    assert env_value(environ, "SRCBUILD_S3_ENDPOINT_URL") == "http://mine"


def test_shown_hides_secrets() -> None:
    rows = {r.setting.var: r for r in shown({"SRCBUILD_DIST_TOKEN": "t0ps3cret", "SRCBUILD_MIRROR": "gitee"})}
    assert rows["SRCBUILD_DIST_TOKEN"].value == "(set, hidden)"
    assert (rows["SRCBUILD_MIRROR"].value, rows["SRCBUILD_MIRROR"].origin) == ("gitee", "environment SRCBUILD_MIRROR")
    assert (rows["SRCBUILD_REMOTES"].value, rows["SRCBUILD_REMOTES"].origin) == (None, "default")


def test_config_show_lists_every_setting_with_its_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for entry in SETTINGS:
        monkeypatch.delenv(entry.var, raising=False)
    file = tmp_path / "s.toml"
    file.write_text('remotes = ["/srv/wheels"]\nkeep_build = true\n', encoding="utf-8")
    monkeypatch.setenv("SRCBUILD_MIRROR", "gitee")
    monkeypatch.setenv("SRCBUILD_KEEP_BUILD", "0")  # the environment beats the file
    assert main(["--config", str(file), "config", "show", "--json"]) == 0
    rows = {r["variable"]: r for r in json.loads(capsys.readouterr().out)["settings"]}
    assert list(rows) == [s.var for s in SETTINGS]
    assert (rows["SRCBUILD_REMOTES"]["value"], rows["SRCBUILD_REMOTES"]["origin"]) == (
        "/srv/wheels",
        f"config file {file} (remotes)",
    )
    assert (rows["SRCBUILD_KEEP_BUILD"]["value"], rows["SRCBUILD_KEEP_BUILD"]["origin"]) == (
        "0",
        "environment SRCBUILD_KEEP_BUILD",
    )
    assert rows["SRCBUILD_MIRROR"]["origin"] == "environment SRCBUILD_MIRROR"
    assert (rows["SRCBUILD_NET_TIMEOUT"]["value"], rows["SRCBUILD_NET_TIMEOUT"]["default"]) == (None, "30")

    assert main(["--config", str(file), "config", "show"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # a path is never cut: one longer than the column (this test's own files under the temporary
    # directory, whose length depends on the machine) stands alone on its line, as in test_output_width
    too_wide = [line for line in lines if len(line) > 80 and len(line.split()) > 1]
    assert too_wide == [], lines
    assert any(line.split()[:3] == ["SRCBUILD_MIRROR", "gitee", "environment"] for line in lines), lines
    assert any(line.split()[:4] == ["SRCBUILD_REMOTES", "/srv/wheels", "config", "file"] for line in lines), lines


def test_list_keys_become_the_variables_their_readers_split(tmp_path: Path) -> None:
    text = 'toolchain_providers = ["debian", "redist"]\nchannel_mirrors = ["conda-forge=file:///srv/cf"]\n'
    variables = config.parse_config(text, "s.toml")
    from srcbuild.envs.channels import routing_from
    from srcbuild.toolchain.providers import provider_order

    assert provider_order(variables) == ("debian", "redist")
    assert routing_from(environ=variables).base_url("conda-forge") == "file:///srv/cf/"


def test_every_setting_is_documented() -> None:
    docs = ROOT.parent / "docs"
    text = (ROOT.parent / "README.md").read_text(encoding="utf-8") + "".join(
        path.read_text(encoding="utf-8") for path in sorted(docs.glob("*.md"))
    )
    assert [s.var for s in SETTINGS if not re.search(rf"\b{s.var}\b", text)] == []


# A value of the command line with the environment's under it, written ``option or env_value(...)``,
# keeps no origin: the command line, the environment, the config file and the default all read the
# same. Such a setting goes through ``precedence`` (``precedence(default, from_env(...), from_cli(...))``).
READS = {"env_value", "from_env"}


def _ad_hoc_fallbacks(tree: ast.AST) -> list[int]:
    """Lines of ``X or env_value(...)`` / ``X or from_env(...)``: a read of a setting that is not
    the first operand of an ``or`` (what comes before it is another source, its origin lost)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            for operand in node.values[1:]:
                call = operand
                if isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute)):
                    name = call.func.id if isinstance(call.func, ast.Name) else call.func.attr
                    if name in READS:
                        out.append(call.lineno)
    return out


def test_no_setting_falls_back_to_the_environment_without_its_origin() -> None:
    found = [
        f"{path.relative_to(ROOT.parent)}:{line}"
        for path in SOURCES
        if path.name != "precedence.py"
        for line in _ad_hoc_fallbacks(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not found, "decide these with srcbuild.precedence (precedence, from_env, from_cli): " + ", ".join(found)


def test_the_fallback_finder_finds_an_option_before_the_environment() -> None:
    code = (
        'a = given or env_value(environ, "SRCBUILD_SIGNING_KEY")\n'
        'b = env_value(environ, "SRCBUILD_INSTALLER") or "auto"\n'
        'c = x or y or precedence.from_env(environ, "SRCBUILD_WORK_DIR", Path)\n'
    )
    assert _ad_hoc_fallbacks(ast.parse(code)) == [1, 3]


def test_directories_remember_where_they_came_from(tmp_path: Path) -> None:
    from srcbuild.paths import Paths

    file = tmp_path / "s.toml"
    file.write_text(f'cache_dir = "{tmp_path / "c"}"\n', encoding="utf-8")
    environ = {"SRCBUILD_WORK_DIR": str(tmp_path / "w"), **config.parse_config(file.read_text(), str(file))}
    paths = Paths.resolve(environ=environ)
    assert paths.chosen("SRCBUILD_WORK_DIR").origin == "environment SRCBUILD_WORK_DIR"
    assert paths.chosen("SRCBUILD_CACHE_DIR") == from_env(environ, "SRCBUILD_CACHE_DIR", Path)
    assert paths.chosen("SRCBUILD_TOOLCHAIN_DIR").value == tmp_path / "w" / "toolchains"
    assert paths.origin("SRCBUILD_TOOLCHAIN_DIR") == "default"
    given = Paths.resolve(work_dir=tmp_path / "x", environ=environ)
    assert (given.work_dir, given.origin("SRCBUILD_WORK_DIR")) == (tmp_path / "x", "command line --work-dir")


def test_the_signing_key_s3_endpoint_and_mirror_dir_say_where_they_came_from(tmp_path: Path) -> None:
    from srcbuild.cache.remotes import RemoteOptions
    from srcbuild.cache.signing import signing_key_choice
    from srcbuild.cli.mirror_dir import mirror_dir_choice, said

    environ = {"SRCBUILD_CONFIG_DIR": str(tmp_path), "SRCBUILD_SIGNING_KEY": str(tmp_path / "k"),
               "AWS_ENDPOINT_URL": "http://aws", "SRCBUILD_MIRROR_DIR": "/srv/m"}
    assert signing_key_choice(None, {"SRCBUILD_CONFIG_DIR": str(tmp_path)}).origin == "default"
    assert signing_key_choice(None, environ).origin == "environment SRCBUILD_SIGNING_KEY"
    assert signing_key_choice("/x/key", environ).origin == "command line --signing-key"
    options = RemoteOptions.resolve(environ=environ)
    assert (options.s3_endpoint_url, options.s3_endpoint_origin) == ("http://aws", "environment AWS_ENDPOINT_URL")
    options = RemoteOptions.resolve("http://mine", environ=environ)
    assert (options.s3_endpoint_url, options.s3_endpoint_origin) == ("http://mine", "command line --s3-endpoint-url")
    assert said(mirror_dir_choice(None, environ)) == "the mirror directory /srv/m (environment SRCBUILD_MIRROR_DIR)"
    assert said(mirror_dir_choice("/other", environ)) == "--mirror-dir /other"
    assert mirror_dir_choice(None, {}) == Chosen(None, "default")


def test_config_show_takes_the_options_as_the_commands_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for entry in SETTINGS:
        monkeypatch.delenv(entry.var, raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("SRCBUILD_MIRROR_DIR", "/srv/m")
    monkeypatch.setenv("SRCBUILD_SIGNING_KEY", str(tmp_path / "env-key"))
    argv = ["config", "show", "--json", "--work-dir", str(tmp_path / "w"), "--mirror-dir", "/srv/other",
            "--s3-endpoint-url", "http://minio:9000"]
    assert main(argv) == 0
    rows = {r["variable"]: (r["value"], r["origin"]) for r in json.loads(capsys.readouterr().out)["settings"]}
    assert rows["SRCBUILD_WORK_DIR"] == (str(tmp_path / "w"), "command line --work-dir")
    assert rows["SRCBUILD_MIRROR_DIR"] == ("/srv/other", "command line --mirror-dir")  # over the environment
    assert rows["SRCBUILD_S3_ENDPOINT_URL"] == ("http://minio:9000", "command line --s3-endpoint-url")
    assert rows["SRCBUILD_SIGNING_KEY"] == (str(tmp_path / "env-key"), "environment SRCBUILD_SIGNING_KEY")
    assert rows["SRCBUILD_CACHE_DIR"] == (None, "default")
    assert main(["config", "show", "--json", "--work-dir", str(tmp_path / "w")]) == 0
    shown_rows = {r["variable"]: r for r in json.loads(capsys.readouterr().out)["settings"]}
    assert shown_rows["SRCBUILD_TOOLCHAIN_DIR"]["default"] == str(tmp_path / "w" / "toolchains")
