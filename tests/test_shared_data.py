"""Data from outside the repository: where it is looked for, and tests that need it skip, saying why, without it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from evals.shared_data import ENV_VAR, shared_data_path, shared_data_root
from tests.conftest import REPO

MODULE = textwrap.dedent('''
    import os
    from pathlib import Path

    import pytest

    ROOT = Path(os.environ["{env}"])  # kept from import time, as a module constant would be


    @pytest.mark.shared_data("dti/present.csv")
    def test_marked_and_present():
        assert (ROOT / "dti/present.csv").read_text() == "x"


    @pytest.mark.shared_data("dti/dtiam")
    def test_marked_and_missing():
        (ROOT / "dti/dtiam/drug_smiles.csv").read_text()


    @pytest.mark.shared_data(optional=True)
    def test_optional_sees_the_folder():
        assert os.environ["{env}"] == str(ROOT)


    def test_unmarked_sees_no_folder():
        assert not Path(os.environ["{env}"]).exists()


    def test_unmarked_reading_the_folder_fails():
        (ROOT / "dti/present.csv").read_text()
''').format(env=ENV_VAR)


def test_the_folder_is_beside_the_repository_unless_the_environment_names_one(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert shared_data_root() == REPO.parent / "shared" / "data"
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert shared_data_path("dti", "dtiam") == tmp_path / "dti" / "dtiam"


def test_unmarked_tests_run_as_in_a_fresh_clone() -> None:
    assert not shared_data_root().exists()
    assert os.environ[ENV_VAR] != str(REPO.parent / "shared" / "data")


def test_marker_skips_with_the_reason_and_catches_unmarked_reads(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "dti").mkdir(parents=True)
    (shared / "dti" / "present.csv").write_text("x")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "test_probe.py").write_text(MODULE)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env |= {ENV_VAR: str(shared), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.shared_data_plugin", "-p", "no:cacheprovider", "-rs", "-v",
         "--rootdir", str(tmp_path / "run"), str(tmp_path / "run")],
        cwd=tmp_path / "run", env=env, capture_output=True, text=True, timeout=120,
    )
    out = proc.stdout
    assert "test_marked_and_present PASSED" in out
    assert "test_marked_and_missing SKIPPED" in out
    assert f"needs {shared / 'dti' / 'dtiam'}" in out and ENV_VAR in out
    assert "test_optional_sees_the_folder PASSED" in out
    assert "test_unmarked_sees_no_folder PASSED" in out
    assert "test_unmarked_reading_the_folder_fails FAILED" in out
    assert "without @pytest.mark.shared_data" in out
    assert proc.returncode == 1, out


def test_ci_runs_the_marked_tests_with_no_folder() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    step = next(line for line in ci.splitlines() if f"{ENV_VAR}=" in line)
    assert "-m shared_data" in step and "-rs" in step
