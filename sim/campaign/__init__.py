"""Many runs: seed sweeps, hypothesis search, shrinking, executors and the results database."""
