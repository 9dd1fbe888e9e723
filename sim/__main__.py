"""`python -m sim` is `tlasim`."""

from sim.cli import main

main()
