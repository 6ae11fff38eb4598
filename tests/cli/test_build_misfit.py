"""``build`` of a machine whose circuit outgrows Qwen3.5-2B's shape is refused with what
does not fit and, for any machine but the published one, the machine that fits (as the
splice's refusal says it): once the default machine is the large one, ``build`` alone
must point at the machine that builds."""

from __future__ import annotations

import pytest

from qwengpu_mlx.cli.main import main
from qwengpu_mlx.compiler.sizing import DoesNotFit, Misfit


class _OutgrownStore:
    def compiled(self, machine, shape=None):
        raise DoesNotFit([Misfit("hidden", 2412, 2048, "residual 2412 dims > 2048")])


@pytest.mark.parametrize("name,hint", [("large", True), ("published", False)])
def test_an_outgrown_circuit_names_the_machine_that_fits(tmp_path, capsys, monkeypatch, name, hint):
    monkeypatch.setattr("qwengpu_mlx.cli.build.CircuitStore", _OutgrownStore)
    assert main(["build", "--out", str(tmp_path / "ck"), "--machine", name]) == 2
    err = capsys.readouterr().err
    assert f"the circuit of the {name} machine does not fit the Qwen3.5-2B shape" in err
    assert "2412 dims > 2048" in err and ("--machine published" in err) == hint
    assert "Traceback" not in err and not (tmp_path / "ck").exists()

