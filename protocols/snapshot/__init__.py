"""Snapshot transfer: bring a replica up from a snapshot while the source keeps taking writes.

See docs/snapshot-model.md.
"""
