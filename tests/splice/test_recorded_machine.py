"""A combined checkpoint records the machine it was built for by that machine's own name,
so it keeps opening as that machine when the default machine changes; checkpoints that
recorded the ``default`` alias were built while it meant the published machine, and open
as the published machine whatever the default is now."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, LARGE_MACHINE, MACHINES, PUBLISHED_MACHINE, machine_name
from qwengpu_mlx.runtime.checkpoint import random_config
from qwengpu_mlx.splice.build import SPLICE_RECORD, BuildReport, recorded_name, splice_record
from qwengpu_mlx.splice.combined_runner import CombinedCheckpointError, recorded_machine
from qwengpu_mlx.splice.layout import SpliceLayout
from qwengpu_mlx.splice.logits import Suppression

from tests.support.circuits import build_circuit


@pytest.fixture(scope="module")
def report():
    """A build's report over a small circuit: what ``splice_record`` reads of it."""
    plan, _ = build_circuit()
    lay = SpliceLayout(random_config(96, 4, vocab_size=300), plan.config(), len(plan.vocab))
    sup = Suppression(row=np.zeros(96), alpha=1.0, min_projection=1.0, target=1e-6, positions=8)
    return BuildReport(None, lay, sup, 0, 0, 0.0)


def _checkpoint(tmp_path, record: dict):
    (tmp_path / SPLICE_RECORD).write_text(json.dumps(record))
    return tmp_path


def test_the_record_names_the_machine_never_the_alias(report):
    assert splice_record(report, "default")["machine"] == machine_name(DEFAULT_MACHINE) != "default"
    for name in MACHINES:
        assert recorded_name(name) != "default" and MACHINES[recorded_name(name)] == MACHINES[name]


@pytest.mark.parametrize("machine", [PUBLISHED_MACHINE, LARGE_MACHINE], ids=machine_name)
def test_a_checkpoint_opens_as_the_machine_it_was_built_for(tmp_path, report, machine):
    """Whichever machine is the default at build time (each named here as the CLI's default
    would pass it), the checkpoint opens as that machine."""
    record = splice_record(report, machine_name(machine))
    assert recorded_machine(_checkpoint(tmp_path, record))[0] == machine


def test_an_old_default_record_opens_as_the_published_machine(tmp_path, report):
    record = {**splice_record(report, "published"), "machine": "default"}  # as builds before the fix wrote it
    assert recorded_machine(_checkpoint(tmp_path, record))[0] == PUBLISHED_MACHINE


def test_an_unknown_machine_is_refused_by_name(tmp_path, report):
    record = {**splice_record(report, "published"), "machine": "huge"}
    with pytest.raises(CombinedCheckpointError, match="records machine 'huge'"):
        recorded_machine(_checkpoint(tmp_path, record))
