"""The splice's typed refusals as this CLI's errors (``build --base``, ``eval drift``); apart
from ``common`` so that ``run`` does not import the splice."""

from __future__ import annotations

from qwengpu_mlx.cli.common import errors_as
from qwengpu_mlx.core.errors import ModelError
from qwengpu_mlx.splice.errors import SPLICE_ERRORS


def splice_errors(what: str):
    """Run a splice step, its typed refusals as this CLI's errors."""
    return errors_as(SPLICE_ERRORS, lambda e: ModelError(f"{what}: {e}"))
