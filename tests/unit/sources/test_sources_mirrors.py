"""Mirror rules: parsing --mirror / SRCBUILD_MIRROR, git's longest-prefix rewrite, the gitee map."""

from __future__ import annotations

from pathlib import Path

import pytest

from srcbuild.errors import UsageError
from srcbuild.sources.mirrors import GITEE_MAP, MirrorRule, MirrorRules, parse_mirror_args, tomllib, url_transport

GITEE = "https://gitee.com/mirrors/"


def test_prefix_rule_covers_ssh_and_git_spellings() -> None:
    rules = parse_mirror_args(["https://github.com/=file:///srv/mirror/"], {})
    assert rules.git_config_args() == [
        "-c",
        "url.file:///srv/mirror/.insteadOf=https://github.com/",
        "-c",
        "url.file:///srv/mirror/.insteadOf=git@github.com:",
        "-c",
        "url.file:///srv/mirror/.insteadOf=ssh://git@github.com/",
        "-c",
        "url.file:///srv/mirror/.insteadOf=git://github.com/",
        "-c",
        "protocol.allow=never",
        "-c",
        "protocol.https.allow=always",
        "-c",
        "protocol.http.allow=always",
        "-c",
        "protocol.ssh.allow=always",
        "-c",
        "protocol.git.allow=always",
        "-c",
        "protocol.file.allow=always",
        "-c",
        "url.srcbuild-refused-local-url::.insteadOf=/",
        "-c",
        "url.srcbuild-refused-local-url::.insteadOf=file://",
    ]
    own = rules.git_config_args(own_urls=("/srv/own/pytorch", "https://github.com/pytorch/pytorch"))
    assert own[-6:-4] == ["-c", "url./srv/own/pytorch.insteadOf=/srv/own/pytorch"]  # the recipe's own local repo
    assert rules.rewrite("git@github.com:google/flatbuffers.git") == "file:///srv/mirror/google/flatbuffers.git"
    assert rules.rewrite("ssh://git@github.com/pytorch/fbgemm") == "file:///srv/mirror/pytorch/fbgemm"
    assert rules.rewrite("https://gitlab.com/libeigen/eigen.git") == "https://gitlab.com/libeigen/eigen.git"


def test_remote_mirror_needs_no_file_protocol() -> None:
    rules = parse_mirror_args(["https://github.com/=https://mirror.example/gh/"], {})
    assert "protocol.file.allow=always" not in rules.git_config_args()


def test_longest_prefix_wins_like_git() -> None:
    rules = parse_mirror_args(
        ["https://github.com/=https://a.example/", "https://github.com/NVIDIA/=https://b.example/nv/"], {}
    )
    assert rules.rewrite("https://github.com/NVIDIA/nccl") == "https://b.example/nv/nccl"
    assert rules.rewrite("https://github.com/google/benchmark.git") == "https://a.example/google/benchmark.git"


def test_later_rule_replaces_the_same_prefix() -> None:
    rules = parse_mirror_args(["https://github.com/=https://a.example/", "https://github.com/=https://b.example/"], {})
    assert [r.base for r in rules.rules if r.prefix == "https://github.com/"] == ["https://b.example/"]
    assert rules.rewrite("https://github.com/x/y") == "https://b.example/x/y"


def test_gitee_map_gives_one_rule_per_repository_and_spelling() -> None:
    rules = parse_mirror_args(["gitee"], {})
    assert rules.rewrite("https://github.com/pytorch/pytorch") == GITEE + "pytorch.git"
    assert rules.rewrite("https://github.com/pybind/pybind11.git") == GITEE + "pybind11.git"
    # upstream spells some submodules without .git (gloo, sleef, fbgemm, ...)
    assert rules.rewrite("https://github.com/facebookincubator/gloo") == GITEE + "gloo.git"
    assert rules.rewrite("https://github.com/pytorch/fbgemm") == GITEE + "fbgemm.git"
    # flatbuffers is an SSH URL in PyTorch's .gitmodules
    assert rules.rewrite("git@github.com:google/flatbuffers.git") == GITEE + "flatbuffers.git"
    # onnx's no-.git prefix must not swallow onnx-tensorrt
    assert rules.rewrite("https://github.com/onnx/onnx-tensorrt") == GITEE + "onnx-tensorrt.git"
    assert rules.rewrite("https://github.com/onnx/onnx.git") == GITEE + "onnx.git"
    args = rules.git_config_args()
    assert f"url.{GITEE}gloo.git.insteadOf=https://github.com/facebookincubator/gloo" in args
    assert f"url.{GITEE}gloo.git.insteadOf=https://github.com/facebookincubator/gloo.git" in args
    assert "protocol.file.allow=always" not in args


def test_gitee_map_rows_have_sources_and_never_capture_another_repository() -> None:
    data = tomllib.loads(GITEE_MAP.read_text())
    rows = data["repo"]
    assert len(rows) >= 40
    assert {row["source"] for row in rows} <= {"torchair", "tensorpipe", "layout"}
    rules = parse_mirror_args(["gitee"], {})
    for row in rows:
        for url in (f"https://github.com/{row['github']}", f"https://github.com/{row['github']}.git"):
            assert rules.rewrite(url) == f"{GITEE}{row['gitee']}.git", url


