"""Conformance: where a spec allows more than the correct implementation ever does."""
