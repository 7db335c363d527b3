"""The parallel step's unpack-and-edit script, run for real on small sdists made here."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from srcbuild.ext.plan import UNPACK_SCRIPT

pytestmark = pytest.mark.integration


def test_the_unpack_script_puts_srcbuilds_lines_first_only_where_python_allows(tmp_path: Path) -> None:
    """The parallel step's script, run for real on small sdists: srcbuild's lines go before setup.py
    (checked against their sha256), except before a from __future__ import, which must stay first."""
    before = tmp_path / "first.py.in"
    before.write_text("# srcbuild's lines\n")
    digest = hashlib.sha256(before.read_bytes()).hexdigest()

    runs = iter(range(10))

    def run(setup: str, sha: str = digest) -> tuple[subprocess.CompletedProcess[str], Path]:
        n = next(runs)
        (tmp_path / str(n)).mkdir()
        sdist = tmp_path / str(n) / "pkg-1.0.tar.gz"
        with tarfile.open(sdist, "w:gz") as tar:
            data = setup.encode()
            info = tarfile.TarInfo("pkg-1.0/setup.py")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        dest = tmp_path / str(n) / "src"
        argv = [sys.executable, "-c", UNPACK_SCRIPT, str(sdist), "x" * 64, str(dest), "pkg-1.0", "setup.py",
                "use_ninja=False", "use_ninja=True", str(before), sha]
        return subprocess.run(argv, capture_output=True, text=True, check=False), dest / "pkg-1.0" / "setup.py"

    done, setup = run("setup(cmdclass=X(use_ninja=False))\n")
    assert done.returncode == 0 and "its extensions side by side (first.py.in before it)" in done.stdout
    assert setup.read_text() == "# srcbuild's lines\nsetup(cmdclass=X(use_ninja=True))\n"
    done, setup = run("from __future__ import annotations\nsetup(cmdclass=X(use_ninja=False))\n")
    assert done.returncode == 0 and "it imports from __future__, so its extensions build one after" in done.stdout
    assert setup.read_text().startswith("from __future__ import annotations\n")
    done, _ = run("setup(cmdclass=X(use_ninja=False))\n", sha="0" * 64)  # srcbuild's file changed since
    assert done.returncode != 0 and "its sha256 is not " + "0" * 64 in done.stderr
