"""An S3-compatible bucket as a remote (boto3): ``s3://bucket/prefix``.

Objects use the local store's layout under the prefix:
``<prefix>/entries/<fp[:2]>/<fp>/<entry-key>/{<wheel>, build.log, manifest.json}``. A reader lists
``entries/`` only and sees an entry once its manifest is there. A push uploads under its own
staging prefix first and copies into ``entries/`` with the manifest last (``s3_staging``): what
a push stopped by an error or a signal wrote is deleted, and what a push killed outright left is
finished or deleted by the next push (exactly, for a push of this machine; after its lease of
``s3_staging.LEASE_SECONDS`` for another machine's). Each wheel is uploaded with its SHA-256
(``ChecksumSHA256``) so a server that checks it (AWS S3 does; moto does not) rejects a copy
damaged in flight, and every download is hashed again by ``srcbuild.cache.transfer``. Reads are
bounded (``limits``): manifests and signatures by size, a wheel by the size its manifest states,
every socket read by a timeout. A push writes ``<prefix>/CACHEDIR.TAG`` once, so a pull can tell
a srcbuild cache from a wrong prefix. A bucket that refuses a write because it is full or over
its quota (``FULL_CODES``) is exit 4 naming the bucket, never an internal error.

Endpoint: ``--s3-endpoint-url`` > ``SRCBUILD_S3_ENDPOINT_URL`` > ``AWS_ENDPOINT_URL``; credentials
and region come from the usual AWS chain (environment, ``~/.aws``, instance roles); the region
defaults to us-east-1 when none is configured.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from srcbuild.cache.manifest import LOG_NAME, MANIFEST_NAME, Manifest
from srcbuild.cache.remotes.s3_staging import Staging, sweep_staging
from srcbuild.cache.store import CACHEDIR_TAG, SIGNATURE_NAME, CacheEntry
from srcbuild.errors import CacheIntegrityError, HostError, NotFoundError, PushConflict, SrcbuildError, UsageError
from srcbuild.limits import (
    MAX_LISTED,
    MAX_LOG,
    MAX_MANIFEST,
    MAX_SIGNATURE,
    MAX_WHEEL,
    READ_TIMEOUT,
    copy_limited,
    read_limited,
)

DEFAULT_REGION = "us-east-1"
TAG_NAME = "CACHEDIR.TAG"
# entries/ directories without a manifest this old (seconds) were written in place by a push of
# srcbuild before pushes were staged (``s3_staging``), and killed: swept by the next push
ORPHAN_AGE = 3600.0
# error codes of a bucket that is full or over its quota: MinIO's XMinioStorageFull (HTTP 507)
# and XMinioAdminBucketQuotaExceeded (400; BucketQuotaExceeded in later releases), Ceph RGW's
# QuotaExceeded (403); any answer with HTTP 507 (Insufficient Storage) counts too
FULL_CODES = frozenset({"XMinioStorageFull", "XMinioAdminBucketQuotaExceeded", "BucketQuotaExceeded", "QuotaExceeded"})


def split_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix/`` -> ("bucket", "some/prefix")."""
    parsed = urlparse(url)
    if not parsed.netloc:
        raise UsageError(f"{url}: no bucket name", "write the remote as s3://bucket/prefix")
    return parsed.netloc, parsed.path.strip("/")


