"""Signed cache entries: who vouches for a shared wheel, checked with OpenSSH signatures.

A remote supplies both a wheel and the sha256 it is checked against, so the sha256 alone proves
only that the transfer was intact. ``cache push`` therefore signs each entry's manifest (which
holds the wheel's sha256, size and name) with the pusher's key, and ``pull``, ``install`` and a
build's remote lookup accept an entry only when its signature verifies against a key in the
user's trusted-signers file, unless the user passes ``--trust-unsigned``.

The signed message is the manifest's canonical JSON (``payload``: sorted keys, no spaces,
ASCII), computed from the parsed manifest: a field srcbuild does not read is neither signed nor
used, and a manifest whose fields were changed no longer verifies.

The format is OpenSSH's signatures, as ``ssh-keygen -Y sign`` / ``-Y verify`` make and check
them (OpenSSH 8.1+, namespace ``srcbuild-cache``), with an ``allowed_signers`` file
(ssh-keygen(1), "ALLOWED SIGNERS") as the trusted-signers file: labs already hold ssh keys (and
agents, and hardware keys) for their people and CI, and git uses the same format for signed
commits. srcbuild signs and verifies them itself (``srcbuild.cache.sshsig``, on ``cryptography``),
so a machine without ssh-keygen signs and verifies too (``srcbuild cache key new`` makes a key);
ssh-keygen is run only for a key srcbuild cannot use itself (an ssh-agent key's ``.pub``, a key
with a passphrase, a FIDO key). GPG, as Spack's build caches use, needs a keyring per user and
more to get wrong for a lab.

Files: the trusted signers in ``$SRCBUILD_TRUSTED_SIGNERS`` (default
``<config dir>/trusted-signers``), the signing key in ``--signing-key``/``$SRCBUILD_SIGNING_KEY``
(default ``<config dir>/signing-key`` when it exists). Programs run through ``srcbuild.proc``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import shutil
import struct
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from srcbuild import proc
from srcbuild.cache.manifest import Manifest
from srcbuild.errors import CacheIntegrityError, HostError, UsageError, disk_full
from srcbuild.files import write_atomic
from srcbuild.paths import default_config_dir
from srcbuild.precedence import Chosen, env_value, from_cli, from_env, precedence
from srcbuild.records import record

NAMESPACE = "srcbuild-cache"
SSH_KEYGEN = "ssh-keygen"
SSH_KEYGEN_FALLBACKS = ("/usr/bin/ssh-keygen", "/usr/local/bin/ssh-keygen")
KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    }
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9@._+-]{0,99}\Z")


def _sshsig() -> ModuleType:
    """``srcbuild.cache.sshsig``, imported when a signature is made or checked: it loads
    ``cryptography`` (about a tenth of a second), which a cache hit never needs."""
    from srcbuild.cache import sshsig

    return sshsig


def payload(manifest: Manifest) -> bytes:
    """The bytes a signature covers: the manifest's canonical JSON."""
    return json.dumps(manifest.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def trusted_signers_path(environ: Mapping[str, str]) -> Path:
    value = env_value(environ, "SRCBUILD_TRUSTED_SIGNERS")
    return Path(value).expanduser() if value else default_config_dir(environ) / "trusted-signers"


def signing_key_choice(given: str | None, environ: Mapping[str, str]) -> Chosen[Path]:
    """``--signing-key`` > ``SRCBUILD_SIGNING_KEY`` (or the config file) > ``<config dir>/signing-key``,
    with its origin (``srcbuild.precedence``); the default whether or not it exists."""
    chosen = precedence(
        Chosen(default_config_dir(environ) / "signing-key", "default"),
        from_env(environ, "SRCBUILD_SIGNING_KEY", Path),
        from_cli(Path(given) if given else None, "--signing-key"),
    )
    return Chosen(chosen.value.expanduser(), chosen.origin)


def signing_key_path(given: str | None, environ: Mapping[str, str]) -> Path | None:
    """The key ``signing_key_choice`` names; the default one only when it exists."""
    chosen = signing_key_choice(given, environ)
    return chosen.value if chosen.origin != "default" or chosen.value.is_file() else None


def _ssh_keygen(why: str) -> str:
    """``ssh-keygen`` on PATH, else OpenSSH's usual place (a build may run with a narrowed PATH),
    for the keys srcbuild cannot use itself (``why``)."""
    found = shutil.which(SSH_KEYGEN) or next((p for p in SSH_KEYGEN_FALLBACKS if os.access(p, os.X_OK)), None)
    if found is None:
        raise HostError(
            f"ssh-keygen is not installed: {why}",
            "install OpenSSH's client tools (Debian: `sudo apt-get install openssh-client`), "
            "or make a key srcbuild uses itself with `srcbuild cache key new`",
        )
    return found


@record
class PublicKey:
    """One OpenSSH public key: ``ssh-ed25519 AAAA... comment``."""

    key_type: str
    blob: str  # base64
    comment: str = ""

    @classmethod
    def parse(cls, text: str, where: str = "key") -> PublicKey:
        parts = text.strip().split(None, 2)
        if len(parts) < 2 or parts[0] not in KEY_TYPES:
            raise UsageError(
                f"{where}: not an OpenSSH public key (want `ssh-ed25519 AAAA... [comment]`)",
                "pass the .pub file of the signer's key, e.g. `srcbuild cache trust add ~/alice.pub`",
            )
        try:
            raw = base64.b64decode(parts[1], validate=True)
            (length,) = struct.unpack(">I", raw[:4])
            inner = raw[4 : 4 + length].decode("ascii")
        except (binascii.Error, struct.error, UnicodeDecodeError):
            inner = ""
        if inner != parts[0]:
            raise UsageError(f"{where}: the {parts[0]} key data is damaged", "copy the whole line of the .pub file")
        comment = parts[2].strip() if len(parts) > 2 else ""
        return cls(parts[0], parts[1], comment)

    @property
    def fingerprint(self) -> str:
        """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
        digest = hashlib.sha256(base64.b64decode(self.blob)).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


@record
class TrustedSigner:
    """A line of the trusted-signers file: a principal name and its key."""

    name: str
    key: PublicKey

    def line(self) -> str:
        return f'{self.name} namespaces="{NAMESPACE}" {self.key.key_type} {self.key.blob}'


class TrustedSigners:
    """The user's trusted-signers file (OpenSSH ``allowed_signers`` format, written by srcbuild)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[TrustedSigner]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"{self.path}: cannot read ({exc})", f"check the file, or remove it: rm {self.path}"
            ) from None
        signers = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            name, _, rest = line.strip().partition(" ")
            if rest.startswith("namespaces="):
                rest = rest.split(" ", 1)[1] if " " in rest else ""
            signers.append(TrustedSigner(name, PublicKey.parse(rest, f"{self.path}:{number}")))
        return signers

    def add(self, key_text: str, name: str | None, where: str) -> TrustedSigner:
        key = PublicKey.parse(key_text, where)
        chosen = name or (key.comment.split()[0] if key.comment else "") or f"signer-{key.fingerprint[7:15]}"
        if not _NAME.match(chosen):
            raise UsageError(
                f"signer name {chosen!r} may hold only letters, digits and @._+- (no spaces or wildcards)",
                f"pass another with --name, e.g. `srcbuild cache trust add {where} --name alice`",
            )
        signers = self.load()
        same = (key.key_type, key.blob)
        if any(s.name == chosen and (s.key.key_type, s.key.blob) != same for s in signers):
            raise UsageError(
                f"a signer named {chosen} with another key is already trusted",
                f"remove it first with `srcbuild cache trust rm {chosen}`, or pass another --name",
            )
        signer = TrustedSigner(chosen, key)
        if not any((s.key.key_type, s.key.blob) == same and s.name == chosen for s in signers):
            self._write([*signers, signer])
        return signer

    def remove(self, ref: str) -> list[TrustedSigner]:
        signers = self.load()
        gone = [s for s in signers if ref in (s.name, s.key.fingerprint)]
        if not gone:
            raise UsageError(f"no trusted signer is named {ref!r}", "list them with `srcbuild cache trust ls`")
        self._write([s for s in signers if s not in gone])
        return gone

    def _write(self, signers: list[TrustedSigner]) -> None:
        try:
            self._write_file(signers)
        except OSError as exc:
            full = disk_full(exc, self.path.parent)
            if full is not None:
                raise full from None
            raise HostError(
                f"{self.path}: cannot write ({exc.strerror})", f"check the permissions of {self.path.parent}"
            ) from None

    def _write_file(self, signers: list[TrustedSigner]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = "# srcbuild trusted signers (OpenSSH allowed_signers format); edit with `srcbuild cache trust`\n"
        text += "".join(s.line() + "\n" for s in signers)
        write_atomic(self.path, text, mode=0o600)


def new_signing_key(key: Path, comment: str) -> str:
    """Write a new ed25519 key pair, ``key`` (mode 600) and ``key.pub``, in OpenSSH's formats
    (``ssh-keygen -t ed25519 -N ''`` alike, without ssh-keygen); return the ``.pub`` line.
    Refuses to replace a key that exists."""
    public = key.with_name(key.name + ".pub")
    for path in (key, public):
        if path.exists():
            raise UsageError(
                f"{path} exists already: srcbuild does not replace a key",
                f"use it as it is, or move it away first (mv {path} {path}.old)",
            )
    private_bytes, line = _sshsig().new_key(comment)
    try:
        key.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(public, line + "\n", mode=0o644)
        write_atomic(key, private_bytes.decode("ascii"), mode=0o600)
    except OSError as exc:
        full = disk_full(exc, key.parent)
        if full is not None:
            raise full from None
        raise HostError(f"{key}: cannot write ({exc.strerror})", f"check the permissions of {key.parent}") from None
    return line


def sign_manifest(manifest: Manifest, key: Path, work: Path) -> bytes:
    """An armored OpenSSH signature of ``payload(manifest)`` made with the private ``key``: in
    Python (``sshsig``) for a key file without a passphrase, by ``ssh-keygen -Y sign`` for a key
    only it can use (the ``.pub`` of an ssh-agent key, a passphrase, a FIDO key)."""
    if not key.is_file():
        raise UsageError(
            f"signing key {key} does not exist",
            f"create it with `srcbuild cache key new --signing-key {key}`",
        )
    try:
        private = _sshsig().load_private_key(key)
    except OSError as exc:
        raise UsageError(
            f"signing key {key}: cannot read ({exc.strerror})", f"check the permissions of {key}"
        ) from None
    if private is not None:
        return _sshsig().sign(private, NAMESPACE, payload(manifest))
    program = _ssh_keygen(f"{key} is a key only ssh-keygen can use (an agent key's .pub, a passphrase, a FIDO key)")
    message = work / "manifest.payload"
    message.write_bytes(payload(manifest))
    result = proc.run([program, "-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(message)])
    signature = message.with_name(message.name + ".sig")
    if not result.ok or not signature.is_file():
        tail = " ".join(result.tail[-2:])
        raise UsageError(
            f"ssh-keygen could not sign with {key} (exit {result.returncode}): {tail}",
            "use a private key without a passphrase, or load it into ssh-agent and pass its .pub file",
        )
    return signature.read_bytes()


def verify_manifest(manifest: Manifest, signature: bytes, signers: Path, work: Path, where: str) -> str:
    """The trusted signer whose key made ``signature`` over ``manifest``; CacheIntegrityError otherwise.

    Checked in Python (``sshsig``); a FIDO (``sk-``) key's signature by ``ssh-keygen -Y verify``."""
    refused = (
        "it is not used; ask its owner to push it again, or trust its signer with `srcbuild cache trust add KEY.pub`"
    )
    if not signers.is_file():
        raise CacheIntegrityError(f"{where}: signed, but no signer is trusted yet ({signers} is missing)", refused)
    try:
        blob = _sshsig().signer_blob(signature)
    except _sshsig().SignatureError as exc:
        raise CacheIntegrityError(f"{where}: the signature is damaged ({exc})", refused) from None
    key_text = base64.b64encode(blob).decode("ascii")
    trusted = [s for s in TrustedSigners(signers).load() if s.key.blob == key_text]
    if not trusted:
        raise CacheIntegrityError(f"{where}: not signed by a trusted key (see {signers})", refused)
    principal = trusted[0].name
    if trusted[0].key.key_type.startswith("sk-"):
        return _verify_with_ssh_keygen(manifest, signature, signers, work, where, principal, refused)
    try:
        _sshsig().verify(signature, NAMESPACE, payload(manifest))
    except _sshsig().SignatureError:
        raise CacheIntegrityError(
            f"{where}: the signature of {principal} does not match this manifest", refused
        ) from None
    return principal


def _verify_with_ssh_keygen(
    manifest: Manifest, signature: bytes, signers: Path, work: Path, where: str, principal: str, refused: str
) -> str:
    program = _ssh_keygen(f"{where} is signed with a FIDO key, which only ssh-keygen checks")
    sig = work / "manifest.sig"
    message = work / "manifest.payload"
    sig.write_bytes(signature)
    message.write_bytes(payload(manifest))
    ok = proc.probe(
        [program, "-Y", "verify", "-f", str(signers), "-I", principal, "-n", NAMESPACE, "-s", str(sig)],
        stdin=message,
    )
    if ok is None:
        raise CacheIntegrityError(f"{where}: the signature of {principal} does not match this manifest", refused)
    return principal


@record
class TrustPolicy:
    """What a pull accepts: entries signed by a trusted key, or any intact entry (``trust_unsigned``)."""

    signers_file: Path
    trust_unsigned: bool = False

    @classmethod
    def resolve(cls, trust_unsigned: bool = False, *, environ: Mapping[str, str]) -> TrustPolicy:
        return cls(trusted_signers_path(environ), trust_unsigned)

    def check(self, manifest: Manifest, signature: bytes | None, work: Path, where: str) -> str | None:
        """Who vouches for ``manifest`` (a signer's name; None: not checked, ``trust_unsigned``).

        CacheIntegrityError when nobody may.
        """
        if self.trust_unsigned:
            return None
        if signature is None:
            raise CacheIntegrityError(
                f"{where}: the entry is not signed",
                "ask its owner to push it with a signing key, or accept unsigned entries with --trust-unsigned",
            )
        return verify_manifest(manifest, signature, self.signers_file, work, where)
