"""protocols/twopc."""
