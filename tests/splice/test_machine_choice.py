"""With no machine named, a base gets the default machine when its circuit fits and the
published machine otherwise, with a line saying so; a machine the user names is that
machine or a refusal. The default is passed in, as moving it would make it, so both
sides of the move are tested here without touching ``core.machine``'s globals."""

from __future__ import annotations

import pytest

from qwengpu_mlx.core.machine import LARGE_MACHINE, MACHINES, ONE_SLOT_MACHINE, PUBLISHED_MACHINE, machine_name
from qwengpu_mlx.splice.build import SpliceMisfit
from qwengpu_mlx.splice.machine_choice import fitting_machine, named_machine


def fits_unless(*outgrown):
    """A circuit compiler for the splice whose circuits of ``outgrown`` machines do not fit."""
    def fit(machine):
        if machine in outgrown:
            raise SpliceMisfit([f"the {machine_name(machine)} machine's circuit needs 2412 dims of 2048"])
        return f"plan of {machine_name(machine)}"
    return fit


def test_the_default_that_fits_is_taken_silently():
    said = []
    for default in (PUBLISHED_MACHINE, LARGE_MACHINE):
        got = fitting_machine(None, fits_unless(), default=default, say=said.append)
        assert got == (default, f"plan of {machine_name(default)}")
    assert said == []


def test_a_default_that_outgrows_the_base_falls_back_to_the_published_machine_and_says_so():
    said = []
    got = fitting_machine(None, fits_unless(LARGE_MACHINE), default=LARGE_MACHINE, say=said.append)
    assert got == (PUBLISHED_MACHINE, "plan of published")
    assert len(said) == 1 and "large machine's circuit does not fit" in said[0]
    assert "2412 dims of 2048" in said[0] and "16 threads per block, 126 memory words" in said[0]


def test_a_named_machine_is_never_swapped():
    said = []
    assert fitting_machine(LARGE_MACHINE, fits_unless(), say=said.append) == (LARGE_MACHINE, "plan of large")
    with pytest.raises(SpliceMisfit, match="large machine"):
        fitting_machine(LARGE_MACHINE, fits_unless(LARGE_MACHINE), default=LARGE_MACHINE, say=said.append)
    with pytest.raises(SpliceMisfit, match="one-slot machine"):
        fitting_machine(ONE_SLOT_MACHINE, fits_unless(ONE_SLOT_MACHINE), say=said.append)
    assert said == []


def test_when_even_the_published_machine_does_not_fit_it_is_refused():
    with pytest.raises(SpliceMisfit, match="published machine"):
        fitting_machine(None, fits_unless(LARGE_MACHINE, PUBLISHED_MACHINE), default=LARGE_MACHINE)
    with pytest.raises(SpliceMisfit, match="published machine"):
        fitting_machine(None, fits_unless(PUBLISHED_MACHINE), default=PUBLISHED_MACHINE)


def test_the_default_alias_names_no_machine():
    assert named_machine(None) is None and named_machine("default") is None
    for name in set(MACHINES) - {"default"}:
        assert named_machine(name) == MACHINES[name]
