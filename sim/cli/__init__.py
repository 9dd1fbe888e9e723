"""The `tlasim` command line: one module per family of commands."""
