"""Traces derived from traces: invalid mutants and partial logs, for testing validators."""
