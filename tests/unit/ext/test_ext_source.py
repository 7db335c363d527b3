"""Extension requirements and picking the sdist from an index's simple page."""

from __future__ import annotations

import json

import pytest

from srcbuild.errors import UsageError
from srcbuild.ext.source import (
    is_commit,
    page_files,
    parse_pip_config,
    parse_requirement,
    pick_sdist,
    sdist_version,
)

SHA = "69b3aa435f2424ac6a1bfb6ff702da6eb73b33ca0db38fb26989c74159258e47"


def test_a_name_with_a_version() -> None:
    req = parse_requirement("Torch_Scatter==2.1.2")
    assert (req.name, req.specifier, req.is_git) == ("torch-scatter", "==2.1.2", False)
    assert str(req) == "torch-scatter==2.1.2"
    assert parse_requirement("torch-scatter").specifier == ""


def test_a_git_url_with_a_tag_or_commit() -> None:
    req = parse_requirement("git+https://example.org/rusty1s/pytorch_scatter.git@2.1.2")
    assert (req.name, req.git_url, req.git_ref) == ("pytorch-scatter", "https://example.org/rusty1s/pytorch_scatter.git",
                                                    "2.1.2")
    commit = "a" * 40
    assert parse_requirement(f"https://example.org/x/y@{commit}").git_ref == commit
    assert is_commit(commit) and not is_commit("2.1.2")


@pytest.mark.parametrize("text", ["git+https://example.org/x/y.git", "torch scatter", "torch-scatter[extra]==1"])
def test_bad_requirements_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_requirement(text)
    assert text in info.value.message and info.value.hint


def test_pip_config_list_is_read_by_key_later_scopes_winning() -> None:
    listing = "global.index-url='https://a/simple'\n:env:.timeout='60'\nuser.index-url='https://b/simple'\n"
    assert parse_pip_config(listing) == {"index-url": "https://b/simple", "timeout": "60"}


def test_sdist_versions_are_read_from_the_file_name() -> None:
    assert sdist_version("torch-scatter", "torch_scatter-2.1.2.tar.gz") == "2.1.2"
    assert sdist_version("torch-scatter", "torch-scatter-2.0.9.zip") == "2.0.9"
    assert sdist_version("torch-scatter", "torch_scatter-2.1.2-cp311-cp311-linux_x86_64.whl") is None
    assert sdist_version("torch-scatter", "torch_sparse-0.6.18.tar.gz") is None


HTML = f"""<html><body>
<a href="../../files/torch_scatter-2.0.9.tar.gz#sha256={'0' * 64}">torch_scatter-2.0.9.tar.gz</a>
<a href="https://files.example.org/p/torch_scatter-2.1.2.tar.gz#sha256={SHA}">torch_scatter-2.1.2.tar.gz</a>
<a href="https://files.example.org/p/torch_scatter-2.1.3rc1.tar.gz#sha256={'1' * 64}">rc</a>
<a href="https://files.example.org/p/torch_scatter-2.1.2-cp311-cp311-linux_x86_64.whl">wheel</a>
</body></html>"""


def test_the_newest_sdist_the_specifier_allows_with_its_sha256() -> None:
    files = page_files("https://index.example.org/simple/torch-scatter/", HTML, "text/html")
    newest = pick_sdist("torch-scatter", "", files)
    assert newest is not None
    assert (newest.version, newest.sha256) == ("2.1.2", SHA)
    assert newest.url == "https://files.example.org/p/torch_scatter-2.1.2.tar.gz"
    older = pick_sdist("torch-scatter", "<2.1", files)
    assert older is not None and older.version == "2.0.9"
    assert older.url == "https://index.example.org/files/torch_scatter-2.0.9.tar.gz"
    rc = pick_sdist("torch-scatter", "==2.1.3rc1", files)
    assert rc is not None and rc.sha256 == "1" * 64
    assert pick_sdist("torch-scatter", "==9", files) is None


def test_a_json_simple_page_is_read_too() -> None:
    body = json.dumps({"files": [{"filename": "torch_scatter-2.1.2.tar.gz", "url": "/f/torch_scatter-2.1.2.tar.gz",
                                  "hashes": {"sha256": SHA}}]})
    files = page_files("https://i.example.org/simple/torch-scatter/", body, "application/vnd.pypi.simple.v1+json")
    found = pick_sdist("torch-scatter", "==2.1.2", files)
    assert found is not None and found.sha256 == SHA and found.url == "https://i.example.org/f/torch_scatter-2.1.2.tar.gz"
