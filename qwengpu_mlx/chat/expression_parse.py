"""The normal mode's expression language: tokens and syntax tree (grammar in ``chat.tools``).

Parsing only: no value is computed here (a literal's sign is part of the literal, nothing
more), so ``2 + 3`` stays an addition for the GPU. Every refusal is an
:class:`ExpressionError` naming what was wrong and at which column (1-based), because the
text comes from a chat model and the chat must answer it, never crash on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from qwengpu_mlx.core.float32 import INF_BITS, M32, SIGN, float32_bits, float32_text

MAX_TEXT = 4000  # characters: 126 words of data written out fit well below this
MAX_DEPTH = 32  # nesting of brackets, parentheses and calls (the parser recurses)
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1

FUNCTIONS = ("sum", "min", "max", "argmax", "mean", "fmean", "imean", "sqrt", "prefix_sum", "sort", "reverse",
             "histogram", "abs", "gcd", "fib", "pow")
SYMBOLS = "+-*/%@()[],"
PRODUCTS = ("*", "/", "%", "@")  # one precedence level, left to right, as in C


class ExpressionError(ValueError):
    """An expression the GPU cannot evaluate; the message says what and where."""


@dataclass(frozen=True)
class F32:
    """A float32 value as the GPU holds it: its binary32 bits. The host never does
    arithmetic on it; it only binds the bits and prints them (shortest decimal)."""

    bits: int

    def __str__(self) -> str:
        return float32_text(self.bits)


@dataclass(frozen=True)
class Num:
    value: int | F32
    column: int


@dataclass(frozen=True)
class Array:
    items: tuple
    column: int


@dataclass(frozen=True)
class Neg:
    operand: object
    column: int


@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - * / % @
    left: object
    right: object
    column: int


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple
    column: int


@dataclass(frozen=True)
class Token:
    kind: str  # "int", "float", "name", a symbol, or "end"
    text: str
    column: int


_TOKEN = re.compile(r"\s*(?:(?P<num>\d(?:[eE][+-]\d|[\w.])*)|(?P<name>[A-Za-z_]\w*)"
                    rf"|(?P<sym>[{re.escape(SYMBOLS)}])|(?P<other>\S))")


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``; numbers are checked to be plain decimal integers here."""
    if not isinstance(text, str):
        raise ExpressionError("the expression must be a string")
    if len(text) > MAX_TEXT:
        raise ExpressionError(f"the expression has {len(text)} characters, at most {MAX_TEXT} are allowed")
    tokens, pos = [], 0
    while True:
        m = _TOKEN.match(text, pos)
        if m is None:  # only whitespace is left
            return tokens + [Token("end", "", len(text) + 1)]
        pos = m.end()
        kind = m.lastgroup
        word = m.group(kind)
        column = m.start(kind) + 1
        if kind == "num":
            tokens.append(Token(_number_kind(word, column), word, column))
        elif kind == "name":
            tokens.append(Token("name", word, column))
        elif kind == "sym":
            tokens.append(Token(word, word, column))
        else:
            raise ExpressionError(f"unexpected character {word!r} at column {column}")


