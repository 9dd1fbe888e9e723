"""Two-phase commit: a TM and N RMs with presumed abort and crash recovery."""
