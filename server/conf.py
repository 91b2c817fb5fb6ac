"""nats-server's configuration format, read as nats-server reads it.

The lexer is a state machine with the states of nats-server's conf/lex.go
(one function per state, the same transitions, the same error texts), and
the parser does what conf/parse.go does with its items: ``key: value``,
``key = value`` and ``key value``; blocks ``{ }`` with or without a
separator; arrays over lines with or without commas; ``#`` and ``//``
comments; quoted and bare strings (``localhost:4222``, ``10.0.0.1``,
``nats://a:4222``, paths); numbers with every size suffix nats-server knows
(``k``/``m``/``g``/``t``/``p``/``e`` are powers of 1000; ``kb``/``ki``/``kib``
and the like powers of 1024; any case); booleans (``true``/``false``,
``yes``/``no``, ``on``/``off``); ``include`` (relative to the including
file); variables (``$VAR``: a key of this block or an enclosing one, else
the environment); ``( ... )`` text blocks; Zulu datetimes. Positions are
nats-server's own: ``(line, column)`` of each key, column 0-based on the
first line and 1-based after it (lex.go counts from the last newline).
Durations stay strings (``"2m"``); see ``config_duration``.
"""

from __future__ import annotations

import os
import re


class ConfigError(ValueError):
    pass


class PlacedError(ConfigError):
    """A config error already at its place (``file:line:col: what``), which
    a caller placing errors at a key's place passes on as it is."""


class OptionsError(ConfigError):
    """An error of nats-server's validateOptions (the checks of the options
    once the file is read, at the server's start): ``-t`` does not make
    them, and a start reports only the first, when the file had no error."""