class S3Remote:
    """A wheel store in an S3 bucket."""

    writable = True

    def __init__(
        self, url: str, endpoint_url: str | None = None, client: Any = None, endpoint_origin: str = "default"
    ) -> None:
        self.refused: list[tuple[str, str]] = []  # (entry, why) the last listing left out
        self._swept = False  # orphans of killed pushes are swept once per command, before its first push
        self.url = url
        self.bucket, self.prefix = split_s3_url(url)
        self.endpoint_url = endpoint_url
        self.endpoint_origin = endpoint_origin  # where the endpoint came from (``srcbuild.precedence``)
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            session = boto3.session.Session()
            config = Config(connect_timeout=10, read_timeout=READ_TIMEOUT, retries={"max_attempts": 3})
            self._client = session.client(
                "s3", endpoint_url=self.endpoint_url, region_name=session.region_name or DEFAULT_REGION, config=config
            )
        return self._client

    def _key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def _entry_key(self, manifest: Manifest, name: str) -> str:
        fp = manifest.fingerprint
        return self._key("entries", fp[:2], fp, manifest.entry_key, name)

    def _call(self, what: str, func: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            return func(**kwargs)
        except NoCredentialsError:
            raise UsageError(
                f"{self.url}: no AWS credentials to {what}",
                "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or configure a profile in ~/.aws",
            ) from None
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in FULL_CODES or status == 507:
                said = exc.response.get("Error", {}).get("Message") or "no message"
                raise HostError(
                    f"{self.url}: bucket {self.bucket!r} is full or over its quota; it refused to {what} "
                    f"({code or 'HTTP 507'}: {said})",
                    "free space in the bucket (delete old entries) or have its quota raised, then push again",
                ) from None
            if code == "EntityTooLarge":
                raise HostError(
                    f"{self.url}: bucket {self.bucket!r} refused to {what}: larger than it accepts in one upload",
                    "push to a store that accepts objects of this size (AWS S3 takes up to 5 GiB in one upload)",
                ) from None
            if code in ("NoSuchBucket", "404", "NoSuchKey"):
                raise NotFoundError(
                    f"{self.url}: cannot {what}: {code}", f"check that the bucket {self.bucket!r} exists"
                ) from None
            if code in ("BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch"):
                raise CacheIntegrityError(
                    f"{self.url}: the server rejected the upload ({code}): the bytes changed in flight",
                    "run the push again",
                ) from None
            raise HostError(
                f"{self.url}: cannot {what}: {exc}", "check the bucket, the endpoint and your access"
            ) from None
        except (BotoCoreError, OSError, ValueError) as exc:
            raise NotFoundError(
                f"{self.url}: cannot {what}: {exc}",
                f"check the endpoint ({self._endpoint_said()}; --s3-endpoint-url, SRCBUILD_S3_ENDPOINT_URL or "
                "AWS_ENDPOINT_URL sets it) and the network",
            ) from None

    def _endpoint_said(self) -> str:
        if self.endpoint_url is None:
            return "AWS's own, none is set"
        return f"{self.endpoint_url}, from the {self.endpoint_origin}"

    def _manifest_keys(self, fp: str | None) -> list[str]:
        prefix = self._key("entries", fp[:2], fp) + "/" if fp else self._key("entries") + "/"
        keys: list[str] = []
        paginator = self.client.get_paginator("list_objects_v2")
        pages = self._call("list entries", lambda: iter(paginator.paginate(Bucket=self.bucket, Prefix=prefix)))
        listed = 0
        for page in self._call("list entries", lambda: list(itertools.islice(pages, MAX_LISTED // 1000 + 1))):
            for item in page.get("Contents", []):
                listed += 1
                if listed > MAX_LISTED:
                    raise CacheIntegrityError(
                        f"{self.url}: more than {MAX_LISTED} keys under {prefix}; not a cache srcbuild can list",
                        "check the prefix; a srcbuild cache keeps one directory per wheel under entries/",
                    )
                if item["Key"].endswith("/" + MANIFEST_NAME):
                    keys.append(item["Key"])
        return keys

    def _read(self, key: str, limit: int, what: str) -> bytes:
        response = self._call(f"read {what}", self.client.get_object, Bucket=self.bucket, Key=key)
        body = response["Body"]
        try:
            if int(response.get("ContentLength") or 0) > limit:
                raise HostError(f"s3://{self.bucket}/{key} is larger than {limit} bytes; not read", "check the bucket")
            return self._call(f"read {what}", lambda: read_limited(body, limit, f"s3://{self.bucket}/{key}"))
        finally:
            body.close()

    def check(self, for_push: bool = False) -> None:
        """UsageError unless the bucket exists and (to pull from) the prefix holds a srcbuild cache."""
        self._call("open the bucket", self.client.head_bucket, Bucket=self.bucket)
        if for_push:
            return
        listed = self._call(
            "list the prefix",
            self.client.list_objects_v2,
            Bucket=self.bucket,
            Prefix=self._key("") + "/" if self.prefix else "",
            MaxKeys=1000,
        )
        keys = {item["Key"] for item in listed.get("Contents", [])}
        if self._key(TAG_NAME) in keys or any(k.startswith(self._key("entries") + "/") for k in keys):
            return
        raise UsageError(
            f"remote {self.url}: not a srcbuild cache (no {TAG_NAME}, no entries/ under the prefix)",
            "check the prefix; `srcbuild cache push --remote " + self.url + "` creates one",
        )

    def manifests(self, fp: str | None = None) -> list[Manifest]:
        found = []
        self.refused = []
        for key in self._manifest_keys(fp):
            try:
                body = self._read(key, MAX_MANIFEST, "a manifest")
                found.append(Manifest.loads(body, f"s3://{self.bucket}/{key}"))
            except CacheIntegrityError as exc:  # a damaged entry on the remote is never used
                self.refused.append((key, exc.message))
            except HostError as exc:
                if "larger than" not in exc.message:
                    raise
                self.refused.append((key, exc.message))
        return found

    def signature(self, manifest: Manifest) -> bytes | None:
        from botocore.exceptions import ClientError

        key = self._entry_key(manifest, SIGNATURE_NAME)
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError:
            return None
        try:
            return self._read(key, MAX_SIGNATURE, "a signature")
        except HostError as exc:
            if "larger than" in exc.message:
                return None
            raise

    def fetch(self, manifest: Manifest, wheel_to: Path, log_to: Path) -> bool:
        limit = manifest.size or MAX_WHEEL
        response = self._call(
            f"download {manifest.wheel}",
            self.client.get_object,
            Bucket=self.bucket,
            Key=self._entry_key(manifest, manifest.wheel),
        )
        body = response["Body"]
        try:
            if int(response.get("ContentLength") or 0) > limit:
                raise CacheIntegrityError(
                    f"{manifest.wheel} from {self.url}: {response.get('ContentLength')} bytes, "
                    f"more than the {limit} its manifest states",
                    "the remote copy is damaged or hostile; it was not downloaded",
                )
            with open(wheel_to, "wb") as out:
                self._call(
                    f"download {manifest.wheel}",
                    lambda: copy_limited(body, out, limit, f"{manifest.wheel} from {self.url}"),
                )
        finally:
            body.close()
        try:
            log_to.write_bytes(self._read(self._entry_key(manifest, LOG_NAME), MAX_LOG, "the build log"))
        except SrcbuildError:  # the build log is optional
            return False
        return True

    def _present(self, manifest: Manifest) -> Manifest | None:
        """The manifest the bucket holds under ``manifest``'s entry, if a readable one."""
        try:
            return Manifest.loads(
                self._read(self._entry_key(manifest, MANIFEST_NAME), MAX_MANIFEST, "a manifest"), self.url
            )
        except SrcbuildError:
            return None

    def _has(self, manifest: Manifest, signature: bytes | None) -> bool:
        present = self._present(manifest)
        if present is None or present.sha256 != manifest.sha256:
            return False
        return signature is None or self.signature(manifest) == signature

    def _refuse_other_bytes(self, entry: CacheEntry) -> None:
        """PushConflict (exit 7) when the bucket holds this entry with another wheel: never replaced.
        S3 has no lock to check under, so two pushes racing through the same seconds can still both
        land (docs/security.md); a push after another is always refused."""
        present = self._present(entry.manifest)
        if present is not None and present.sha256 != entry.manifest.sha256:
            raise PushConflict(
                f"{self.url}: entry {entry.key[:12]} already holds another wheel (sha256 "
                f"{present.sha256[:16]}..., this push's is {entry.manifest.sha256[:16]}...); refused",
                "two builds of the same inputs made different bytes, or two machines pushed at once; "
                f"to replace the shared copy, delete s3://{self.bucket}/{self._entry_key(entry.manifest, '')} "
                "and push again",
            )

    def sweep_orphans(self, age: float = ORPHAN_AGE) -> list[str]:
        """Finish or delete what killed pushes left (``s3_staging.sweep_staging``), and delete the
        objects of ``entries/`` directories without a manifest last written more than ``age``
        seconds ago (a killed push of a srcbuild that wrote in place); the keys deleted."""
        swept = sweep_staging(self)
        prefix = self._key("entries") + "/"
        paginator = self.client.get_paginator("list_objects_v2")
        groups: dict[str, list[tuple[str, float]]] = {}
        listed = 0
        for page in self._call("list entries", lambda: list(paginator.paginate(Bucket=self.bucket, Prefix=prefix))):
            for item in page.get("Contents", []):
                listed += 1
                if listed > MAX_LISTED:
                    return swept
                directory, _, _name = item["Key"].rpartition("/")
                groups.setdefault(directory, []).append((item["Key"], item["LastModified"].timestamp()))
        now = time.time()
        for objects in groups.values():
            if any(key.endswith("/" + MANIFEST_NAME) for key, _ in objects):
                continue
            if now - max(stamp for _, stamp in objects) < age:
                continue
            for key, _ in objects:
                with contextlib.suppress(Exception):
                    self.client.delete_object(Bucket=self.bucket, Key=key)
                    swept.append(key)
        return swept

    def push(self, entry: CacheEntry, signature: bytes | None = None) -> bool:
        manifest = entry.manifest
        if not self._swept:
            self._swept = True
            self.sweep_orphans()
        if self._has(manifest, signature):
            return False
        self._refuse_other_bytes(entry)
        checksum = base64.b64encode(bytes.fromhex(manifest.sha256)).decode("ascii")
        with Staging(self, manifest).leased() as staging:
            with open(entry.wheel_path, "rb") as body:
                staging.put(
                    manifest.wheel,
                    f"upload {manifest.wheel}",
                    Body=body,
                    ChecksumSHA256=checksum,
                    Metadata={"sha256": manifest.sha256},
                )
            if entry.log_path is not None:
                with open(entry.log_path, "rb") as body:
                    staging.put(LOG_NAME, "upload the build log", Body=body)
            if signature is not None:
                staging.put(SIGNATURE_NAME, "upload the signature", Body=signature)
            staging.put(
                MANIFEST_NAME,
                "upload the manifest",
                Body=manifest.dumps().encode("utf-8"),
                ContentType="application/json",
            )
            self._refuse_other_bytes(entry)  # again, after the upload: narrows the race to the publish
            staging.publish()
        with contextlib.suppress(SrcbuildError):
            self._call(
                "mark the cache",
                self.client.put_object,
                Bucket=self.bucket,
                Key=self._key(TAG_NAME),
                Body=CACHEDIR_TAG.encode("utf-8"),
            )
        return True
