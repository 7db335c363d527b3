"""Two machines sharing wheels through each remote kind, with real servers and real pip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from srcbuild.paths import Paths
from srcbuild.recipe import RecipeCatalog
from tests.unit.cache.synthetic import host_python_recipe, host_tag, make_manifest, make_wheel

pytestmark = pytest.mark.integration


def words(text: str) -> str:
    """The output's words, whatever its wrapping to 80 columns."""
    return " ".join(text.split())


def pip_show_version(prefix: Path, name: str) -> str | None:
    out = subprocess.run(
        [str(prefix / "bin" / "python"), "-m", "pip", "show", name],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    for line in out.stdout.splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def flip_byte(data: bytes, at: int = 100) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


@pytest.fixture()
def machine_a(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Machine A's cache holding one built wheel; returns (cache dir, recipe file, wheel)."""
    recipe_file = host_python_recipe(tmp_path / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag=host_tag(), payload=os.urandom(4096))
    cache_dir = tmp_path / "machine-a"
    WheelCache(cache_dir).store(wheel, make_manifest(wheel, recipe, sass=(30,), ptx=(30,), platform=None))
    return cache_dir, recipe_file, wheel


def test_shared_directory(
    machine_a, signer: Path, tmp_path: Path, fresh_venv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_a, recipe_file, wheel = machine_a
    share = tmp_path / "nfs" / "srcbuild"
    # a share that does not exist is an error, not "nothing to transfer"
    assert main(["cache", "push", "--remote", str(share), "--cache-dir", str(cache_a)]) == 2
    assert capsys.readouterr().err == (
        f"error: remote {share}: no such directory\nhint: create it first with `mkdir -p {share}`, or check the path\n"
    )
    pull = ["cache", "pull", "--remote", str(share), "--cache-dir", str(tmp_path / "x")]
    assert main(pull) == 9  # nothing to pull from
    assert capsys.readouterr().err.startswith(f"error: remote {share}: no such directory\n")
    share.mkdir(parents=True)
    assert main(["cache", "push", "--remote", str(share), "--cache-dir", str(cache_a)]) == 0
    assert capsys.readouterr().out.endswith("1 sent\n")
    assert main(["cache", "push", "--remote", str(share), "--cache-dir", str(cache_a)]) == 0
    assert capsys.readouterr().out.endswith("1 present\n")

    cache_b = tmp_path / "machine-b"
    args = ["install", "torch", "--recipe", str(recipe_file), "--into", str(fresh_venv), "--cache-dir", str(cache_b)]
    assert main([*args, "--remote", f"file://{share}"]) == 0
    out = words(capsys.readouterr().out)
    assert out == f"installed {wheel.name} from file://{share} into {fresh_venv / 'bin' / 'python'}"
    assert pip_show_version(fresh_venv, "torch") == "1.7.1+cu92.sm30"
    # the pulled entry is now local: the next install needs no remote
    assert main(args) == 0
    assert "from the local cache" in words(capsys.readouterr().out)
    assert [e.manifest.sha256 for e in WheelCache(cache_b).entries()] == [
        e.manifest.sha256 for e in WheelCache(cache_a).entries()
    ]


def test_s3_bucket_and_a_tampered_wheel(
    machine_a, signer: Path, tmp_path: Path, fresh_venv: Path, s3_bucket: str, moto_endpoint: str, monkeypatch, capsys
) -> None:
    cache_a, recipe_file, wheel = machine_a
    remote = f"s3://{s3_bucket}/team/wheels"
    assert (
        main(["cache", "push", "--remote", remote, "--s3-endpoint-url", moto_endpoint, "--cache-dir", str(cache_a)])
        == 0
    )
    assert capsys.readouterr().out.endswith("1 sent\n")
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    keys = sorted(o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket)["Contents"])
    assert [k.rsplit("/", 1)[1] for k in keys] == ["CACHEDIR.TAG", "manifest.json", "manifest.json.sig", wheel.name]
    assert all(k.startswith("team/wheels/entries/") for k in keys[1:])

    # machine B finds it through the environment alone
    monkeypatch.setenv("SRCBUILD_S3_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("SRCBUILD_REMOTES", remote)
    cache_b = tmp_path / "machine-b"
    rc = main(
        ["install", "torch", "--recipe", str(recipe_file), "--into", str(fresh_venv), "--cache-dir", str(cache_b)]
    )
    assert rc == 0
    assert f"installed {wheel.name} from {remote}" in words(capsys.readouterr().out)
    assert pip_show_version(fresh_venv, "torch") == "1.7.1+cu92.sm30"

    # someone flips one byte of the wheel in the bucket: machine C rejects it and installs nothing
    wheel_key = next(k for k in keys if k.endswith(".whl"))
    body = client.get_object(Bucket=s3_bucket, Key=wheel_key)["Body"].read()
    client.put_object(Bucket=s3_bucket, Key=wheel_key, Body=flip_byte(body))
    cache_c = tmp_path / "machine-c"
    assert main(["cache", "pull", "--cache-dir", str(cache_c)]) == 7
    out = words(capsys.readouterr().out)
    assert out.startswith(f"rejected {wheel.name}")
    assert "does not match the manifest's" in out
    assert list(WheelCache(cache_c).entries()) == []
    other_venv = tmp_path / "venv-c"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other_venv)], check=True)
    rc = main(
        ["install", "torch", "--recipe", str(recipe_file), "--into", str(other_venv), "--cache-dir", str(cache_c)]
    )
    assert rc == 7
    err = capsys.readouterr().err
    assert err.startswith(f"error: {wheel.name} from {remote}: sha256 ")
    assert list(WheelCache(cache_c).entries()) == []
    assert list((cache_c / "tmp").iterdir()) == []


