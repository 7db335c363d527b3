"""``srcbuild cache trust add|ls|rm``: the keys whose signed cache entries this user accepts."""

from __future__ import annotations

from pathlib import Path

import click

from srcbuild.cache.signing import TrustedSigners, trusted_signers_path
from srcbuild.cli.common import command_environ, json_option, print_json
from srcbuild.console import echo_text, print_table
from srcbuild.errors import UsageError


@click.group("trust")
def trust_group() -> None:
    """Trusted signers: whose pushed wheels pull, install and builds accept."""


@trust_group.command("add")
@click.argument("key")
@click.option("--name", default=None, help="Who the key belongs to [default: the key's comment].")
def add_cmd(key: str, name: str | None) -> int:
    """Trust KEY: an OpenSSH public key file (alice.pub) or the key line itself."""
    path = Path(key).expanduser()
    if path.is_file():
        try:
            text = path.read_text(encoding="utf-8")[:16384]
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read ({exc})", "pass the .pub file of the signer's key") from None
        if "PRIVATE KEY" in text:
            raise UsageError(f"{path} is a private key", f"pass its public half: `srcbuild cache trust add {key}.pub`")
    else:
        text = key
    signers = TrustedSigners(trusted_signers_path(command_environ()))
    signer = signers.add(text, name, key)
    click.echo(f"trusted {signer.name} ({signer.key.key_type} {signer.key.fingerprint}) in {signers.path}")
    return 0


@trust_group.command("ls")
@json_option
def ls_cmd(as_json: bool) -> int:
    """The trusted signers: name, key type, fingerprint."""
    signers = TrustedSigners(trusted_signers_path(command_environ()))
    rows = [{"name": s.name, "type": s.key.key_type, "fingerprint": s.key.fingerprint} for s in signers.load()]
    if as_json:
        print_json({"file": str(signers.path), "signers": rows})
        return 0
    if not rows:
        echo_text(f"no trusted signers ({signers.path})\n")
        echo_text("hint: trust a colleague's key with `srcbuild cache trust add alice.pub`\n")
        return 0
    print_table(
        f"trusted signers ({signers.path})",
        ("name", "type", "fingerprint"),
        ((row["name"], row["type"], row["fingerprint"]) for row in rows),
    )
    return 0


@trust_group.command("rm")
@click.argument("ref")
def rm_cmd(ref: str) -> int:
    """Stop trusting the signer named REF (or with key fingerprint REF)."""
    signers = TrustedSigners(trusted_signers_path(command_environ()))
    for signer in signers.remove(ref):
        click.echo(f"removed {signer.name} ({signer.key.fingerprint})")
    return 0


@click.group("key")
def key_group() -> None:
    """Your signing key: the one cache push and cache index sign with."""


@key_group.command("new")
@click.option(
    "--signing-key",
    default=None,
    help="Where to write it [env SRCBUILD_SIGNING_KEY; default: CONFIG/signing-key]; its public half goes beside it.",
)
@click.option("--comment", default=None, help="The key's comment, which names you to others [default: USER@HOST].")
def key_new_cmd(signing_key: str | None, comment: str | None) -> int:
    """Make an ed25519 signing key in OpenSSH's format (no ssh-keygen needed; ssh-keygen reads it)."""
    import getpass
    import socket

    from srcbuild.cache.signing import new_signing_key, signing_key_choice

    chosen = signing_key_choice(signing_key, command_environ())
    key = chosen.value
    line = new_signing_key(key, comment or f"{getpass.getuser()}@{socket.gethostname()}")
    echo_text(
        f"wrote {key} and {key}.pub\n"
        f"cache push and cache index sign with it{' by default' if chosen.origin == 'default' else ''}\n"
        f"others trust it with: srcbuild cache trust add {key}.pub\n"
        f"public key: {line}\n"
    )
    return 0