class ConfMap(dict):
    """A block (or the whole file): a dict, plus where each key was written,
    ``pos[key] = (line, column)`` as nats-server reports them, and
    ``files[key]``, the file a key came from when an ``include`` brought it
    (else the key is in ``file``, the file the map was read from)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.pos: dict[str, tuple[int, int]] = {}
        self.files: dict[str, str] = {}
        self.file = ""  # the file this block was read from
        self.used: set[str] = set()  # keys a $variable named (nats-server does not call those unknown)
        self.end = (0, 0)  # where the block ends (its closing brace), as nats-server places the map's token
        self.written: dict[str, str] = {}  # a key renamed from an alias (confcheck): the key as the file wrote it

    def where(self, key: str, source: str = "") -> str:
        """``file:line:col`` of ``key``, nats-server's prefix of an error
        about it (``source``: the file's name when the block does not know it)."""
        line, col = self.pos.get(key, (0, 0))
        return f"{self.files.get(key) or self.file or source}:{line}:{col}"


class ConfList(list):
    """An array: a list, plus where each element was written, ``pos[i] =
    (line, column)``, nats-server's place for an error about that element
    (a string, number or variable at itself, a map at its closing brace, an
    array at its closing bracket: parse.go's token of each), and ``file``,
    the file the array was read from."""

    def __init__(self, *args):
        super().__init__(*args)
        self.pos: list[tuple[int, int]] = []
        self.file = ""

    def where(self, i: int, source: str = "") -> str:
        """``file:line:col`` of element ``i``."""
        line, col = self.pos[i] if 0 <= i < len(self.pos) else (0, 0)
        return f"{self.file or source}:{line}:{col}"

    def like(self, items) -> "ConfList":
        """``items`` (as many, in the same order) placed as this array's elements."""
        out = ConfList(items)
        out.pos, out.file = list(self.pos), self.file
        return out


def element_error(array, i: int, what: str) -> ConfigError:
    """``what`` (each of its lines) at element ``i`` of a config array (a
    PlacedError), or unplaced where the list does not know its places."""
    if isinstance(array, ConfList) and 0 <= i < len(array.pos):
        return PlacedError("\n".join(f"{array.where(i)}: {line}" for line in what.split("\n")))
    return ConfigError(what)


def item_where(array, i: int, fallback: str = "") -> str:
    """``file:line:col`` of element ``i`` of a config array, or ``fallback``
    (the array's key) for a list that does not know its places."""
    return array.where(i) if isinstance(array, ConfList) and i < len(array.pos) else fallback


# -- the lexer (conf/lex.go) -------------------------------------------------------

(ERROR, EOF, KEY, TEXT, STRING, BOOL, INTEGER, FLOAT, DATETIME, ARRAY_START, ARRAY_END, MAP_START, MAP_END,
 COMMENT_START, VARIABLE, INCLUDE) = range(16)

_EOF = "\0"  # lex.go's eof rune


def _isspace(r: str) -> bool:  # unicode.IsSpace
    return r in "\t\n\v\f\r \x85\xa0" or (r > "\xff" and r.isspace())


def _iswhite(r: str) -> bool:
    return r in ("\t", " ")


def _isnl(r: str) -> bool:
    return r in ("\n", "\r")


def _isdigit(r: str) -> bool:  # unicode.IsDigit
    return r != _EOF and r.isdecimal()


def _iskeysep(r: str) -> bool:
    return r in ("=", ":")


def _is_number_suffix(r: str) -> bool:
    return r in "kKmMgGtTpPeE" and r != _EOF


def _esc(r: str) -> str:  # escapeSpecial
    return "\\n" if r == "\n" else r


class _Lexer:
    """Over the file's UTF-8 bytes, a rune at a time, as lex.go: positions
    are byte offsets, as nats-server reports them."""

    def __init__(self, text: str | bytes):
        self.input = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        self.start = 0
        self.pos = 0
        self.width = 0
        self.line = 1
        self.stack: list = []
        self.string_parts: list[bytes] = []
        self.string_state = None
        self.lstart = 0
        self.ilstart = 0
        self.items: list[tuple[int, str, int, int]] = []

    def run(self) -> list[tuple[int, str, int, int]]:
        """Every item up to EOF or the first error (the parser reads them
        in order, so reading them all first changes nothing)."""
        state = _Lexer.top
        while state is not None:
            state = state(self)
        return self.items

    def text(self, a: int, b: int) -> str:
        return self.input[a:b].decode("utf-8", "surrogateescape")

    # lexer primitives
    def push(self, state) -> None:
        self.stack.append(state)

    def pop(self):
        if not self.stack:
            return self.errorf("BUG in lexer: no states to pop.")
        return self.stack.pop()

    def emit(self, typ: int) -> None:
        val = b"".join(self.string_parts) + self.input[self.start:self.pos]
        pos = self.pos - self.ilstart - len(val)
        self.items.append((typ, val.decode("utf-8", "surrogateescape"), self.line, pos))
        self.start = self.pos
        self.ilstart = self.lstart

    def emit_string(self) -> None:
        val = b"".join(self.string_parts) + self.input[self.start:self.pos]
        self.string_parts = []
        pos = self.pos - self.ilstart - len(val)
        self.items.append((STRING, val.decode("utf-8", "surrogateescape"), self.line, pos))
        self.start = self.pos
        self.ilstart = self.lstart

    def add_current_string_part(self, offset: int) -> None:
        self.string_parts.append(self.input[self.start:self.pos - offset])
        self.start = self.pos

    def add_string_part(self, s: bytes):
        self.string_parts.append(s)
        self.start = self.pos
        return self.string_state

    def next(self) -> str:
        if self.pos >= len(self.input):
            self.width = 0
            return _EOF
        b = self.input[self.pos]
        if b == 0x0A:
            self.line += 1
            self.lstart = self.pos
        if b < 0x80:
            r, w = chr(b), 1
        else:  # utf8.DecodeRuneInString: an invalid sequence is U+FFFD, one byte wide
            w = 2 if 0xC2 <= b < 0xE0 else 3 if 0xE0 <= b < 0xF0 else 4 if 0xF0 <= b < 0xF5 else 1
            try:
                r = self.input[self.pos:self.pos + w].decode("utf-8") if w > 1 else "\ufffd"
            except UnicodeDecodeError:
                r, w = "\ufffd", 1
        self.width = w
        self.pos += w
        return r

    def ignore(self) -> None:
        self.start = self.pos
        self.ilstart = self.lstart

    def backup(self) -> None:
        self.pos -= self.width
        if self.pos < len(self.input) and self.input[self.pos] == 0x0A:
            self.line -= 1

    def peek(self) -> str:
        r = self.next()
        self.backup()
        return r

    def errorf(self, msg: str):
        self.items.append((ERROR, msg, self.line, self.pos - self.lstart))
        return None

    @staticmethod
    def skip(next_state):
        def skipper(lx):
            lx.ignore()
            return next_state
        return skipper

    def _comment_or(self, back):
        """After a '/': a '//' comment (returns its state) or None (backed up)."""
        if self.next() == "/":
            self.push(back)
            return _Lexer.comment_start
        self.backup()
        return None

    def _eof_here(self):
        if self.pos > self.start:
            return self.errorf("Unexpected EOF.")
        self.emit(EOF)
        return None

    # states
    def top(lx):
        r = lx.next()
        if _isspace(r):
            return lx.skip(_Lexer.top)
        if r == "{":
            lx.push(_Lexer.top)
            return lx.skip(_Lexer.block_start)
        if r == "#":
            lx.push(_Lexer.top)
            return _Lexer.comment_start
        if r == "/":
            s = lx._comment_or(_Lexer.top)
            if s:
                return s
            return lx._eof_here()
        if r == _EOF:
            return lx._eof_here()
        lx.backup()
        lx.push(_Lexer.top_value_end)
        return _Lexer.key_start

    def top_value_end(lx):
        r = lx.next()
        if r == "#":
            lx.push(_Lexer.top)
            return _Lexer.comment_start
        if r == "/":
            s = lx._comment_or(_Lexer.top)
            if s:
                return s
            return _Lexer.top_value_end
        if _iswhite(r):
            return _Lexer.top_value_end
        if _isnl(r) or r == _EOF or r in ";,}":
            lx.ignore()
            return _Lexer.top
        return lx.errorf("Expected a top-level value to end with a new line, comment or EOF, "
                         f"but got '{_esc(r)}' instead.")

    def block_start(lx):
        r = lx.next()
        if _isspace(r):
            return lx.skip(_Lexer.block_start)
        if r == "{":
            lx.push(_Lexer.block_end)
            return lx.skip(_Lexer.block_start)
        if r == "}":
            lx.ignore()
            return lx.pop()
        if r == "#":
            lx.push(_Lexer.block_start)
            return _Lexer.comment_start
        if r == "/":
            s = lx._comment_or(_Lexer.block_start)
            if s:
                return s
            return lx._eof_here()
        if r == _EOF:
            return lx._eof_here()
        lx.backup()
        lx.push(_Lexer.block_value_end)
        return _Lexer.key_start

    def block_value_end(lx):
        r = lx.next()
        if r == "#":
            lx.push(_Lexer.block_value_end)
            return _Lexer.comment_start
        if r == "/":
            s = lx._comment_or(_Lexer.block_value_end)
            if s:
                return s
            return _Lexer.block_value_end
        if _iswhite(r):
            return _Lexer.block_value_end
        if _isnl(r) or r in ";," and r != _EOF:
            lx.ignore()
            return _Lexer.block_start
        if r == "}":
            lx.backup()
            return _Lexer.block_end
        return lx.errorf("Expected a block-level value to end with a new line, comment or EOF, "
                         f"but got '{_esc(r)}' instead.")

    def block_end(lx):
        r = lx.next()
        if r == "#":
            lx.push(_Lexer.block_start)
            return _Lexer.comment_start
        if r == "/":
            s = lx._comment_or(_Lexer.block_start)
            if s:
                return s
            return _Lexer.block_end
        if _isnl(r) or _iswhite(r):
            return _Lexer.block_end
        if r in ";," and r != _EOF:
            lx.ignore()
            return _Lexer.block_start
        if r == "}":
            lx.ignore()
            return lx.pop()
        return lx.errorf(f"Expected a block-level to end with a '}}', but got '{_esc(r)}' instead.")

    def key_start(lx):
        r = lx.peek()
        if _iskeysep(r):
            return lx.errorf(f"Unexpected key separator '{r}'")
        if _isspace(r):
            lx.next()
            return lx.skip(_Lexer.key_start)
        if r == '"':
            lx.next()
            return lx.skip(_Lexer.dub_quoted_key)
        if r == "'":
            lx.next()
            return lx.skip(_Lexer.quoted_key)
        lx.ignore()
        lx.next()
        return _Lexer.key

    def _quoted_key(lx, quote, again):
        r = lx.peek()
        if r == quote:
            lx.emit(KEY)
            lx.next()
            return lx.skip(_Lexer.key_end)
        if r == _EOF:
            return lx._eof_here()
        lx.next()
        return again

    def dub_quoted_key(lx):
        return lx._quoted_key('"', _Lexer.dub_quoted_key)

    def quoted_key(lx):
        return lx._quoted_key("'", _Lexer.quoted_key)

    def key_check_keyword(lx, fall_through, push):
        if lx.text(lx.start, lx.pos).lower() == "include":
            lx.ignore()
            if push is not None:
                lx.push(push)
            return _Lexer.include_start
        lx.emit(KEY)
        return fall_through

    def include_start(lx):
        r = lx.next()
        if _iswhite(r):
            return lx.skip(_Lexer.include_start)
        lx.backup()
        return _Lexer.include

    def _include_quoted(lx, quote, again, what):
        r = lx.next()
        if r == quote:
            lx.backup()
            lx.emit(INCLUDE)
            lx.next()
            lx.ignore()
            return lx.pop()
        if r == _EOF:
            return lx.errorf(f"Unexpected EOF in {what} include")
        return again

    def include_quoted_string(lx):
        return lx._include_quoted("'", _Lexer.include_quoted_string, "quoted")

    def include_dub_quoted_string(lx):
        return lx._include_quoted('"', _Lexer.include_dub_quoted_string, "double quoted")

    def include_string(lx):
        r = lx.next()
        if _isnl(r) or r == _EOF or r in ";}" or _iswhite(r):
            lx.backup()
            lx.emit(INCLUDE)
            return lx.pop()
        if r == "'":
            lx.backup()
            lx.emit(INCLUDE)
            lx.next()
            lx.ignore()
            return lx.pop()
        return _Lexer.include_string

    def include(lx):
        r = lx.next()
        if r == "'":
            lx.ignore()
            return _Lexer.include_quoted_string
        if r == '"':
            lx.ignore()
            return _Lexer.include_dub_quoted_string
        if r == "[":
            return lx.errorf("Expected include value but found start of an array")
        if r == "{":
            return lx.errorf("Expected include value but found start of a map")
        if r == "(":
            return lx.errorf("Expected include value but found start of a block")
        if _isdigit(r) or r == "-":
            return lx.errorf("Expected include value but found start of a number")
        if r == "\\":
            return lx.errorf("Expected include value but found escape sequence")
        if _isnl(r):
            return lx.errorf("Expected include value but found new line")
        lx.backup()
        return _Lexer.include_string

    def key(lx):
        r = lx.peek()
        if _isspace(r):
            return lx.key_check_keyword(_Lexer.key_end, None)
        if _iskeysep(r) or r == _EOF:
            lx.emit(KEY)
            return _Lexer.key_end
        lx.next()
        return _Lexer.key

    def key_end(lx):
        r = lx.next()
        if _isspace(r):
            return lx.skip(_Lexer.key_end)
        if _iskeysep(r):
            return lx.skip(_Lexer.value)
        if r == _EOF:
            lx.emit(EOF)
            return None
        lx.backup()
        return _Lexer.value

    def value(lx):
        r = lx.next()
        if _iswhite(r):
            return lx.skip(_Lexer.value)
        if r == "[":
            lx.ignore()
            lx.emit(ARRAY_START)
            return _Lexer.array_value
        if r == "{":
            lx.ignore()
            lx.emit(MAP_START)
            return _Lexer.map_key_start
        if r == "'":
            lx.ignore()
            return _Lexer.quoted_string
        if r == '"':
            lx.ignore()
            lx.string_state = _Lexer.dub_quoted_string
            return _Lexer.dub_quoted_string
        if r == "-":
            return _Lexer.neg_number_start
        if r == "(":
            lx.ignore()
            return _Lexer.block
        if _isdigit(r):
            lx.backup()
            return _Lexer.number_or_date_or_string_or_ip_start
        if r == ".":
            return lx.errorf("Floats must start with a digit")
        if _isnl(r):
            return lx.errorf("Expected value but found new line")
        lx.backup()
        lx.string_state = _Lexer.string
        return _Lexer.string

    def array_value(lx):
        r = lx.next()
        if _isspace(r):
            return lx.skip(_Lexer.array_value)
        if r == "#":
            lx.push(_Lexer.array_value)
            return _Lexer.comment_start
        if r == "/":
            s = lx._comment_or(_Lexer.array_value)
            if s:
                return s
            return lx.errorf("Unexpected array value terminator ','.")
        if r == ",":
            return lx.errorf("Unexpected array value terminator ','.")
        if r == "]":
            return _Lexer.array_end
        lx.backup()
        lx.push(_Lexer.array_value_end)
        return _Lexer.value

    def array_value_end(lx):
        r = lx.next()
        if _iswhite(r):
            return lx.skip(_Lexer.array_value_end)
        if r == "#":
            lx.push(_Lexer.array_value_end)
            return _Lexer.comment_start
        if r == "/":
            s = lx._comment_or(_Lexer.array_value_end)
            if s:
                return s
            return lx.skip(_Lexer.array_value)
        if r == "," or _isnl(r):
            return lx.skip(_Lexer.array_value)
        if r == "]":
            return _Lexer.array_end
        return lx.errorf("Expected an array value terminator \",\" or an array terminator \"]\", "
                         f"but got '{_esc(r)}' instead.")

    def array_end(lx):
        lx.ignore()
        lx.emit(ARRAY_END)
        return lx.pop()

    def map_key_start(lx):
        r = lx.peek()
        if _iskeysep(r):
            return lx.errorf(f"Unexpected key separator '{r}'.")
        if r == "]":
            return lx.errorf(f"Unexpected array end '{r}' processing map.")
        if _isspace(r):
            lx.next()
            return lx.skip(_Lexer.map_key_start)
        if r == "}":
            lx.next()
            return lx.skip(_Lexer.map_end)
        if r == "#":
            lx.next()
            lx.push(_Lexer.map_key_start)
            return _Lexer.comment_start
        if r == "/":
            lx.next()
            if lx.next() == "/":
                lx.push(_Lexer.map_key_start)
                return _Lexer.comment_start
            lx.backup()
        elif r == "'":
            lx.next()
            return lx.skip(_Lexer.map_quoted_key)
        elif r == '"':
            lx.next()
            return lx.skip(_Lexer.map_dub_quoted_key)
        elif r == _EOF:
            return lx.errorf("Unexpected EOF processing map.")
        lx.ignore()
        lx.next()
        return _Lexer.map_key

    def _map_quoted_key(lx, quote, again, what):
        r = lx.peek()
        if r == _EOF:
            return lx.errorf(f"Unexpected EOF processing {what} map key.")
        if r == quote:
            lx.emit(KEY)
            lx.next()
            return lx.skip(_Lexer.map_key_end)
        lx.next()
        return again

    def map_quoted_key(lx):
        return lx._map_quoted_key("'", _Lexer.map_quoted_key, "quoted")

    def map_dub_quoted_key(lx):
        return lx._map_quoted_key('"', _Lexer.map_dub_quoted_key, "double quoted")

    def map_key(lx):
        r = lx.peek()
        if r == _EOF:
            return lx.errorf("Unexpected EOF processing map key.")
        if _isspace(r):
            return lx.key_check_keyword(_Lexer.map_key_end, _Lexer.map_value_end)
        if _iskeysep(r):
            lx.emit(KEY)
            return _Lexer.map_key_end
        lx.next()
        return _Lexer.map_key

    def map_key_end(lx):
        r = lx.next()
        if _isspace(r):
            return lx.skip(_Lexer.map_key_end)
        if _iskeysep(r):
            return lx.skip(_Lexer.map_value)
        lx.backup()
        return _Lexer.map_value

    def map_value(lx):
        r = lx.next()
        if _isspace(r):
            return lx.skip(_Lexer.map_value)
        if r == ",":
            return lx.errorf("Unexpected map value terminator \",\".")
        if r == "}":
            return lx.skip(_Lexer.map_end)
        lx.backup()
        lx.push(_Lexer.map_value_end)
        return _Lexer.value

    def map_value_end(lx):
        r = lx.next()
        if _iswhite(r):
            return lx.skip(_Lexer.map_value_end)
        if r == "#":
            lx.push(_Lexer.map_value_end)
            return _Lexer.comment_start
        if r == "/":
            s = lx._comment_or(_Lexer.map_value_end)
            if s:
                return s
            return lx.skip(_Lexer.map_key_start)
        if r in ";," and r != _EOF or _isnl(r):
            return lx.skip(_Lexer.map_key_start)
        if r == "}":
            return lx.skip(_Lexer.map_end)
        return lx.errorf("Expected a map value terminator \",\" or a map terminator \"}\", "
                         f"but got '{_esc(r)}' instead.")

    def map_end(lx):
        lx.ignore()
        lx.emit(MAP_END)
        return lx.pop()

    def is_bool(lx) -> bool:
        return lx.text(lx.start, lx.pos).lower() in ("true", "false", "on", "off", "yes", "no")

    def is_variable(lx) -> bool:
        if lx.start >= len(lx.input):
            return False
        if lx.input[lx.start] == 0x24:  # '$'
            lx.start += 1
            return True
        return False

    def quoted_string(lx):
        r = lx.next()
        if r == "'":
            lx.backup()
            lx.emit(STRING)
            lx.next()
            lx.ignore()
            return lx.pop()
        if r == _EOF:
            return lx._eof_here()
        return _Lexer.quoted_string

    def dub_quoted_string(lx):
        r = lx.next()
        if r == "\\":
            lx.add_current_string_part(1)
            return _Lexer.string_escape
        if r == '"':
            lx.backup()
            lx.emit_string()
            lx.next()
            lx.ignore()
            return lx.pop()
        if r == _EOF:
            return lx._eof_here()
        return _Lexer.dub_quoted_string

    def string(lx):
        r = lx.next()
        if r == "\\":
            lx.add_current_string_part(1)
            return _Lexer.string_escape
        if _isnl(r) or r == _EOF or r in ";,]}" or _iswhite(r):
            lx.backup()
            if lx.string_parts:
                lx.emit_string()
            elif lx.is_bool():
                lx.emit(BOOL)
            elif lx.is_variable():
                lx.emit(VARIABLE)
            else:
                lx.emit_string()
            return lx.pop()
        if r == "'":
            lx.backup()
            lx.emit_string()
            lx.next()
            lx.ignore()
            return lx.pop()
        return _Lexer.string

    def block(lx):
        r = lx.next()
        if r == ")":
            lx.backup()
            lx.backup()
            if lx.next() != "\n":
                lx.next()
                return _Lexer.block
            lx.next()
            if lx.next() in ("\n", _EOF):
                lx.backup()
                lx.backup()
                lx.emit(STRING)
                lx.next()
                lx.ignore()
                return lx.pop()
            lx.backup()
        elif r == _EOF:
            return lx.errorf("Unexpected EOF processing block.")
        return _Lexer.block

    def string_escape(lx):
        r = lx.next()
        if r == "x":
            return _Lexer.string_binary
        esc = {"t": b"\t", "n": b"\n", "r": b"\r", '"': b'"', "\\": b"\\"}.get(r)
        if esc is not None and r != _EOF:
            return lx.add_string_part(esc)
        return lx.errorf(f"Invalid escape character '{_esc(r)}'. Only the following escape characters are "
                         "allowed: \\xXX, \\t, \\n, \\r, \\\", \\\\.")

    def string_binary(lx):
        for _ in range(2):
            if _isnl(lx.next()):
                return lx.errorf("Expected two hexadecimal digits after '\\x', but hit end of line")
        pair = lx.text(lx.pos - 2, lx.pos)
        if not re.fullmatch(r"[0-9a-fA-F]{2}", pair):
            return lx.errorf(f"Expected two hexadecimal digits after '\\x', but got '{pair}'")
        lx.add_string_part(bytes([int(pair, 16)]))
        return lx.string_state

    def number_or_date_or_string_or_ip_start(lx):
        r = lx.next()
        if not _isdigit(r):
            if r == ".":
                return lx.errorf("Floats must start with a digit, not '.'.")
            return lx.errorf(f"Expected a digit but got '{_esc(r)}'.")
        return _Lexer.number_or_date_or_string_or_ip

    @staticmethod
    def _ends_number(r: str) -> bool:
        return _isnl(r) or r == _EOF or r in "};," or _iswhite(r) or _isdigit(r)

    def number_or_date_or_string_or_ip(lx):
        r = lx.next()
        if r == "-":
            if lx.pos - lx.start != 5:
                return lx.errorf("All ISO8601 dates must be in full Zulu form.")
            return _Lexer.date_after_year
        if _isdigit(r):
            return _Lexer.number_or_date_or_string_or_ip
        if r == ".":
            return _Lexer.float_start
        if _is_number_suffix(r):
            return _Lexer.convenient_number
        if not lx._ends_number(r):
            lx.string_state = _Lexer.string
            return _Lexer.string
        lx.backup()
        lx.emit(INTEGER)
        return lx.pop()

    def convenient_number(lx):
        r = lx.next()
        if r in "bBiI" and r != _EOF:
            return _Lexer.convenient_number
        lx.backup()
        if lx._ends_number(r):
            lx.emit(INTEGER)
            return lx.pop()
        lx.string_state = _Lexer.string
        return _Lexer.string

    def date_after_year(lx):
        for f in "00-00T00:00:00Z":
            r = lx.next()
            if f == "0":
                if not _isdigit(r):
                    return lx.errorf(f"Expected digit in ISO8601 datetime, but found '{_esc(r)}' instead.")
            elif f != r:
                return lx.errorf(f"Expected '{f}' in ISO8601 datetime, but found '{_esc(r)}' instead.")
        lx.emit(DATETIME)
        return lx.pop()

    def neg_number_start(lx):
        r = lx.next()
        if not _isdigit(r):
            if r == ".":
                return lx.errorf("Floats must start with a digit, not '.'.")
            return lx.errorf(f"Expected a digit but got '{_esc(r)}'.")
        return _Lexer.neg_number

    def neg_number(lx):
        r = lx.next()
        if _isdigit(r):
            return _Lexer.neg_number
        if r == ".":
            return _Lexer.float_start
        if _is_number_suffix(r):
            return _Lexer.convenient_number
        lx.backup()
        lx.emit(INTEGER)
        return lx.pop()

    def float_start(lx):
        r = lx.next()
        if not _isdigit(r):
            return lx.errorf(f"Floats must have a digit after the '.', but got '{_esc(r)}' instead.")
        return _Lexer.float

    def float(lx):
        r = lx.next()
        if _isdigit(r):
            return _Lexer.float
        if r == ".":
            return _Lexer.ip_addr
        lx.backup()
        lx.emit(FLOAT)
        return lx.pop()

    def ip_addr(lx):
        r = lx.next()
        if _isdigit(r) or r in ".:-" and r != _EOF:
            return _Lexer.ip_addr
        lx.backup()
        lx.emit(STRING)
        return lx.pop()

    def comment_start(lx):
        lx.ignore()
        lx.emit(COMMENT_START)
        return _Lexer.comment

    def comment(lx):
        r = lx.peek()
        if _isnl(r) or r == _EOF:
            lx.emit(TEXT)
            return lx.pop()
        lx.next()
        return _Lexer.comment


# -- the parser (conf/parse.go) ------------------------------------------------------

_SIZES = {"": 1, "k": 1000, "kb": 1024, "ki": 1024, "kib": 1024}
for _i, _p in enumerate("mgtpe", start=2):
    _SIZES[_p] = 1000 ** _i
    for _s in ("b", "i", "ib"):
        _SIZES[_p + _s] = 1024 ** _i
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _go_int(numstr: str) -> int | None:
    """strconv.ParseInt(s, 10, 64): None when not a number; ValueError out of range."""
    if not re.fullmatch(r"[+-]?[0-9]+", numstr):
        return None
    n = int(numstr)
    if not _INT64[0] <= n <= _INT64[1]:
        raise ValueError
    return n


def _wrap64(n: int) -> int:
    """Go's int64 multiplication overflows silently; so does this."""
    n &= (1 << 64) - 1
    return n - (1 << 64) if n >> 63 else n


class _Parser:
    def __init__(self, text: str | bytes, fp: str, env_refs: set | None = None):
        self.fp = fp
        self.mapping = self._map()
        self.items = _Lexer(text).run()
        self.ctxs: list = []
        self.ctx = None
        self.keys: list[tuple[str, int, int]] = []
        self.dir = os.path.dirname(fp) or "."  # filepath.Dir
        self.env_refs = env_refs if env_refs is not None else set()

    def parse(self) -> ConfMap:
        self.push_context(self.mapping)
        prev = None
        for it in self.items:
            typ, val, line, pos = it
            if typ == EOF:
                if prev is not None and prev[0] == KEY and prev[1] != "}":
                    raise ConfigError(f"config is invalid ({self.fp}:{line}:{pos})")
                break
            prev = it
            self.process(it)
        return self.mapping

    def _map(self) -> ConfMap:
        m = ConfMap()
        m.file = self.fp
        return m

    def push_context(self, ctx) -> None:
        self.ctxs.append(ctx)
        self.ctx = ctx

    def pop_context(self):
        last = self.ctxs.pop()
        self.ctx = self.ctxs[-1]
        return last

    def set_value(self, val, file: str | None = None, at: tuple[int, int] = (0, 0)) -> None:
        if isinstance(self.ctx, list):
            self.ctx.append(val)
            if isinstance(self.ctx, ConfList):
                self.ctx.pos.append(at)
        elif isinstance(self.ctx, ConfMap):
            key, line, pos = self.keys.pop()
            self.ctx[key] = val
            self.ctx.pos[key] = (line, pos)
            if file is not None:
                self.ctx.files[key] = file
            else:
                self.ctx.files.pop(key, None)

    def process(self, it) -> None:
        typ, val, line, pos = it
        at = (line, pos)  # (an array element's place: its own item's)
        if typ == ERROR:
            raise ConfigError(f"Parse error on line {line}: '{val}'")
        if typ == KEY:
            self.keys.append((val, line, pos))
        elif typ == MAP_START:
            self.push_context(self._map())
        elif typ == MAP_END:
            m = self.pop_context()
            m.end = (line, pos)  # (nats-server's place for an error about the map as a value)
            self.set_value(m, at=at)
        elif typ == STRING:
            self.set_value(val, at=at)
        elif typ == INTEGER:
            last = 0
            for r in val:
                if not (r.isdecimal() or r == "-"):
                    break
                last += 1
            try:
                num = _go_int(val[:last])
            except ValueError:
                raise ConfigError(f"integer '{val}' is out of the range") from None
            if num is None:
                raise ConfigError(f"expected integer, but got '{val}'")
            mult = _SIZES.get(val[last:].strip().lower())
            if mult is None:  # (parse.go sets nothing for a suffix it does not know; its key stays pushed)
                return
            self.set_value(_wrap64(num * mult), at=at)
        elif typ == FLOAT:
            try:
                f = float(val)
            except ValueError:
                raise ConfigError(f"expected float, but got '{val}'") from None
            if f in (float("inf"), float("-inf")):
                raise ConfigError(f"float '{val}' is out of the range")
            self.set_value(f, at=at)
        elif typ == BOOL:
            low = val.lower()
            if low in ("true", "yes", "on"):
                self.set_value(True, at=at)
            elif low in ("false", "no", "off"):
                self.set_value(False, at=at)
            else:
                raise ConfigError(f"expected boolean value, but got '{val}'")
        elif typ == DATETIME:
            try:
                import datetime  # (only for a datetime value: start-up does without it)

                dt = datetime.datetime.strptime(val, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
            except ValueError:
                raise ConfigError(f"expected Zulu formatted DateTime, but got '{val}'") from None
            self.set_value(dt, at=at)
        elif typ == ARRAY_START:
            array = ConfList()
            array.file = self.fp
            self.push_context(array)
        elif typ == ARRAY_END:
            array = self.ctx
            self.pop_context()
            self.set_value(array, at=at)
        elif typ == VARIABLE:
            found, value = self.lookup_variable(val, line)
            if not found:
                raise ConfigError(f"variable reference for '{val}' on line {line} can not be found")
            self.set_value(value, at=at)
        elif typ == INCLUDE:
            # filepath.Join(dir, val): an absolute val is joined too, as Go does
            path = os.path.normpath("/".join(x for x in (self.dir, val) if x))
            try:
                m = parse_file(path)
            except OSError as e:
                op = "read" if isinstance(e, IsADirectoryError) else "open"
                raise ConfigError(f"error parsing include file '{val}', {op} {path}: {_strerror(e)}") from None
            except ConfigError as e:
                raise ConfigError(f"error parsing include file '{val}', {e}") from None
            for k, v in m.items():
                line_k, pos_k = m.pos[k]
                self.keys.append((k, line_k, pos_k))
                self.set_value(v, m.files.get(k, path))
            if isinstance(self.ctx, ConfMap):  # a key the included file used as a $variable stays no field
                self.ctx.used |= m.used & set(m)

    def lookup_variable(self, ref: str, line: int):
        if ref.startswith("2a$"):  # a bare bcrypt hash
            return True, "$" + ref
        for ctx in reversed(self.ctxs):
            if isinstance(ctx, ConfMap) and ref in ctx:
                ctx.used.add(ref)
                return True, ctx[ref]
        if ref in self.env_refs:
            raise ConfigError(f"variable reference for '{ref}' on line {line} could not be parsed: "
                              f"variable reference cycle for '{ref}'")
        if ref not in os.environ:
            return False, None
        self.env_refs.add(ref)
        try:
            sub = _Parser(f"pk={os.environ[ref]}", "", self.env_refs)
            try:
                m = sub.parse()
            except ConfigError as e:
                raise ConfigError(f"variable reference for '{ref}' on line {line} could not be parsed: {e}") from None
        finally:
            self.env_refs.discard(ref)
        if "pk" not in m:
            return False, None
        return True, m["pk"]


def _strerror(e: OSError) -> str:
    why = e.strerror or str(e)
    return why[:1].lower() + why[1:]


def parse_config(text: str | bytes, fp: str = "") -> ConfMap:
    """The settings of a configuration text; ``fp``, the file it was read
    from (``include`` is relative to its directory; errors name it)."""
    return _Parser(text, fp).parse()


def parse_file(fp: str) -> ConfMap:
    """The settings of file ``fp`` (OSError if it cannot be read)."""
    with open(fp, "rb") as f:
        return parse_config(f.read(), fp)


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(s: str) -> float:
    """Seconds from Go's time.ParseDuration, and its error texts (``time:
    invalid duration "x"``, ``time: missing unit ...``, ``time: unknown unit ...``)."""
    orig, total = s, 0.0
    quoted = '"' + orig + '"'
    neg = s[:1] == "-"
    if s[:1] in ("-", "+"):
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ConfigError(f"time: invalid duration {quoted}")
    while s:
        m = re.match(r"([0-9]*)(\.[0-9]*)?", s)
        if not m or m.group(0) in ("", "."):
            raise ConfigError(f"time: invalid duration {quoted}")
        num = float((m.group(1) or "0") + (m.group(2) or ""))
        s = s[m.end():]
        u = re.match(r"[^0-9.]*", s).group(0)
        if not u:
            raise ConfigError(f"time: missing unit in duration {quoted}")
        if u not in _GO_UNITS:
            raise ConfigError(f'time: unknown unit "{u}" in duration {quoted}')
        total += num * _GO_UNITS[u]
        s = s[len(u):]
    return -total if neg else total


def config_duration(v, error: str = "{}", numbers: tuple = (int,), wrong: str | None = None) -> float:
    """Seconds from a duration in a config file, read as nats-server's
    option parsers read one: a string is Go's time.ParseDuration (its error
    given as ``error.format(e)``), a number of a type in ``numbers`` (int:
    Go's int64, float: float64) is seconds, anything else is ``wrong``, by
    default the interface conversion of Go's ``v.(int64)`` (``v.(string)``
    when no number is taken). ConfigError, without a place: the caller
    places it."""
    if isinstance(v, str):
        try:
            return go_duration(v)
        except ConfigError as e:
            raise ConfigError(error.format(e)) from None
    if isinstance(v, numbers) and not isinstance(v, bool):
        return float(v)
    raise ConfigError(wrong or f"interface conversion: interface {{}} is {go_type(v)}, "
                               f"not {'int64' if int in numbers else 'string'}")


def go_type(v) -> str:
    """Go's %T of a config value, as nats-server's errors name it."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "[]interface {}"
    return "map[string]interface {}" if isinstance(v, dict) else type(v).__name__


def go_value(v) -> str:
    """Go's %v of a config value (``5``, ``abc``, ``true``, ``[a b]``,
    ``map[a:1]``), as nats-server's errors show it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e21 else repr(v)
    if isinstance(v, list):
        return "[" + " ".join(go_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{go_value(x)}" for k, x in sorted(v.items())) + "]"
    return str(v)


_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r",
               "\a": "\\a", "\b": "\\b", "\f": "\\f", "\v": "\\v"}


def go_quote(s: str) -> str:
    """Go's %q of a string (strconv.Quote)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        elif o >= 0x80 and not ch.isprintable():
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