def test_s3_errors_are_plain_words(
    tmp_path: Path, moto_endpoint: str, s3_bucket: str, machine_a, signer: Path, capsys
) -> None:
    cache_a = machine_a[0]
    rc = main(
        [
            "cache",
            "push",
            "--remote",
            "s3://no-such-bucket/x",
            "--s3-endpoint-url",
            moto_endpoint,
            "--cache-dir",
            str(cache_a),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 9  # a remote that does not exist
    assert err.splitlines()[0].startswith("error: s3://no-such-bucket/x: cannot")
    port_closed = "http://127.0.0.1:9"
    rc = main(
        [
            "cache",
            "pull",
            "--remote",
            f"s3://{s3_bucket}",
            "--s3-endpoint-url",
            port_closed,
            "--cache-dir",
            str(tmp_path / "b"),
        ]
    )
    assert rc == 9  # an unreachable remote
    said = " ".join(capsys.readouterr().err.split())
    assert f"check the endpoint ({port_closed}, from the command line --s3-endpoint-url;" in said, said


def test_s3_listing_is_capped(
    tmp_path: Path, moto_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """A bucket that lists more keys than any cache holds is refused, not read into memory."""
    import srcbuild.cache.remotes.s3 as s3_remote

    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    client.put_object(Bucket=s3_bucket, Key="x/CACHEDIR.TAG", Body=b"Signature: 8a477f597d28d172789f06886806bc55")
    for n in range(12):
        client.put_object(Bucket=s3_bucket, Key=f"x/entries/{n:02x}/{n:02x}/manifest.json", Body=b"{}")
    monkeypatch.setattr(s3_remote, "MAX_LISTED", 10)
    pull = ["cache", "pull", "--remote", f"s3://{s3_bucket}/x", "--s3-endpoint-url", moto_endpoint]
    rc = main([*pull, "--cache-dir", str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert rc == 7, err
    assert err.startswith(f"error: s3://{s3_bucket}/x: more than 10 keys under x/entries/; "), err


def start_server(cache_dir: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "srcbuild", "cache", "serve", "--port", "0", "--cache-dir", str(cache_dir)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("serving 1 wheels from "), first
    url = first.rsplit(" at ", 1)[1].strip()
    return proc, url


def test_http_index_with_plain_pip_and_srcbuild(tmp_path: Path, fresh_venv: Path, signer: Path, capsys) -> None:
    # a wheel without a local label (as an older builder writes it): the index labels it
    recipe_file = host_python_recipe(tmp_path / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(tmp_path / "dist", version="1.7.1", tag=host_tag(), payload=os.urandom(2048))
    cache_a = tmp_path / "machine-a"
    WheelCache(cache_a).store(wheel, make_manifest(wheel, recipe, sass=(30,), platform=None))
    served = f"torch-1.7.1+cu92.sm30-{host_tag()}.whl"
    proc, simple_url = start_server(cache_a)
    try:
        assert simple_url.endswith("/simple/")
        # plain pip, nothing of srcbuild on the installing side
        target = tmp_path / "pip-target"
        pip = subprocess.run(
            [
                str(fresh_venv / "bin" / "python"), "-m", "pip", "--isolated", "--disable-pip-version-check",
                "install", "--no-deps", "--target", str(target), "--index-url", simple_url, "torch==1.7.1+cu92.sm30",
            ],
            capture_output=True,
            text=True,
        )  # fmt: skip
        assert pip.returncode == 0, pip.stdout + pip.stderr
        assert (target / "torch-1.7.1+cu92.sm30.dist-info" / "METADATA").read_text().splitlines()[2] == (
            "Version: 1.7.1+cu92.sm30"
        )
        # srcbuild on machine B pulls through the same index
        cache_b = tmp_path / "machine-b"
        root_url = simple_url[: -len("simple/")]
        rc = main(
            ["install", "torch", "--recipe", str(recipe_file), "--into", str(fresh_venv), "--remote", root_url,
             "--cache-dir", str(cache_b)]
        )  # fmt: skip
        assert rc == 0, capsys.readouterr().err
        assert words(capsys.readouterr().out).startswith(f"installed {served} from {root_url} into ")
        assert pip_show_version(fresh_venv, "torch") == "1.7.1+cu92.sm30"
        assert main(["cache", "push", "--remote", root_url, "--cache-dir", str(cache_b)]) == 2
        assert "is an HTTP index and is read-only" in capsys.readouterr().err

        # a flipped byte on the server: srcbuild rejects it, and so does pip (the #sha256 fragment)
        files = cache_a / "index" / "files"
        (files / served).write_bytes(flip_byte((files / served).read_bytes()))
        assert main(["cache", "pull", "--remote", simple_url, "--cache-dir", str(tmp_path / "machine-c")]) == 7
        assert words(capsys.readouterr().out).startswith(f"rejected {served}")
        pip = subprocess.run(
            [
                str(fresh_venv / "bin" / "python"), "-m", "pip", "--isolated", "--disable-pip-version-check",
                "install", "--no-deps", "--no-cache-dir", "--target", str(tmp_path / "t2"), "--index-url", simple_url,
                "torch==1.7.1+cu92.sm30",
            ],
            capture_output=True,
            text=True,
        )  # fmt: skip
        assert pip.returncode != 0
        assert "HASHES" in pip.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_install_refuses_a_wheel_for_another_python(tmp_path: Path, fresh_venv: Path, capsys) -> None:
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load("kepler-cu92")  # Python 3.8
    if sys.version_info[:2] == (3, 8):
        pytest.skip("the test interpreter is Python 3.8 itself")
    wheel = make_wheel(tmp_path / "dist", version="1.7.1+cu92.sm30", tag="cp38-cp38-linux_x86_64")
    WheelCache(tmp_path / "c").store(wheel, make_manifest(wheel, recipe, platform=None))
    rc = main(
        ["install", "torch", "--recipe", "kepler-cu92", "--into", str(fresh_venv), "--cache-dir", str(tmp_path / "c")]
    )
    assert rc == 3
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert capsys.readouterr().err == (
        f"error: {wheel.name} is for cp38; the target {fresh_venv / 'bin' / 'python'} is cpython {version}\n"
        "hint: install into an environment of Python 3.8 (--into PREFIX or --python), or use a recipe for this Python\n"
    )
    assert pip_show_version(fresh_venv, "torch") is None


def test_install_miss_names_the_build_command(tmp_path: Path, fresh_venv: Path, capsys) -> None:
    rc = main(
        ["install", "torch", "--recipe", "kepler-cu92", "--into", str(fresh_venv), "--cache-dir", str(tmp_path / "c")]
    )
    assert rc == 9  # nothing found
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: no cached wheel for torch of recipe kepler-cu92 (fingerprint ")
    assert err[1] == (
        "hint: run `srcbuild torch --recipe kepler-cu92` to build it (the result is cached), "
        "or add the remote that has it with --remote"
    )


def test_bit_rot_is_never_installed(tmp_path: Path, fresh_venv: Path, capsys) -> None:
    """A byte changed with the wheel's size and mtime kept (as disk bit rot does) fails the
    lookup's identity check (the ctime moved), so the entry is re-hashed, moved aside and the
    install is a miss (exit 9); the intact wheel stored again installs."""
    recipe_file = host_python_recipe(tmp_path / "recipes")
    recipe = RecipeCatalog(Paths.resolve(environ=os.environ)).load(str(recipe_file))
    wheel = make_wheel(tmp_path / "dist", version="1.7.1", tag=host_tag(), payload=os.urandom(4096))
    cache = tmp_path / "cache"
    manifest = make_manifest(wheel, recipe, sass=(30,), platform=None)
    entry = WheelCache(cache).store(wheel, manifest)
    install = ["install", "torch", "--recipe", str(recipe_file), "--into", str(fresh_venv), "--cache-dir", str(cache)]
    stat = entry.wheel_path.stat()
    entry.wheel_path.write_bytes(flip_byte(entry.wheel_path.read_bytes(), at=stat.st_size // 2))
    os.utime(entry.wheel_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert main(install) == 9
    err = capsys.readouterr().err
    assert f"warning: cache entry {entry.key[:12]}: {entry.manifest.wheel} has sha256 " in err
    assert "; moved aside to " in err and ", not used" in err
    assert pip_show_version(fresh_venv, "torch") is None
    WheelCache(cache).store(wheel, manifest)  # the intact bytes again
    assert main(install) == 0, capsys.readouterr().err
    assert pip_show_version(fresh_venv, "torch") == "1.7.1"


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_the_installer_checks_the_manifest_sha256_itself(
    tmp_path: Path, fresh_venv: Path, installer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel changed after the lookup (between it and the install) is refused by uv's or pip's
    own hash-checking mode (exit 7), never installed; the intact one installs."""
    from srcbuild.cache.install import pip_install_hashed
    from srcbuild.cache.installer import uv_binary
    from srcbuild.errors import CacheIntegrityError

    monkeypatch.setenv("SRCBUILD_INSTALLER", installer)
    uv = uv_binary(os.environ)
    assert (uv is not None) == (installer == "uv")
    wheel = make_wheel(tmp_path / "dist", version="1.7.1", tag=host_tag(), payload=os.urandom(4096))
    manifest = make_manifest(wheel, sass=(30,), platform=None)
    rotten = tmp_path / "rotten" / wheel.name
    rotten.parent.mkdir()
    rotten.write_bytes(flip_byte(wheel.read_bytes(), at=wheel.stat().st_size // 2))
    python = fresh_venv / "bin" / "python"
    with pytest.raises(CacheIntegrityError) as refused:
        pip_install_hashed(python, manifest, rotten, None, uv=uv)
    assert refused.value.exit_code == 7
    assert refused.value.message.startswith(f"{installer} could not install {manifest.wheel} into {python}")
    assert "srcbuild cache verify --remove" in (refused.value.hint or "")
    assert pip_show_version(fresh_venv, "torch") is None
    pip_install_hashed(python, manifest, wheel, None, uv=uv)
    assert pip_show_version(fresh_venv, "torch") == "1.7.1"


def test_a_killed_s3_push_leaves_no_entry_and_no_orphan_after_the_next_push(
    machine_a, tmp_path: Path, s3_bucket: str, moto_endpoint: str
) -> None:
    """What a push that wrote in place (srcbuild before pushes were staged) left when killed with -9,
    a wheel without its manifest, is no entry to a reader; the next push of that entry overwrites
    it, and a push sweeps older leftovers of any entry (staged pushes: test_s3_push_interrupted.py)."""
    from srcbuild.cache.remotes.s3 import S3Remote

    cache_a, _recipe_file, wheel = machine_a
    (entry,) = WheelCache(cache_a).entries()
    remote = S3Remote(f"s3://{s3_bucket}/w", endpoint_url=moto_endpoint)
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    m = entry.manifest
    left = f"w/entries/{m.fingerprint[:2]}/{m.fingerprint}/{m.entry_key}/{m.wheel}"
    other = f"w/entries/{m.fingerprint[:2]}/{m.fingerprint}/{'e' * 64}/torch-9.9.9-cp38-cp38-linux_x86_64.whl"
    for key in (left, other):  # two killed pushes: each wrote its wheel, never its manifest
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"half")
    assert remote.manifests() == []  # a reader sees no entry
    assert remote.sweep_orphans(age=3600.0) == []  # too young: maybe a push still uploading
    assert remote.push(entry, None)  # the same entry again: its leftover is overwritten
    assert remote.sweep_orphans(age=0.0) == [other]  # an older leftover of another entry is swept
    keys = sorted(o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket)["Contents"])
    assert [k.rsplit("/", 1)[1] for k in keys] == ["CACHEDIR.TAG", "manifest.json", wheel.name]
    body = client.get_object(Bucket=s3_bucket, Key=left)["Body"].read()
    assert body == entry.wheel_path.read_bytes()
