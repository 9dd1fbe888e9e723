"""Shard split: a sharded key-value store that splits shards under load.

See docs/shardsplit-model.md.
"""
