"""`python -m wikirag` runs the command line, as the `wikirag` script does."""

from wikirag.cli import main

main()
