"""One run of one seed: its trace, its verdict and its failure report."""
