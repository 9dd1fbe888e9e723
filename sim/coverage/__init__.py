"""Spec coverage: which spec states, actions and action pairs runs reached.

Every run is already mapped onto the spec's variables step by step (the
refinement mapping), so a run knows which spec states it passed through at
no cost beyond hashing them. `hashing` gives a spec value a hash that is the
same in every process; `run` gathers one run's coverage as it steps;
`campaign` unites the runs of a campaign, in seed order, and names the
actions none of them reached.
"""
