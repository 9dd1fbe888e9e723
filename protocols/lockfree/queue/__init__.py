"""The exchange-publish queue of seed 000 (specs/lockfree/LockFreeQueue.tla)."""
