"""Validation: traces checked by TLC, verdicts explained and reported."""
