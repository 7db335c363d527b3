"""OpenSSH signatures (SSHSIG) made and checked in Python, with ``cryptography``'s keys.

The files are OpenSSH's own, so that ``ssh-keygen -Y sign``/``-Y verify`` and srcbuild read each
other's: private keys in the ``openssh-key-v1`` format (``-----BEGIN OPENSSH PRIVATE KEY-----``),
public keys as ``.pub`` lines, signatures armored as ``-----BEGIN SSH SIGNATURE-----``. The
signature blob is the one OpenSSH's PROTOCOL.sshsig describes
(https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.sshsig):

    "SSHSIG" uint32(1) string(public key) string(namespace) string("") string("sha512")
    string(signature)

where the signature covers ``"SSHSIG" string(namespace) string("") string("sha512")
string(SHA-512 of the message)``, and is encoded as the key type's SSH signature (RFC 8709 for
ed25519, RFC 5656 for ECDSA, RFC 8332's ``rsa-sha2-512`` for RSA). ``cryptography`` reads and
writes the keys and does every signing and verifying operation; only this framing is here.

Keys it cannot use (a FIDO ``sk-`` key, one with a passphrase, one held by ssh-agent) are left to
``ssh-keygen`` by ``srcbuild.cache.signing``.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from pathlib import Path
from typing import Union

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

MAGIC = b"SSHSIG"
VERSION = 1
HASH = "sha512"
BEGIN = "-----BEGIN SSH SIGNATURE-----"
END = "-----END SSH SIGNATURE-----"
_CURVES = {"nistp256": hashes.SHA256(), "nistp384": hashes.SHA384(), "nistp521": hashes.SHA512()}

PrivateKey = Union[ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey]
PublicKey = Union[ed25519.Ed25519PublicKey, ec.EllipticCurvePublicKey, rsa.RSAPublicKey]


class SignatureError(ValueError):
    """A signature that is not well formed, or does not verify; the message says which."""


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _mpint(value: int) -> bytes:
    raw = value.to_bytes((value.bit_length() + 8) // 8, "big") if value else b""
    return _string(raw)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise SignatureError("the signature is cut short")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def uint32(self) -> int:
        (value,) = struct.unpack(">I", self.take(4))
        return int(value)

    def string(self) -> bytes:
        return self.take(self.uint32())

    def mpint(self) -> int:
        return int.from_bytes(self.string(), "big")

    def done(self) -> bool:
        return self.at == len(self.data)


def new_key(comment: str) -> tuple[bytes, str]:
    """A new ed25519 key pair: (the private key file's bytes, the ``.pub`` line with ``comment``)."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, f"{public.decode('ascii')} {comment}".rstrip()


def load_private_key(path: Path) -> PrivateKey | None:
    """The OpenSSH private key at ``path``, or None when this module cannot use it (a public key
    file, a FIDO key, a key with a passphrase, a type ``cryptography`` lacks)."""
    data = path.read_bytes()
    try:
        key = serialization.load_ssh_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return None
    return key if isinstance(key, (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)) else None


def public_blob(key: PublicKey) -> bytes:
    """The key's SSH wire encoding (the base64 part of its ``.pub`` line, decoded)."""
    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return base64.b64decode(line.split()[1])


def _signed_data(namespace: str, message: bytes) -> bytes:
    digest = hashlib.sha512(message).digest()
    return MAGIC + _string(namespace.encode()) + _string(b"") + _string(HASH.encode()) + _string(digest)


def sign(key: PrivateKey, namespace: str, message: bytes) -> bytes:
    """The armored SSH signature of ``message`` in ``namespace``, as ``ssh-keygen -Y sign`` writes it."""
    data = _signed_data(namespace, message)
    if isinstance(key, ed25519.Ed25519PrivateKey):
        signature = _string(b"ssh-ed25519") + _string(key.sign(data))
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        curve = {"secp256r1": "nistp256", "secp384r1": "nistp384", "secp521r1": "nistp521"}[key.curve.name]
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(_CURVES[curve])))
        signature = _string(f"ecdsa-sha2-{curve}".encode()) + _string(_mpint(r) + _mpint(s))
    else:
        signature = _string(b"rsa-sha2-512") + _string(key.sign(data, padding.PKCS1v15(), hashes.SHA512()))
    blob = (
        MAGIC
        + struct.pack(">I", VERSION)
        + _string(public_blob(key.public_key()))
        + _string(namespace.encode())
        + _string(b"")
        + _string(HASH.encode())
        + _string(signature)
    )
    text = base64.b64encode(blob).decode("ascii")
    lines = [text[i : i + 70] for i in range(0, len(text), 70)]
    return ("\n".join([BEGIN, *lines, END]) + "\n").encode("ascii")


