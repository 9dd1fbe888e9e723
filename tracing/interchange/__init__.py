"""Interchange: ITF export and other systems' logs read through a mapping."""
