"""`python -m wikirag.cli` runs the command line."""

from wikirag.cli import main

main()
