"""Shared test helpers (keep small)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
FIXTURES_DIR = REPO_ROOT / "fixtures"

if str(TESTS_DIR) not in sys.path:  # lets tests `import markers`, `import oracle`
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES_DIR
