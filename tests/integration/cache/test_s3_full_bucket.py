"""A push to an S3 bucket that is full, or over its quota, is exit 4 with one line naming the bucket
and why, never an internal error or "check that the bucket exists".

moto cannot fill up, so the bucket here is a small S3 stand-in on 127.0.0.1: it answers the
listing and lookups a push makes as an empty bucket does, and every upload with the error a real
server sends when it is full (the answer bodies are S3's error XML with these codes):

- MinIO below its free-space threshold: HTTP 507, ``XMinioStorageFull`` ("Storage backend has
  reached its minimum free drive threshold. Please delete a few objects to proceed.";
  minio/minio cmd/api-errors.go, ``ErrStorageFull``);
- MinIO over a bucket quota: HTTP 400, ``XMinioAdminBucketQuotaExceeded`` ("Bucket quota
  exceeded"; minio/minio cmd/api-errors.go, ``ErrAdminBucketQuotaExceeded``, which
  ``toAPIErrorCode`` gives for ``BucketQuotaExceeded``);
- Ceph RGW over a user or bucket quota: HTTP 403, ``QuotaExceeded`` (ceph/ceph
  src/rgw/rgw_common.cc, ``ERR_QUOTA_EXCEEDED``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from srcbuild.cache.store import WheelCache
from srcbuild.cli import main
from tests.unit.cache.synthetic import make_manifest, make_wheel

pytestmark = pytest.mark.integration

FULL = {
    "minio-storage-full": (
        507,
        "XMinioStorageFull",
        "Storage backend has reached its minimum free drive threshold. Please delete a few objects to proceed.",
    ),
    "minio-bucket-quota": (400, "XMinioAdminBucketQuotaExceeded", "Bucket quota exceeded"),
    "ceph-quota": (403, "QuotaExceeded", ""),
}

EMPTY_LISTING = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>{bucket}</Name>'
    "<Prefix>{prefix}</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
    "<IsTruncated>false</IsTruncated></ListBucketResult>"
)


def error_xml(code: str, message: str, resource: str) -> bytes:
    said = f"<Message>{message}</Message>" if message else ""
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>{said}'
        f"<Resource>{resource}</Resource><RequestId>17E9A5D1C2B3A4F0</RequestId><HostId>stand-in</HostId></Error>"
    )
    return body.encode("utf-8")


class FullBucket(BaseHTTPRequestHandler):
    """One bucket, path-style, that holds nothing and takes nothing."""

    protocol_version = "HTTP/1.1"
    answer: ClassVar[tuple[int, str, str]] = FULL["minio-storage-full"]
    uploads: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _drain(self) -> None:
        length = self.headers.get("Content-Length")
        if length is not None:
            self.rfile.read(int(length))
        elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                self.rfile.read(size + 2)
                if size == 0:
                    break

    def _send(self, status: int, body: bytes = b"", content_type: str = "application/xml") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        path = self.path.split("?", 1)[0].strip("/")
        self._send(200 if "/" not in path else 404)

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        bucket, _, key = path.strip("/").partition("/")
        if key:
            self._send(404, error_xml("NoSuchKey", "The specified key does not exist.", path))
            return
        prefix = next((p[len("prefix=") :] for p in query.split("&") if p.startswith("prefix=")), "")
        self._send(200, EMPTY_LISTING.format(bucket=bucket, prefix=prefix).encode("utf-8"))

    def do_PUT(self) -> None:
        self._drain()
        type(self).uploads.append(self.path)
        status, code, message = self.answer
        self._send(status, error_xml(code, message, self.path.split("?", 1)[0]))

    def do_DELETE(self) -> None:
        self._send(204)


@pytest.fixture()
def full_bucket(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The stand-in's endpoint URL, answering uploads as ``request.param`` (a key of FULL)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    handler = type("Answer", (FullBucket,), {"answer": FULL[request.param], "uploads": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("full_bucket", sorted(FULL), indirect=True)
def test_a_full_bucket_is_exit_4_naming_the_bucket(full_bucket: str, tmp_path: Path, capsys, request) -> None:
    wheel = make_wheel(tmp_path / "dist")
    cache_a = tmp_path / "cache"
    WheelCache(cache_a).store(wheel, make_manifest(wheel))
    _status, code, message = FULL[request.node.callspec.params["full_bucket"]]
    argv = ["cache", "push", "--unsigned", "--remote", "s3://lab-wheels/team", "--s3-endpoint-url", full_bucket]
    rc = main([*argv, "--cache-dir", str(cache_a)])
    err = capsys.readouterr().err
    assert rc == 4, err
    lines = err.splitlines()
    assert lines[0].startswith("error: s3://lab-wheels/team: bucket 'lab-wheels' is full or over its quota; ")
    assert f"({code}: {message or 'no message'})" in lines[0]
    assert lines[1:] == [
        "hint: free space in the bucket (delete old entries) or have its quota raised, then push again"
    ]
    assert "exists" not in err and "Traceback" not in err
