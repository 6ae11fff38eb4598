"""The main screen's side of a whole program's /run (``/run prog.cu -- ARGS``).

The program runs in the launch process (``tui.program_job``), driven from the MLX thread
as a /run's launch is (``jobs.JobsMixin``, which hands this mixin the events). On the
screen: the program's stdout and stderr lines in the transcript as they come, each launch's
tokens streaming into the launch pane (a launch's header note, then its tokens, then its
summary: the panes keep every launch of the program), its summary in the transcript too,
the machine pane following the launch under way, and the exit status at the end.
"""

from __future__ import annotations

from qwengpu_mlx.tui.commands import ProgramRequest
from qwengpu_mlx.tui.model_label import circuit_label, run_label
from qwengpu_mlx.tui.program_job import ProgramOutcome, record_line


class ProgramsMixin:
    """Programs on the main screen (its panes, ``activity``, and ``JobsMixin``'s job machinery)."""

    def start_program(self, req: ProgramRequest) -> None:
        self.program_records = []  # this program's launches so far
        self.launch_pane.clear()
        self.launch_pane.show_title(f"program: {req.describe()}")
        self.machine_pane.show(None)
        self.activity.reset()
        self.status_bar.set(model=run_label(req.machine, self.chat), kernel=req.source.stem, tokens=0,
                            tokens_per_s=None, steps=0, phase=self.activity.text(), check="on" if self.check else "off",
                            mismatches=0)
        self.transcript.say(f"program {req.describe()}: each launch on the {circuit_label(req.machine)}", "dim")

    def program_launch_begins(self, kernel: str) -> None:
        """A launch of the program starts: a header in the launch pane above its tokens."""
        self.launch_pane.note(f"launch {self.activity.launch_index + 1}: {kernel}")

    def program_output(self, stream: str, text: str) -> None:
        self.transcript.say(text, stream)

    def program_launch_ended(self, record) -> None:
        self.program_records.append(record)
        line = record_line(record, self.show_timing)
        self.launch_pane.note(line)
        self.transcript.say(line, "error" if record.failure or record.exact is False else "result")
        changes = {"steps": record.steps, "tokens": record.tokens}
        if record.tokens:
            changes["tokens_per_s"] = record.tokens_per_s
        if record.exact is not None:
            bad = sum(1 for r in self.program_records if r.exact is False)
            changes.update(check="mismatch" if bad else "exact", mismatches=bad)
        self.status_bar.set(**changes)

    def program_done(self, out: ProgramOutcome) -> None:
        t = self.transcript
        if out.cancelled:
            ntok = self.decoder.count if self.decoder else 0
            self.launch_pane.note(f"program cancelled ({ntok} tokens into its launch)" if self.decoder else
                                  "program cancelled")
            t.say("program cancelled", "info")
            self.status_bar.set(phase="cancelled")
            return
        if out.error:
            self.launch_pane.note(out.error.splitlines()[0])
            t.say(out.error, "error")
            self.status_bar.set(phase="error")
            return
        launches = f"{len(out.records)} launch" + ("" if len(out.records) == 1 else "es")
        t.say(f"program exited with status {out.exit_status} ({launches})", "result" if out.exit_status == 0 else
              "error")
        if out.mismatches:
            t.say(f"check: {out.mismatches} launch(es) differ from the reference interpreter", "error")
        self.status_bar.set(phase="done" if out.exit_status == 0 else f"exit status {out.exit_status}")
