"""TLA+ text and TLC: literals, module sources, generated trace modules, SANY and TLC drivers."""
