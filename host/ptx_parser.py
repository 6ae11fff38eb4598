"""PTX text -> :mod:`qwengpu_mlx.host.ptx_ast`.

The parser reads the PTX that clang's NVPTX back end and nvcc emit for integer
kernels and keeps it close to the text (opcode, dot-modifiers, operands), so the
lowering can judge every construct and name it as the user's PTX spells it. It
accepts more than the machine can run (64-bit ops, ``call``, ``.const`` variables):
rejecting those is the lowering's job, where the message can say why. The parser
itself only rejects what it cannot represent faithfully: floating-point immediates
other than ``0f`` binary32 ones (kept as their bit pattern),
``.local`` (stack) variables and non-zero variable initializers
(:class:`UnsupportedError`), and text that is not PTX (:class:`FrontendError`).

Representation notes for the lowering:

- ``{ }`` scopes inside a body are flattened; ``.reg`` declarations anywhere in a
  kernel land in ``reg_decls`` (``%r<12>`` -> ``("b32", 12)``; a plain name such as
  ``%tmp`` counts as one register, ``("b32", 1)``).
- ``_`` (the PTX sink) is ``RegRef("_")``, e.g. ``PairRef(RegRef("_"), RegRef("%p1"))``.
- Parenthesised operand groups (``call (retval0), f, (param0)``) are flattened.
- ``.func`` bodies are skipped; ``.param`` declarations inside a body (call
  sequences) are ignored.
- Vector operands of ``ld``/``st`` ``.v2``/``.v4``: ``{%f1, %f2}`` -> ``VecRef((RegRef("%f1"), RegRef("%f2")))``.
- Memory operands: ``[%rd1+-4]`` -> ``MemRef(RegRef("%rd1"), -4)``,
  ``[name+4]`` -> ``MemRef(SymRef("name"), 4)``, ``[16]`` -> ``MemRef(ImmRef(16))``.
- Line tables (``-gline-tables-only``): each instruction's ``src`` is the ``.loc``
  in force before it (its ``inlined_at`` call site where it has one; none after a
  ``.loc`` of line 0), its file named by the module's ``.file`` entries, which
  clang writes after the kernels. ``.section .debug_*`` blocks are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qwengpu_mlx.core.errors import FrontendError, UnsupportedError
from qwengpu_mlx.host.srcloc import SourceLoc, source_error
from qwengpu_mlx.host.ptx_ast import (
    ImmRef,
    MemRef,
    PairRef,
    PtxInstr,
    PtxKernel,
    PtxLabel,
    PtxModule,
    PtxOperand,
    PtxParam,
    PtxVar,
    RegRef,
    SpecialRef,
    SymRef,
    VecRef,
)

__all__ = ["parse_ptx"]

# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class _Tok:
    kind: str  # "word", "num", "str", "punct"
    value: str
    line: int
    start: int  # character offsets in the text, for PtxInstr.text
    end: int


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+|\n)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<word>[A-Za-z_$%.][A-Za-z0-9_$.]*)
  | (?P<num>[0-9][0-9A-Za-z_.]*)
  | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    line = 1
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        value = m.group()
        if kind in ("ws", "lcomment", "bcomment"):
            line += value.count("\n")
            continue
        toks.append(_Tok(kind, value, line, m.start(), m.end()))
        line += value.count("\n")  # only strings could, and they cannot
    return toks


# --------------------------------------------------------------------------- literals

_TYPES = {
    "b8", "b16", "b32", "b64", "b128",
    "u8", "u16", "u32", "u64",
    "s8", "s16", "s32", "s64",
    "f16", "f16x2", "bf16", "bf16x2", "tf32", "f32", "f64",
    "pred",
}  # fmt: skip
_TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}

# Special registers without a dot in their name; any %name.with.dot is special too.
_SPECIALS = {
    "laneid", "warpid", "nwarpid", "smid", "nsmid", "gridid", "clock", "clock64",
    "clock_hi", "globaltimer", "globaltimer_lo", "globaltimer_hi",
    "lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt",
    "dynamic_smem_size", "total_smem_size", "aggr_smem_size",
    "is_explicit_cluster", "current_graph_exec",
}  # fmt: skip
_SPECIAL_RE = re.compile(r"(envreg\d+|pm\d+(_64)?|reserved_smem_offset_.*)")

_FLOAT_RE = re.compile(r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|[0-9]+\.[0-9]*([eE][0-9]*)?|[0-9]+[eE][0-9]*")


def _int_literal(value: str) -> int | None:
    """A PTX integer literal (hex, octal, binary, decimal; optional U suffix), else None."""
    v = value[:-1] if value[-1:] in "uU" else value
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", v):
        return int(v, 16)
    if re.fullmatch(r"0[bB][01]+", v):
        return int(v[2:], 2)
    if re.fullmatch(r"0[0-7]+", v):
        return int(v, 8)
    if re.fullmatch(r"[0-9]+", v):
        return int(v, 10)
    return None


def _is_float_literal(value: str) -> bool:
    return _FLOAT_RE.fullmatch(value) is not None


def _type_bytes(t: str) -> int:
    m = re.fullmatch(r"[bsuf](\d+)", t)
    return _TYPE_BYTES.get(m.group(1), 4) if m else 4


# --------------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.files = self.file_names()
        self.loc: SourceLoc | None = None  # the .loc in force inside a kernel body

    # -- token helpers ------------------------------------------------------------

    def peek(self, k: int = 0) -> _Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at(self, value: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.value == value

    def next(self, what: str = "more PTX") -> _Tok:
        t = self.peek()
        if t is None:
            last = self.toks[-1].line if self.toks else 1
            raise FrontendError(f"PTX line {last}: unexpected end of text, expected {what}")
        self.i += 1
        return t

    def expect(self, value: str) -> _Tok:
        t = self.next(repr(value))
        if t.value != value:
            raise self.error(t, f"expected {value!r}, found {t.value!r}")
        return t

    def error(self, t: _Tok, msg: str) -> FrontendError:
        return self.fail(FrontendError, t.line, f"{msg}: {self.line_text(t.line)!r}")

    def fail(self, cls: type, line: int, msg: str) -> Exception:
        """An error at PTX ``line``, led by the ``.cu`` line in force there (if any)."""
        return source_error(cls, line, self.loc, msg)

    # -- line tables --------------------------------------------------------------

    def file_names(self) -> dict[int, str]:
        """``.file 1 "/path/vec_add.cu"`` entries, read first: clang puts them after the kernels."""
        files: dict[int, str] = {}
        for k, t in enumerate(self.toks[:-2]):
            n, s = self.toks[k + 1], self.toks[k + 2]
            if t.value == ".file" and n.kind == "num" and s.kind == "str" and n.value.isdigit():
                files[int(n.value)] = s.value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        return files

    def read_loc(self, t: _Tok) -> None:
        """``.loc F L C`` (``, inlined_at F L C`` naming the call site); line 0 means none."""
        nums = []
        while (n := self.peek()) is not None and n.line == t.line:
            self.i += 1
            if n.value == "inlined_at":
                nums = []  # the call site is the user's line, not the inlined function's
            elif n.kind == "num" and n.value.isdigit():
                nums.append(int(n.value))
        if len(nums) < 2 or nums[1] == 0:
            self.loc = None
            return
        f, line, col = nums[0], nums[1], nums[2] if len(nums) > 2 else 0
        self.loc = SourceLoc(self.files.get(f, f"file{f}"), line, col)

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    def skip_line(self, line: int) -> None:
        while self.peek() is not None and self.peek().line == line:
            self.i += 1

    def skip_statement(self) -> None:
        """Skip to the ';' that ends a statement, or over a balanced '{...}' block."""
        depth = 0
        while True:
            t = self.next("';'")
            if t.value in "({[" and t.kind == "punct":
                depth += 1
            elif t.value in ")}]" and t.kind == "punct":
                depth -= 1
                if depth == 0 and t.value == "}":
                    return
            elif t.value == ";" and depth == 0:
                return

    def skip_braces(self) -> None:
        self.expect("{")
        depth = 1
        while depth:
            t = self.next("'}'")
            if t.value == "{":
                depth += 1
            elif t.value == "}":
                depth -= 1

    # -- module -------------------------------------------------------------------

    def parse_module(self) -> PtxModule:
        version, target, address_size = "", "", 64
        kernels: list[PtxKernel] = []
        variables: list[PtxVar] = []
        while (t := self.peek()) is not None:
            v = t.value
            if v == ".version":
                self.i += 1
                version = self.next("a version").value
            elif v == ".target":
                self.i += 1
                parts = [self.next("a target").value]
                while self.at(","):
                    self.i += 1
                    parts.append(self.next("a target").value)
                target = ", ".join(parts)
            elif v == ".address_size":
                self.i += 1
                n = self.next("an address size")
                size = _int_literal(n.value)
                if size is None:
                    raise self.error(n, "bad .address_size")
                address_size = size
            elif v in (".file", ".loc"):
                self.skip_line(t.line)
            elif v == ".section":
                self.i += 2  # .section .debug_xxx
                if self.at("{"):
                    self.skip_braces()
            elif v in (".visible", ".extern", ".weak", ".common"):
                self.i += 1  # linkage: applies to what follows
            elif v == ".entry":
                kernels.append(self.parse_entry())
            elif v == ".func":
                self.skip_func()
            elif v in (".global", ".shared", ".const"):
                variables.append(self.parse_var())
            elif v == ".local":
                raise UnsupportedError(
                    f"PTX line {t.line}: .local variable (thread-local stack memory) is not supported"
                )
            elif v.startswith("."):
                self.skip_statement()  # .pragma, .alias, ... : nothing we need
            else:
                raise self.error(t, f"unexpected {v!r} at module scope")
        return PtxModule(
            version=version,
            target=target,
            address_size=address_size,
            kernels=kernels,
            variables=variables,
            text=self.text,
        )

    def skip_func(self) -> None:
        """Device functions are not kernels: skip the declaration or the body."""
        self.expect(".func")
        depth = 0
        while True:
            t = self.next("a .func body")
            if t.value == "(":
                depth += 1
            elif t.value == ")":
                depth -= 1
            elif depth == 0 and t.value == ";":
                return
            elif depth == 0 and t.value == "{":
                self.i -= 1
                self.skip_braces()
                return

    # -- variables ----------------------------------------------------------------

    def parse_var(self) -> PtxVar:
        """``.shared .align 4 .b8 name[64];`` (also .global/.const, with initializer)."""
        first = self.next()
        space = first.value[1:]
        align, elem_type, vec = 4, "", 1
        while (t := self.peek()) is not None and t.value.startswith("."):
            self.i += 1
            if t.value == ".align":
                a = self.next("an alignment")
                align = _int_literal(a.value) or 4
            elif t.value[1:] in _TYPES:
                elem_type = t.value[1:]
            elif re.fullmatch(r"\.v\d+", t.value):
                vec = int(t.value[2:])
            # other qualifiers (.attribute(...), .ptr) carry nothing we need
        name_tok = self.next("a variable name")
        if name_tok.kind != "word" or not elem_type:
            raise self.error(name_tok, f"cannot read the .{space} declaration")
        count = 1
        while self.at("["):
            self.i += 1
            if self.at("]"):
                count = 0  # unsized (extern dynamic shared memory)
            else:
                n = self.next("an array size")
                size = _int_literal(n.value)
                if size is None:
                    raise self.error(n, "bad array size")
                count *= size
            self.expect("]")
        if self.at("="):
            self.i += 1
            values = self.read_initializer()
            if any(v != 0 for v in values):
                raise UnsupportedError(
                    f"PTX line {first.line}: .{space} variable {name_tok.value!r} has an initializer "
                    f"(initialized device variables are not supported; initialize from the host "
                    f"or in the kernel)"
                )
        self.expect(";")
        return PtxVar(
            name=name_tok.value,
            space=space,
            elem_type=elem_type,
            size_bytes=count * vec * _type_bytes(elem_type),
            align=align,
            line=first.line,
        )

    def read_initializer(self) -> list[int]:
        """The integers of ``= 5`` / ``= {1, 0, ...}``; symbols (generic(x)) count as non-zero."""
        values: list[int] = []
        depth = 0
        while True:
            t = self.peek()
            if t is None or (depth == 0 and t.value == ";"):
                return values
            self.i += 1
            if t.value == "{":
                depth += 1
            elif t.value == "}":
                depth -= 1
            elif t.kind == "num":
                n = _int_literal(t.value)
                values.append(1 if n is None else n)  # a float: treat as data
            elif t.kind == "word":
                values.append(1)

    # -- kernels ------------------------------------------------------------------

    def parse_entry(self) -> PtxKernel:
        entry = self.expect(".entry")
        name = self.next("a kernel name")
        params: list[PtxParam] = []
        if self.at("("):
            self.i += 1
            while not self.at(")"):
                params.append(self.parse_param())
                if self.at(","):
                    self.i += 1
            self.expect(")")
        # performance directives (.maxntid 16, 1, 1 / .reqntid / .minnctapersm ...)
        while (t := self.peek()) is not None and t.value not in ("{", ";"):
            self.i += 1
        if self.at(";"):  # a prototype only
            self.i += 1
            return PtxKernel(name=name.value, params=params, body=[], line=entry.line)
        kernel = PtxKernel(name=name.value, params=params, body=[], line=entry.line)
        self.loc = None
        self.parse_body(kernel)
        self.loc = None
        return kernel

    def parse_param(self) -> PtxParam:
        start = self.expect(".param")
        ptype = ""
        while (t := self.peek()) is not None and t.value.startswith("."):
            self.i += 1
            if t.value == ".align":
                self.next("an alignment")
            elif t.value[1:] in _TYPES and not ptype:
                ptype = t.value[1:]
            # .ptr, .global, .shared, .const: address-space hints for pointers
        name = self.next("a parameter name")
        if name.kind != "word" or not ptype:
            raise self.error(start, "cannot read the .param declaration")
        while self.at("["):  # by-value aggregate: .param .align 4 .b8 p[12]
            self.i += 1
            n = self.next("an array size")
            self.expect("]")
            ptype += f"[{n.value}]"
        return PtxParam(name=name.value, type=ptype)

    def parse_body(self, kernel: PtxKernel) -> None:
        self.expect("{")
        depth = 1
        while True:
            t = self.next("'}' closing the kernel body")
            v = t.value
            if v == "{":
                depth += 1
            elif v == "}":
                depth -= 1
                if depth == 0:
                    return
            elif v == ".reg":
                self.parse_reg_decl(kernel)
            elif v in (".shared", ".global", ".const"):
                self.i -= 1
                var = self.parse_var()
                if var.space != "shared":
                    raise self.error(t, f"kernel-scope .{var.space} variable")
                kernel.shared.append(var)
            elif v == ".local":
                raise self.fail(UnsupportedError, t.line,
                                f".local variable (thread-local stack memory, e.g. a local "
                                f"array indexed at run time) is not supported in kernel {kernel.name}")
            elif v == ".loc":
                self.read_loc(t)
            elif v == ".file":
                self.skip_line(t.line)
            elif v.startswith("."):
                self.i -= 1
                self.skip_statement()  # .param (call sequences), .pragma, ...
            elif t.kind == "word" and self.at(":"):
                self.i += 1
                kernel.body.append(PtxLabel(name=v, line=t.line))
            else:
                self.i -= 1
                kernel.body.append(self.parse_instr())

    def parse_reg_decl(self, kernel: PtxKernel) -> None:
        """``.reg .b32 %r<12>;`` / ``.reg .pred p, q;``"""
        rtype = ""
        while (t := self.peek()) is not None and t.value.startswith("."):
            self.i += 1
            if t.value[1:] in _TYPES:
                rtype = t.value[1:]
        while True:
            name = self.next("a register name")
            count = 1
            if self.at("<"):
                self.i += 1
                n = self.next("a register count")
                c = _int_literal(n.value)
                if c is None:
                    raise self.error(n, "bad register count")
                count = c
                self.expect(">")
            kernel.reg_decls[name.value] = (rtype, count)
            if self.at(","):
                self.i += 1
                continue
            self.expect(";")
            return

    # -- instructions -------------------------------------------------------------

    def parse_instr(self) -> PtxInstr:
        first = self.peek()
        guard: tuple[str, bool] | None = None
        if self.at("@"):
            self.i += 1
            negated = False
            if self.at("!"):
                self.i += 1
                negated = True
            p = self.next("a guard predicate")
            if p.kind != "word":
                raise self.error(p, "bad guard")
            guard = (p.value, negated)
        op_tok = self.next("an opcode")
        if op_tok.kind != "word" or op_tok.value.startswith(("%", ".")):
            raise self.error(op_tok, f"expected an instruction, found {op_tok.value!r}")
        opcode, *mods = op_tok.value.split(".")
        operands: list[PtxOperand] = []
        while not self.at(";"):
            if self.at("("):  # call (retval0), f, (param0, param1)
                self.i += 1
                continue
            if self.at(")"):
                self.i += 1
                if self.at(","):
                    self.i += 1
                continue
            operands.append(self.parse_operand(first))
            if self.at(","):
                self.i += 1
            elif not self.at(";") and not self.at(")"):
                t = self.next()
                raise self.error(t, f"unexpected {t.value!r} in operands")
        end = self.expect(";")
        text = " ".join(self.text[first.start : end.end].split())
        return PtxInstr(
            opcode=opcode,
            mods=tuple(mods),
            operands=operands,
            guard=guard,
            line=first.line,
            text=text,
            src=self.loc,
        )

    def parse_operand(self, first: _Tok) -> PtxOperand:
        t = self.peek()
        if t is None:
            raise FrontendError("PTX: unexpected end of text in operands")
        if t.value == "[":
            return self.parse_mem(first)
        if t.value == "{":
            return self.parse_vector(first)
        op = self.parse_scalar(first)
        if self.at("|"):
            self.i += 1
            second = self.parse_scalar(first)
            if not isinstance(op, RegRef) or not isinstance(second, RegRef):
                raise self.error(t, "a '|' pair must join two registers")
            return PairRef(op, second)
        return op

    def parse_vector(self, first: _Tok) -> VecRef:
        """``{%f1, %f2, ...}``: a vector load's or store's registers (or a store's immediates)."""
        t = self.next("'{'")
        elements = [self.parse_scalar(first)]
        while self.at(","):
            self.i += 1
            elements.append(self.parse_scalar(first))
        self.expect("}")
        if not all(isinstance(e, (RegRef, ImmRef)) for e in elements):
            raise self.error(t, "a vector operand holds registers or immediates")
        return VecRef(tuple(elements))

    def parse_scalar(self, first: _Tok) -> RegRef | SpecialRef | ImmRef | SymRef:
        t = self.next("an operand")
        if t.value in ("-", "+") and t.kind == "punct":
            n = self.next("a number")
            value = self.number(n, first)
            return ImmRef(-value if t.value == "-" else value)
        if t.kind == "num":
            return ImmRef(self.number(t, first))
        if t.kind == "word":
            if t.value == "_":
                return RegRef("_")
            if t.value.startswith("%"):
                name = t.value[1:]
                if "." in name or name in _SPECIALS or _SPECIAL_RE.fullmatch(name):
                    return SpecialRef(name)
                return RegRef(t.value)
            return SymRef(t.value)
        raise self.error(t, f"unexpected {t.value!r} as an operand")

    def number(self, t: _Tok, first: _Tok) -> int:
        """An integer literal, or a ``0f`` float literal as its binary32 bit pattern (the
        machine's registers hold a float as its bits; ``0fBF800000`` is -1.0f)."""
        if t.kind == "num" and re.fullmatch(r"0[fF][0-9a-fA-F]{8}", t.value):
            return int(t.value[2:], 16)
        if t.kind == "num" and _is_float_literal(t.value):
            raise self.fail(UnsupportedError, t.line,
                            f"floating-point immediate {t.value}: only 32-bit float constants are supported "
                            f"(the machine's floats are binary32); use float, not double, and write float "
                            f"constants with an f suffix (1.5f, not 1.5): {self.line_text(first.line)!r}")
        value = _int_literal(t.value) if t.kind == "num" else None
        if value is None:
            raise self.error(t, f"bad number {t.value!r}")
        return value

    def parse_mem(self, first: _Tok) -> MemRef:
        self.expect("[")
        t = self.peek()
        base: RegRef | SymRef | ImmRef
        if t is not None and t.kind == "num":
            base = ImmRef(self.number(self.next(), first))
        else:
            b = self.parse_scalar(first)
            if isinstance(b, SpecialRef):
                raise self.error(t, "a special register cannot address memory")
            base = b
        offset = 0
        while self.at("+") or self.at("-"):
            sign = -1 if self.next().value == "-" else 1
            if self.at("-"):  # [%rd1+-4]
                self.i += 1
                sign = -sign
            offset += sign * self.number(self.next("an offset"), first)
        self.expect("]")
        return MemRef(base, offset)


def parse_ptx(text: str) -> PtxModule:
    """Parse PTX module text (clang's or nvcc's) into a :class:`PtxModule`.

    Raises :class:`UnsupportedError` for constructs the machine cannot represent
    (double and decimal floating-point immediates, .local memory, initialized
    variables) and :class:`FrontendError` for text that is not PTX; both name the
    PTX line.
    """
    return _Parser(text).parse_module()