def test_srcbuild_mirror_is_the_default_and_command_line_replaces_it() -> None:
    env = {"SRCBUILD_MIRROR": "gitee, https://github.com/NVIDIA/=https://b.example/nv/"}
    from_env = parse_mirror_args([], env)
    assert from_env.rewrite("https://github.com/NVIDIA/apex") == "https://b.example/nv/apex"
    # a repository the gitee map names keeps its longer, per-repository rule (git: longest prefix wins)
    assert from_env.rewrite("https://github.com/NVIDIA/cutlass") == GITEE + "cutlass.git"
    assert from_env.rewrite("https://github.com/pybind/pybind11.git") == GITEE + "pybind11.git"
    assert from_env.rules[0].origin == "SRCBUILD_MIRROR gitee"
    explicit = parse_mirror_args(["https://github.com/=https://a.example/"], env)
    assert explicit.rewrite("https://github.com/pybind/pybind11.git") == "https://a.example/pybind/pybind11.git"
    assert parse_mirror_args(["none"], env) == MirrorRules()
    assert parse_mirror_args([], {}) == MirrorRules()


def test_space_and_comma_separated_items() -> None:
    rules = parse_mirror_args(["https://x.example/=https://y.example/ https://z.example/=https://w.example/"], {})
    assert rules.rewrite("https://z.example/a") == "https://w.example/a"
    assert rules.rewrite("https://x.example/a") == "https://y.example/a"


def test_unknown_mirror_name_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError) as err:
        parse_mirror_args(["giteee"], {})
    assert err.value.message == "--mirror: unknown mirror 'giteee'"
    assert err.value.hint == (
        "valid names: gitee, none; or a rule PREFIX=REPLACEMENT "
        "(e.g. https://github.com/=https://mirror.example/github/) or a mirror map file.toml"
    )
    with pytest.raises(UsageError) as err:
        parse_mirror_args([], {"SRCBUILD_MIRROR": "tsinghua"})
    assert err.value.message == "SRCBUILD_MIRROR: unknown mirror 'tsinghua'"


def test_rule_that_drops_the_slash_is_refused() -> None:
    with pytest.raises(UsageError) as err:
        parse_mirror_args(["https://github.com/=file:///srv/mirror"], {})
    assert err.value.hint == "add the slash: https://github.com/=file:///srv/mirror/"
    with pytest.raises(UsageError):
        parse_mirror_args(["https://github.com/="], {})


def test_relative_local_path_becomes_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rules = parse_mirror_args(["https://github.com/=mirror/"], {})
    assert rules.rewrite("https://github.com/a/b") == f"{tmp_path}/mirror/a/b"
    assert "protocol.file.allow=always" in rules.git_config_args()


def test_user_mirror_map_file(tmp_path: Path) -> None:
    mapping = tmp_path / "corp.toml"
    mapping.write_text('base = "https://git.corp.example/m/"\n[[repo]]\ngithub = "pytorch/pytorch"\ngitee = "torch"\n')
    rules = parse_mirror_args([str(mapping)], {})
    assert rules.rewrite("https://github.com/pytorch/pytorch.git") == "https://git.corp.example/m/torch.git"
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "x"\n[[repo]]\ngithub = "pytorch"\n')
    with pytest.raises(UsageError) as err:
        parse_mirror_args([str(bad)], {})
    assert err.value.message == f'{bad}: repo[0] needs github = "owner/name" and gitee = "name"'


def test_describe_and_json() -> None:
    rules = MirrorRules((MirrorRule("https://github.com/", "https://a.example/", "--mirror x"),))
    assert rules.describe() == ["https://github.com/ -> https://a.example/  (--mirror x)"]
    assert rules.to_json() == [{"prefix": "https://github.com/", "base": "https://a.example/", "origin": "--mirror x"}]
    assert not MirrorRules()


@pytest.mark.parametrize(
    ("url", "transport"),
    [
        ("https://github.com/", "https"), ("ssh://git@h/x", "ssh"), ("git@github.com:x", "ssh"),
        ("git+ssh://h/x", "ssh"), ("git://h/x", "git"), ("file:///srv/m/", "file"), ("/srv/m/", "file"),
        ("ext::sh -c touch% /tmp/pwned", "ext"), ("fd::0", "fd"), ("FD::3,4", "fd"), ("ftp://h/x", "ftp"),
    ],
)  # fmt: skip
def test_url_transport_as_git_decides_it(url: str, transport: str) -> None:
    assert url_transport(url) == transport


@pytest.mark.parametrize("base", ["fd::0", "ext::sh%-c%id", "ftp://mirror.example/"])
def test_mirror_rule_with_another_transport_is_refused_naming_the_url(base: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_mirror_args([f"https://github.com/={base}"], {})
    transport = url_transport(base)
    assert info.value.message == (
        f"--mirror: mirror {base!r} uses the {transport!r} transport; srcbuild fetches only over https, http, ssh, "
        "git, file"
    )


def test_mirror_map_with_another_transport_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "ext::sh -c id% "\n[[repo]]\ngithub = "a/b"\ngitee = "b"\n')
    with pytest.raises(UsageError) as info:
        parse_mirror_args([str(bad)], {})
    assert info.value.message.startswith(f"{bad}: mirror 'ext::sh -c id% ' uses the 'ext' transport")


@pytest.mark.parametrize("value", ["https://github.com/=file:///m/\ntouch /tmp/pwned", "gitee\x00"])
def test_mirror_value_with_a_control_character_is_refused(value: str) -> None:
    for args, env in (([value], {}), ([], {"SRCBUILD_MIRROR": value})):
        with pytest.raises(UsageError) as info:
            parse_mirror_args(args, env)
        assert "holds a control character" in info.value.message
        assert "\n" not in info.value.message
