"""The ``gpu_kernel`` tool states the limits of the machine the model's circuit runs: a
model on the large machine is offered 32 threads per block and 1,024 words, one on the
published machine 16 and 126; the warp a kernel sees is CUDA's 32 lanes on both."""

from __future__ import annotations

import pytest

from qwengpu_mlx.chat.demo import demo_tools
from qwengpu_mlx.chat.tools import GPU_EVAL, TOOLS, kernel_tool, tools_for
from qwengpu_mlx.core.machine import LARGE_MACHINE, PUBLISHED_MACHINE


@pytest.mark.parametrize("machine,threads,words", [(PUBLISHED_MACHINE, 16, 126), (LARGE_MACHINE, 32, 1024)],
                         ids=["published", "large"])
def test_the_kernel_tool_states_its_machine_s_limits(machine, threads, words):
    fn = kernel_tool(machine)["function"]
    assert f"at most {threads} threads per block, {words} words of memory" in fn["description"]
    assert "warpSize 32" in fn["description"]
    assert fn["parameters"]["properties"]["block"]["description"] == f"threads per block (1-{threads})"
    assert tools_for(machine) == {"normal": [GPU_EVAL], "advanced": [kernel_tool(machine)]}


def test_the_published_machine_s_tools_are_the_module_s():
    assert tools_for(PUBLISHED_MACHINE) == TOOLS


def test_the_demo_keeps_its_pinned_tools_and_gets_its_machine_s_kernel_tool():
    on_large, on_published = demo_tools(machine=LARGE_MACHINE), demo_tools()
    assert on_large["normal"] == on_published["normal"]  # pinned: what it was trained with
    assert on_large["advanced"] == [kernel_tool(LARGE_MACHINE)] and on_published["advanced"] == TOOLS["advanced"]
