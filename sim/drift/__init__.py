"""Drift checks between specs and the code they model."""
