"""Shared test setup: stable rich output, and the repository root on sys.path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Pin rich before anything imports it: a fixed width, no colour, no terminal detection.
os.environ["COLUMNS"] = "100"
os.environ["NO_COLOR"] = "1"
os.environ.pop("FORCE_COLOR", None)
os.environ["TERM"] = "dumb"

# The default embedder derives its int8 model file at first use: tests keep it in the temp folder (shared by
# runs, checked by its sha256 sidecar like any cache), not in the user's cache folder.
if "WIKIRAG_MODEL_CACHE" not in os.environ:
    import tempfile

    os.environ["WIKIRAG_MODEL_CACHE"] = str(Path(tempfile.gettempdir()) / "wikirag-test-models")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import typer.rich_utils  # noqa: E402

typer.rich_utils.MAX_WIDTH = 100
typer.rich_utils.FORCE_TERMINAL = False
typer.rich_utils.COLOR_SYSTEM = None


# --- live tests must run in CI -----------------------------------------------------------------------------
# These files talk to real servers (a llama.cpp LLM server, a private PostgreSQL with pgvector). Locally they
# skip, saying why, when a package or server is missing; in CI (`WIKIRAG_REQUIRE_LIVE=1`, set by .ci/run) a
# skip there is a failure, so a broken install can no longer turn them silently into skips.
REQUIRED_LIVE = ("tests/test_live_llm.py", "tests/test_postgres.py", "tests/test_embedded.py")


def pytest_runtest_makereport(item, call):  # noqa: ANN001, ANN201  (pytest hook)
    if call.when not in ("setup", "call") or not os.environ.get("WIKIRAG_REQUIRE_LIVE"):
        return None
    if not (call.excinfo and call.excinfo.errisinstance(__import__("_pytest").outcomes.Skipped)):
        return None
    path = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
    if path not in REQUIRED_LIVE:
        return None
    from _pytest.reports import TestReport

    report = TestReport.from_item_and_call(item, call)
    report.outcome = "failed"
    report.longrepr = f"live test skipped in CI ({path}): {call.excinfo.value}"
    return report


def pytest_collection_modifyitems(session, config, items):  # noqa: ANN001, ANN201  (pytest hook)
    """In CI, a live file that was not even collected (an import-time skip) fails the run too."""
    if not os.environ.get("WIKIRAG_REQUIRE_LIVE"):
        return
    collected = {Path(str(i.fspath)).resolve().relative_to(ROOT).as_posix() for i in items}
    missing = [p for p in REQUIRED_LIVE if p not in collected and (ROOT / p).exists()]
    if missing and config.args in ([], ["tests"], [str(ROOT / "tests")]):
        raise pytest.UsageError(f"live tests not collected in CI: {', '.join(missing)}")


@pytest.fixture
def fast_embedding(monkeypatch):  # noqa: ANN001, ANN201  (pytest fixture)
    """The ONNX model is the expensive boundary: CLI and store tests swap in the hashing embedding."""
    from tests.storekit import HashEmbedding
    from wikirag.lightrag import engine

    monkeypatch.setattr(engine, "make_embedding_func", lambda spec, counter, base_url=None: HashEmbedding().func())
