"""Treiber's tagged stack of seed 000 (specs/lockfree/TreiberStack.tla)."""