def _number_kind(word: str, column: int) -> str:
    """"int" for decimal digits, "float" for a decimal with a point or an exponent
    (``2.5``, ``1e-3``); a 12abc is refused."""
    if word.isdigit() and word.isascii():
        return "int"
    if re.fullmatch(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?", word):
        return "float"
    raise ExpressionError(f"{word!r} at column {column} is not an integer or a float")


def _float_value(word: str, negative: bool) -> F32:
    """The literal's nearest float32 (one exact rounding from the decimal, ``core.float32``):
    parsing, as ``--arg x=2.5`` is. A decimal exponent far outside float32's range is
    infinity or zero without building its exact rational (``1e999999999`` would not end)."""
    sign = SIGN if negative else 0
    magnitude = Decimal(word).adjusted()  # the decimal exponent of the leading digit
    if magnitude > 60 and Decimal(word) != 0:
        return F32(sign | INF_BITS)
    if magnitude < -60:
        return F32(sign)
    return F32(float32_bits(("-" if negative else "") + word) & M32)


def _int_value(word: str, negative: bool) -> int:
    """The literal's value, refused outside 32-bit signed integers (before a huge int())."""
    text = word.lstrip("0") or "0"
    shown = ("-" if negative else "") + word
    if len(text) > 10:
        raise ExpressionError(f"{shown} is outside 32-bit signed integers")
    value = -int(text) if negative else int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise ExpressionError(f"{shown} is outside 32-bit signed integers")
    return value


class _Parser:
    """Recursive descent over the grammar of ``chat.tools``, with a nesting limit."""

    def __init__(self, text: str):
        self.tokens = tokenize(text)
        self.pos = 0
        self.depth = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def take(self, kind: str) -> Token:
        tok = self.tok
        if tok.kind != kind:
            found = "the end" if tok.kind == "end" else repr(tok.text)
            raise ExpressionError(f"expected {kind!r} at column {tok.column}, found {found}")
        self.pos += 1
        return tok

    def nested(self, column: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"the expression nests deeper than {MAX_DEPTH} levels (column {column})")

    def expr(self):
        node = self.term()
        while self.tok.kind in ("+", "-"):
            op = self.take(self.tok.kind)
            node = BinOp(op.kind, node, self.term(), op.column)
        return node

    def term(self):
        node = self.factor()
        while self.tok.kind in PRODUCTS:
            op = self.take(self.tok.kind)
            node = BinOp(op.kind, node, self.factor(), op.column)
        return node

    def factor(self):
        if self.tok.kind == "-":
            minus = self.take("-")
            if self.tok.kind == "int":
                return Num(_int_value(self.take("int").text, True), minus.column)
            if self.tok.kind == "float":
                return Num(_float_value(self.take("float").text, True), minus.column)
            return Neg(self.primary(), minus.column)
        return self.primary()

    def primary(self):
        tok = self.tok
        if tok.kind == "int":
            self.pos += 1
            return Num(_int_value(tok.text, False), tok.column)
        if tok.kind == "float":
            self.pos += 1
            return Num(_float_value(tok.text, False), tok.column)
        if tok.kind == "[":
            return self.array()
        if tok.kind == "name":
            return self.call()
        if tok.kind == "(":
            self.nested(tok.column)
            self.take("(")
            node = self.expr()
            self.take(")")
            self.depth -= 1
            return node
        found = "the end of the expression" if tok.kind == "end" else repr(tok.text)
        raise ExpressionError(f"expected a number, '[', '(' or a function at column {tok.column}, found {found}")

    def array(self) -> Array:
        start = self.take("[")
        self.nested(start.column)
        items = []
        if self.tok.kind != "]":
            items.append(self.expr())
            while self.tok.kind == ",":
                self.take(",")
                items.append(self.expr())
        self.take("]")
        self.depth -= 1
        return Array(tuple(items), start.column)

    def call(self) -> Call:
        name = self.take("name")
        if name.text not in FUNCTIONS:
            raise ExpressionError(f"unknown function {name.text!r} at column {name.column}; "
                                  f"known: {', '.join(FUNCTIONS)}")
        self.nested(name.column)
        self.take("(")
        args = [self.expr()]
        while self.tok.kind == ",":
            self.take(",")
            args.append(self.expr())
        self.take(")")
        self.depth -= 1
        return Call(name.text, tuple(args), name.column)


def parse(text: str):
    """The syntax tree of ``text`` (Num, Array, Neg, BinOp, Call); ExpressionError if invalid."""
    parser = _Parser(text)
    if parser.tok.kind == "end":
        raise ExpressionError("the expression is empty")
    node = parser.expr()
    if parser.tok.kind != "end":
        raise ExpressionError(f"unexpected {parser.tok.text!r} at column {parser.tok.column}")
    return node
