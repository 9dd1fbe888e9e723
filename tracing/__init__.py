"""tracing: traces written, read, mutated and checked against TLA+ specs by TLC."""

from pathlib import Path

from tlasim.protocols.trace_template import set_template_deriver


def _derive(module: Path) -> Path:
    # Imported on first use: SANY's driver is not needed to import tracing.
    from tlasim.tracing.tla.derive_template import derived_template

    return derived_template(module)


set_template_deriver(_derive)
