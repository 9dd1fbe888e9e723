"""Writing traces: the structlog emitter the simulator logs through."""
