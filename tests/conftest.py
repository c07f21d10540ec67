"""Shared test setup: stable rich output, and the repository root on sys.path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Pin rich before anything imports it: a fixed width, no colour, no terminal detection.
os.environ["COLUMNS"] = "100"
os.environ["NO_COLOR"] = "1"
os.environ.pop("FORCE_COLOR", None)
os.environ["TERM"] = "dumb"

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import typer.rich_utils  # noqa: E402

typer.rich_utils.MAX_WIDTH = 100
typer.rich_utils.FORCE_TERMINAL = False
typer.rich_utils.COLOR_SYSTEM = None
