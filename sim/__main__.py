"""`python -m tlasim.sim` is `tlasim`."""

from tlasim.sim.cli.main import main

main()
