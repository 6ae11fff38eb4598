"""``--check``: the model's launch against the complete launch the reference implies.

Both ways: the expected stream (``expect.py``) holds every record the reference says
must come back; the launch's tokens are split at the same boundaries (``CTA``, ``EXEC``,
``STOP``, ``FAULT``) and compared record by record. A missing, extra, reordered or wrong
record is a :class:`Mismatch` that names the step, thread block, block, warp, lane and
record. Then the memory the host read from the recurrent state is compared with the
reference's final memory, word by word.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu_mlx.core.errors import BarrierDeadlock, MemoryFault, StepBudgetExceeded
from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import MachineConfig, to_signed
from qwengpu_mlx.core.reference import run_program
from qwengpu_mlx.core.vocab import CHUNK_KINDS, RECORD_KINDS, SHORT_KINDS, Vocab, chunk_value, record_end, vocab_for

from qwengpu_mlx.runtime.expect import Segment, expected_segments

BOUNDARY_KINDS = ("CTA", "EXEC", "STOP", "FAULT")
MAX_REPORTED = 20


@dataclass
class Mismatch:
    """One difference between the launch and the reference's."""

    where: str  # the segment: "step 3 (thread block 0, B2, warp 1, mask 1111)"
    expected: str  # the record the reference implies, or "nothing"
    found: str  # what the launch holds there, or "nothing"
    step: int | None = None
    lane: int | None = None
    segment: int | None = None  # index of the expected segment (thread block start, step, end)

    def __str__(self) -> str:
        return f"{self.where}: expected {self.expected}; the launch has {self.found}"


@dataclass
class CheckReport:
    mismatches: list[Mismatch] = field(default_factory=list)
    memory_problems: list[str] = field(default_factory=list)
    records_expected: int = 0
    tokens_expected: int = 0
    more: int = 0  # mismatches found but not listed (after MAX_REPORTED)

    @property
    def exact(self) -> bool:
        return not self.mismatches and not self.memory_problems

    @property
    def problems(self) -> list[str]:
        out = [str(m) for m in self.mismatches] + list(self.memory_problems)
        if self.more:
            out.append(f"... and {self.more} more differences")
        return out


def split_segments(tokens: list[int], vocab: Vocab) -> list[list[int]]:
    """The launch's tokens cut before every CTA, EXEC, STOP and FAULT token."""
    segs: list[list[int]] = []
    for t in tokens:
        if not segs or vocab[t].kind in BOUNDARY_KINDS:
            segs.append([])
        segs[-1].append(t)
    return segs


def describe_tokens(tokens: list[int], vocab: Vocab) -> str:
    """A record (header + chunks) or a token, as the launch holds it."""
    if not tokens:
        return "nothing"
    head = vocab[tokens[0]]
    kinds = [vocab[t].kind for t in tokens[1:]]
    if head.kind in RECORD_KINDS and (kinds == list(CHUNK_KINDS) or (head.kind in SHORT_KINDS and kinds == ["C0"])):
        return f"{head} = {to_signed(chunk_value([vocab[t] for t in tokens[1:]]))}"
    return " ".join(str(vocab[t]) for t in tokens)


def _record_at(tokens: list[int], i: int, vocab: Vocab) -> list[int]:
    """The launch's record starting at ``tokens[i]``, as long as its own header announces."""
    if i >= len(tokens):
        return []
    kinds = [vocab[t].kind for t in tokens[i:i + 1 + len(CHUNK_KINDS)]]
    return tokens[i:i + record_end(kinds, 0)]


def compare_segment(exp: Segment, got: list[int], vocab: Vocab) -> Mismatch | None:
    """The first record of ``exp`` that ``got`` lacks or holds differently; or an extra one."""
    i = 0
    for rec in exp.records:
        n = len(rec.tokens)
        have = got[i:i + n]
        if have != rec.tokens:
            return Mismatch(exp.where, rec.what, describe_tokens(_record_at(got, i, vocab), vocab), exp.step, rec.lane)
        i += n
    if i < len(got) and not exp.open_ended:
        extra = _record_at(got, i, vocab)
        return Mismatch(exp.where, "nothing more in this step", f"an extra {describe_tokens(extra, vocab)}",
                        exp.step)
    return None


