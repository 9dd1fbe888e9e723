"""`python -m sim` is `tlasim`."""

from sim.cli.main import main

main()
