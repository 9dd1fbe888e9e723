"""The live runtime: the unchanged sans-IO cores as OS processes on trio (docs/live.md)."""