def signer_blob(armored: bytes) -> bytes:
    """The public key (wire encoding) an armored signature says made it; SignatureError when the
    text is not an SSH signature."""
    return _parse(armored)[0]


def _parse(armored: bytes) -> tuple[bytes, str, str, bytes]:
    """(public key blob, namespace, hash algorithm, signature) of an armored SSH signature."""
    try:
        text = armored.decode("ascii").strip()
    except UnicodeDecodeError:
        raise SignatureError("the signature is not text") from None
    if not (text.startswith(BEGIN) and text.endswith(END)):
        raise SignatureError("not an SSH signature (no BEGIN/END SSH SIGNATURE lines)")
    try:
        blob = base64.b64decode("".join(text[len(BEGIN) : -len(END)].split()), validate=True)
    except ValueError:
        raise SignatureError("the signature's base64 is damaged") from None
    reader = _Reader(blob)
    if reader.take(len(MAGIC)) != MAGIC or reader.uint32() != VERSION:
        raise SignatureError("not an SSHSIG version 1 signature")
    key, namespace, _reserved, algorithm, signature = (reader.string() for _ in range(5))
    if not reader.done():
        raise SignatureError("the signature has bytes past its end")
    return key, namespace.decode("ascii", "replace"), algorithm.decode("ascii", "replace"), signature


def load_public_blob(blob: bytes) -> PublicKey:
    """The public key of a wire encoding; SignatureError for a type this module cannot check."""
    key_type = _Reader(blob).string().decode("ascii", "replace")
    try:
        key = serialization.load_ssh_public_key(f"{key_type} {base64.b64encode(blob).decode()}".encode())
    except (ValueError, UnsupportedAlgorithm):
        raise SignatureError(f"a {key_type} key cannot be checked here") from None
    if not isinstance(key, (ed25519.Ed25519PublicKey, ec.EllipticCurvePublicKey, rsa.RSAPublicKey)):
        raise SignatureError(f"a {key_type} key cannot be checked here")
    return key


def verify(armored: bytes, namespace: str, message: bytes) -> bytes:
    """Check an armored SSH signature of ``message`` in ``namespace``; return the signer's public
    key (wire encoding) for the caller to look up. SignatureError when it does not verify."""
    blob, signed_namespace, algorithm, signature = _parse(armored)
    if signed_namespace != namespace:
        raise SignatureError(f"signed for namespace {signed_namespace!r}, not {namespace!r}")
    if algorithm not in ("sha512", "sha256"):
        raise SignatureError(f"unknown hash algorithm {algorithm!r}")
    key = load_public_blob(blob)
    digest = (hashlib.sha512 if algorithm == "sha512" else hashlib.sha256)(message).digest()
    data = MAGIC + _string(namespace.encode()) + _string(b"") + _string(algorithm.encode()) + _string(digest)
    reader = _Reader(signature)
    kind = reader.string().decode("ascii", "replace")
    raw = reader.string()
    try:
        if isinstance(key, ed25519.Ed25519PublicKey) and kind == "ssh-ed25519":
            key.verify(raw, data)
        elif isinstance(key, ec.EllipticCurvePublicKey) and kind.startswith("ecdsa-sha2-nistp"):
            numbers = _Reader(raw)
            r, s = numbers.mpint(), numbers.mpint()
            key.verify(encode_dss_signature(r, s), data, ec.ECDSA(_CURVES[kind.removeprefix("ecdsa-sha2-")]))
        elif isinstance(key, rsa.RSAPublicKey) and kind in ("rsa-sha2-512", "rsa-sha2-256"):
            chosen = hashes.SHA512() if kind == "rsa-sha2-512" else hashes.SHA256()
            key.verify(raw, data, padding.PKCS1v15(), chosen)
        else:
            raise SignatureError(f"a {kind} signature does not match its key's type")
    except (InvalidSignature, KeyError):
        raise SignatureError("the signature does not match") from None
    return blob
