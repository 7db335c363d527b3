"""Moving entries between the local store and remotes, checking every entry on arrival.

``pull_entry`` first asks who vouches for the entry (``signing.TrustPolicy``: a trusted signer's
signature over the manifest, or ``--trust-unsigned``), then downloads the wheel into a private
staging directory of the store under a name chosen here (never one a remote supplied), bounded
by the size the manifest states, hashes it there, and stores it only when the sha256 matches: a
refused, corrupt or tampered entry raises CacheIntegrityError and leaves nothing behind.
``push_entries`` re-hashes each local entry before sending it (a damaged local wheel is not
spread), signs its manifest with the pusher's key, and the remote checks its copy again (the
directory store hashes on arrival, S3 gets the checksum with the upload).

Lookups degrade, they do not abort: ``find_remote_entry`` and ``fetch_first`` turn an unreachable
or corrupt remote, or a refused entry, into a warning and go on with the next remote (a build then
builds locally).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from srcbuild.cache.manifest import Manifest
from srcbuild.cache.remotes import CacheRemote
from srcbuild.cache.signing import TrustPolicy, sign_manifest
from srcbuild.cache.store import CacheEntry, Warn, WheelCache, serves, warn_stderr
from srcbuild.capability import ComputeCapability
from srcbuild.errors import CacheIntegrityError, DiskFull, NotFoundError, PushConflict, SrcbuildError, UsageError
from srcbuild.files import sha256_file
from srcbuild.records import record

DOWNLOAD_NAME = "download.whl"
LOG_DOWNLOAD_NAME = "download.log"


@record
class Transfer:
    """What happened to one entry: "sent", "present" (already there), "fetched", "rejected" (it
    arrived damaged or was refused by the trust policy), "unusable" (the remote's listing left it
    out: a hostile or damaged entry, a link; ``wheel`` names the entry's path there), or
    "refused"/"skipped" (built from modified sources and not allowed)."""

    action: str
    wheel: str
    entry_key: str
    remote: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "action": self.action,
            "wheel": self.wheel,
            "entry_key": self.entry_key,
            "remote": self.remote,
            "detail": self.detail,
        }


def _pull(
    cache: WheelCache, remote: CacheRemote, manifest: Manifest, trust: TrustPolicy
) -> tuple[CacheEntry, str | None]:
    present = cache.get(manifest)
    if present is not None:
        try:
            present.check_fast()
            return present, None
        except CacheIntegrityError:
            cache.move_aside(present.path)
    where = f"{manifest.wheel} from {remote.url}"
    with cache.staging("pull-") as work:
        signature = remote.signature(manifest)
        signer = trust.check(manifest, signature, work, where)
        wheel = work / DOWNLOAD_NAME
        log = work / LOG_DOWNLOAD_NAME
        has_log = remote.fetch(manifest, wheel, log)
        arrived = sha256_file(wheel)
        if arrived != manifest.sha256:
            raise CacheIntegrityError(
                f"{where}: sha256 {arrived} does not match the manifest's {manifest.sha256}",
                "the remote copy is corrupt or was tampered with; it was not stored — "
                "push a good copy again from the machine that built it",
            )
        return cache.store(wheel, manifest, log if has_log else None, signature), signer


def pull_entry(cache: WheelCache, remote: CacheRemote, manifest: Manifest, trust: TrustPolicy) -> CacheEntry:
    """Download one entry into ``cache``, vouched for by ``trust`` and verified by sha256."""
    return _pull(cache, remote, manifest, trust)[0]


def find_remote_entry(
    remotes: Iterable[CacheRemote],
    fp: str,
    requested: Sequence[ComputeCapability],
    warn: Warn | None = warn_stderr,
    allow_modified: bool = False,
    fits: Callable[[Manifest], bool] | None = None,
) -> tuple[CacheRemote, Manifest] | None:
    """The first remote (in order) with an entry of ``fp`` that serves ``requested``; its newest such.

    A remote that cannot be read is a warning, and the next one is asked. Entries built from
    modified sources are candidates only with ``allow_modified``.
    """
    for remote in remotes:
        try:
            candidates = [
                m
                for m in remote.manifests(fp)
                if m.fingerprint == fp
                and serves(m, requested)
                and (allow_modified or not m.modified)
                and (fits is None or fits(m))
            ]
        except SrcbuildError as exc:
            if warn is not None:
                warn(f"remote {remote.url} skipped: {exc.message}")
            continue
        if candidates:
            return remote, max(candidates, key=lambda m: m.created)
    return None


def fetch_first(
    cache: WheelCache,
    remotes: Sequence[CacheRemote],
    fp: str,
    requested: Sequence[ComputeCapability],
    trust: TrustPolicy,
    warn: Warn | None = warn_stderr,
    refused: list[SrcbuildError] | None = None,
    allow_modified: bool = False,
    fits: Callable[[Manifest], bool] | None = None,
) -> tuple[CacheEntry, CacheRemote] | None:
    """Pull the first acceptable remote hit of ``fp`` into ``cache``; every failure is a warning.

    With a ``refused`` list, a hit that was found but refused (unsigned, badly signed, damaged) is
    appended there instead of being warned about.
    """
    for i, remote in enumerate(remotes):
        hit = find_remote_entry([remote], fp, requested, warn, allow_modified, fits)
        if hit is None:
            continue
        try:
            return pull_entry(cache, remote, hit[1], trust), remote
        except SrcbuildError as exc:
            if refused is not None:
                refused.append(exc)  # the caller reports it
            elif warn is not None:
                rest = "the next remote" if i + 1 < len(remotes) else "no remote"
                warn(f"{exc.message} ({rest} is tried)" if rest != "no remote" else exc.message)
    return None


def pull_entries(
    cache: WheelCache,
    remote: CacheRemote,
    trust: TrustPolicy,
    fp: str | None = None,
    allow_modified: bool = False,
    fits: Callable[[Manifest], bool] | None = None,
) -> list[Transfer]:
    """Copy every entry of ``remote`` (of fingerprint ``fp`` when given) that ``cache`` lacks;
    entries built from modified sources only with ``allow_modified``, and with ``fits`` only those
    that can run on the target machine."""
    results = []
    manifests = remote.manifests(fp)
    for where, why in remote.refused:
        results.append(Transfer("unusable", where, "", remote.url, why))
    for manifest in manifests:
        if fits is not None and not fits(manifest):
            why = f"needs glibc {manifest.glibc_needed or 'newer than this machine has'}"
            results.append(Transfer("skipped", manifest.wheel, manifest.entry_key, remote.url, why))
            continue
        if manifest.modified and not allow_modified:
            why = f"built from modified sources ({len(manifest.changed_files)} file(s)); --allow-modified takes it"
            results.append(Transfer("skipped", manifest.wheel, manifest.entry_key, remote.url, why))
            continue
        if cache.get(manifest) is not None:
            results.append(Transfer("present", manifest.wheel, manifest.entry_key, remote.url))
            continue
        try:
            _entry, signer = _pull(cache, remote, manifest, trust)
        except (CacheIntegrityError, NotFoundError) as exc:  # this entry: the others are still pulled
            results.append(Transfer("rejected", manifest.wheel, manifest.entry_key, remote.url, exc.message))
            continue
        except SrcbuildError as exc:
            session = getattr(remote, "session", None)
            if isinstance(exc, DiskFull) or (session is not None and session.over_budget):
                raise  # this machine's disk, or the command's network budget: the next entry fails too
            results.append(Transfer("rejected", manifest.wheel, manifest.entry_key, remote.url, exc.message))
            continue
        detail = f"signed by {signer}" if signer else "signature not checked (--trust-unsigned)"
        results.append(Transfer("fetched", manifest.wheel, manifest.entry_key, remote.url, detail))
    return results


def push_entries(
    entries: Iterable[CacheEntry], remote: CacheRemote, signing_key: Path | None, allow_modified: bool = False
) -> list[Transfer]:
    """Send ``entries`` to ``remote``, each re-hashed first and signed with ``signing_key`` (None: unsigned).

    An entry built from modified sources is refused (a ``refused`` transfer) unless ``allow_modified``.
    """
    if not remote.writable:
        raise UsageError(
            f"{remote.url} is an HTTP index and is read-only",
            "push to a directory or s3:// remote, or run `srcbuild cache index` on the serving machine",
        )
    results = []
    for entry in entries:
        if entry.manifest.modified and not allow_modified:
            files = ", ".join(entry.manifest.changed_files[:3]) or "unlisted files"
            why = f"built from modified sources ({files}); push it with --allow-modified"
            results.append(Transfer("refused", entry.manifest.wheel, entry.key, remote.url, why))
            continue
        try:
            entry.check()
        except CacheIntegrityError as exc:
            results.append(Transfer("rejected", entry.manifest.wheel, entry.key, remote.url, exc.message))
            continue
        signature = None
        if signing_key is not None:
            with tempfile.TemporaryDirectory(prefix="srcbuild-sign-") as work:
                signature = sign_manifest(entry.manifest, signing_key, Path(work))
        try:
            sent = remote.push(entry, signature)
        except PushConflict as exc:  # the remote holds other bytes under this entry: never overwritten
            results.append(Transfer("rejected", entry.manifest.wheel, entry.key, remote.url, exc.message))
            continue
        detail = "signed" if signature is not None else "unsigned"
        results.append(Transfer("sent" if sent else "present", entry.manifest.wheel, entry.key, remote.url, detail))
    return results
