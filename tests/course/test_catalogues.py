"""Every gettext catalogue of the course opens in the translators' tools: `msgfmt --check` (what Poedit and
Weblate run when they load or save a file) finds no error in any of them."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = sorted(ROOT.glob("i18n/*/*/*.po")) + sorted(ROOT.glob("course/bertlib_course/locale/*/LC_MESSAGES/*.po"))


def test_there_are_catalogues_to_check():
    assert len(CATALOGUES) >= 19, CATALOGUES


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda path: str(path.relative_to(ROOT)))
def test_msgfmt_check_passes(path, tmp_path):
    msgfmt = shutil.which("msgfmt")
    if msgfmt is None:  # `make test` installs Debian's gettext (APT_PACKAGES); elsewhere say what is missing
        pytest.skip("msgfmt not found: install GNU gettext (Debian: apt-get install gettext)")
    result = subprocess.run([msgfmt, "--check", "-o", str(tmp_path / "out.mo"), str(path)],
                            capture_output=True, text=True)
    errors = [line for line in result.stderr.splitlines() if "warning:" not in line]
    assert result.returncode == 0, f"{path.relative_to(ROOT)}: msgfmt --check failed:\n" + "\n".join(errors)
