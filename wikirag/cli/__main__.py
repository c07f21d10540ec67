"""`python -m wikirag.cli` runs the command line."""

from wikirag.cli.app import app

app()
