"""Shared test helpers (keep small)."""

from __future__ import annotations

import os
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


# ``FGL_TEST_CPU=FILE``: write each test's CPU seconds (this process and the child
# processes it waited for: user + system) to FILE, slowest first. The shared
# machine's wall times swing several times; CPU seconds are what to compare when
# sizing the default tier (``python -m pytest -q`` must stay under 5 minutes).
_CPU_LOG = os.environ.get("FGL_TEST_CPU")
if _CPU_LOG and os.environ.get("PYTEST_XDIST_WORKER"):  # one file per xdist worker: FILE.gw0, FILE.gw1
    _CPU_LOG = f"{_CPU_LOG}.{os.environ['PYTEST_XDIST_WORKER']}"
_cpu_by_test: dict = {}


def _cpu_now() -> float:
    import resource  # (Unix only: imported when asked for)

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


if _CPU_LOG:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        start = _cpu_now()
        yield
        _cpu_by_test[item.nodeid] = _cpu_now() - start

    def pytest_sessionfinish(session, exitstatus):
        if not _cpu_by_test:  # the xdist controller runs no test itself
            return
        rows = sorted(_cpu_by_test.items(), key=lambda kv: -kv[1])
        total = sum(_cpu_by_test.values())
        with open(_CPU_LOG, "w", encoding="utf-8") as out:
            out.write(f"{total:.1f} s CPU in {len(rows)} tests (setup, call and teardown)\n")
            for nodeid, sec in rows:
                out.write(f"{sec:8.2f}  {nodeid}\n")