def compare_launch(expected: list[Segment], tokens: list[int], vocab: Vocab) -> tuple[list[Mismatch], int]:
    """Mismatches segment by segment (at most MAX_REPORTED listed) and how many more."""
    got = split_segments(tokens, vocab)
    found: list[Mismatch] = []
    for k in range(max(len(expected), len(got))):
        if k >= len(got):
            e = expected[k]
            found.append(Mismatch(e.where, e.records[0].what, "nothing: the launch ends here", e.step, segment=k))
            break
        if k >= len(expected):
            found.append(Mismatch("after the end of the launch", "nothing", describe_tokens(got[k][:4], vocab),
                                  segment=len(expected) - 1))
            break
        m = compare_segment(expected[k], got[k], vocab)
        if m is not None:
            m.segment = k
            found.append(m)
    return found[:MAX_REPORTED], max(0, len(found) - MAX_REPORTED)


@dataclass
class ReferenceRun:
    trace: list
    memory: list[int]
    fault: int | None = None  # the FAULT code the launch must end with
    inside_step: bool = False  # the fault stopped a step the trace lacks
    ran_out: bool = False  # the reference needs more steps than the budget given


def reference_run(program: Program, machine: MachineConfig, budget: int) -> ReferenceRun:
    """The reference's run of ``program``, at most ``budget`` steps."""
    try:
        res = run_program(program, machine, trace=True, step_budget=budget)
        return ReferenceRun(res.trace, res.memory)
    except (MemoryFault, BarrierDeadlock, StepBudgetExceeded) as e:
        res = e.result  # type: ignore[attr-defined]
        if isinstance(e, StepBudgetExceeded):
            return ReferenceRun(res.trace, res.memory, ran_out=True)
        code = 1 if isinstance(e, MemoryFault) else 2
        return ReferenceRun(res.trace, res.memory, code, isinstance(e, MemoryFault))


def check_launch(program: Program, tokens: list[int], machine: MachineConfig, *,
                 memory: list[int] | None = None) -> CheckReport:
    """Check a launch's generated tokens (and, if given, the memory read from the state).

    A launch the reference stops (a memory fault, a barrier deadlock) must end with the
    matching FAULT token; its memory is then not compared (no result is read from it)."""
    vocab = vocab_for(machine)
    execs = sum(1 for t in tokens if vocab[t].kind == "EXEC")
    ref = reference_run(program, machine, budget=execs + 1)  # one more step than the launch ran
    expected = expected_segments(program, machine, ref.trace, fault=ref.fault, inside_step=ref.inside_step)
    if ref.ran_out:  # the reference goes on where the launch stopped: compare up to there
        expected = expected[:-1]
    mismatches, more = compare_launch(expected, list(tokens), vocab)
    if ref.ran_out and not mismatches:
        mismatches = [Mismatch(f"after step {execs - 1}", f"step {execs} (the reference runs on)",
                               f"{describe_tokens(tokens[-1:], vocab)}: the launch ends", execs)]
    report = CheckReport(mismatches, [], sum(len(s.records) for s in expected),
                         sum(len(s.tokens) for s in expected), more)
    if memory is not None and ref.fault is None:  # a stopped launch's memory is no result
        report.memory_problems = memory_differences(program, memory, ref.memory)
    return report


def memory_differences(program: Program, memory: list[int], reference: list[int]) -> list[str]:
    names = program.word_names()
    out = []
    for w, (a, b) in enumerate(zip(memory, reference)):
        if a != b:
            out.append(f"memory word {w} ({names.get(w, 'unnamed')}) read from the state: "
                       f"{to_signed(a)} != reference {to_signed(b)}")
    return out


__all__ = ["CheckReport", "Mismatch", "check_launch", "compare_launch", "split_segments"]
