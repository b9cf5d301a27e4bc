"""Reads the course file (course.toml): the part of TOML it needs, with
Python 3.8's standard library (tomllib arrived in 3.11, and students'
machines may be older). One reader everywhere, so that a course file means
the same on the staff's machine, in a platform's image and on a student's
laptop; a file outside this part of TOML is refused, never half read.

Taken: comments; [table] headers (bare names, once each); `key = value`
lines whose value is a string ("..." or '...'), an integer, a float,
true or false, or an array of those (on one line or several). Refused:
everything else (inline tables, dotted keys, dates, multi-line strings),
each with its line number. staff/tests/test_course.py checks that tomllib,
where there is one, reads the kit's course files the same.
"""
import re
from typing import Any, Dict, List, Tuple

BARE = r"[A-Za-z0-9_-]+"
NUMBER = re.compile(r"[+-]?(?:0|[1-9](?:_?\d)*)(\.\d(?:_?\d)*)?([eE][+-]?\d+)?")
ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


class TomlError(ValueError):
    pass


def _outside_strings(text: str):
    """(index, character) of each character of `text` outside its strings."""
    quote, i = None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        else:
            yield i, c
        i += 1


def _without_comment(line: str) -> str:
    return next((line[:i] for i, c in _outside_strings(line) if c == "#"), line)


def _open_brackets(text: str) -> int:
    return sum({"[": 1, "]": -1}.get(c, 0) for _, c in _outside_strings(text))


def _value(text: str, at: int, line: int) -> Tuple[Any, int]:
    def fail(what: str):
        raise TomlError(f"line {line}: {what}")

    while at < len(text) and text[at] in " \t":
        at += 1
    if at >= len(text):
        fail("a value is missing after '='")
    c = text[at]
    if c == '"':
        out, at = [], at + 1
        while at < len(text) and text[at] != '"':
            if text[at] == "\\":
                if at + 1 >= len(text) or text[at + 1] not in ESCAPES:
                    fail("a string holds an escape other than \\\" \\\\ \\n \\t")
                out.append(ESCAPES[text[at + 1]])
                at += 2
            else:
                out.append(text[at])
                at += 1
        if at >= len(text):
            fail("a string is not closed")
        return "".join(out), at + 1
    if c == "'":
        end = text.find("'", at + 1)
        if end < 0:
            fail("a string is not closed")
        return text[at + 1:end], end + 1
    if c == "[":
        items: List[Any] = []
        at += 1
        while True:
            while at < len(text) and text[at] in " \t":
                at += 1
            if at < len(text) and text[at] == "]":
                return items, at + 1
            item, at = _value(text, at, line)
            items.append(item)
            while at < len(text) and text[at] in " \t":
                at += 1
            if at < len(text) and text[at] == ",":
                at += 1
            elif at < len(text) and text[at] == "]":
                return items, at + 1
            else:
                fail("an array's items are separated by commas and it ends with ']'")
    if c == "{":
        fail("inline tables ({...}) are not taken here: write a [table] of its own")
    for word, value in (("true", True), ("false", False)):
        if text.startswith(word, at) and not re.match(r"[\w.-]", text[at + len(word):at + len(word) + 1]):
            return value, at + len(word)
    m = NUMBER.match(text, at)
    if m and not re.match(r"[\w.:-]", text[m.end():m.end() + 1]):
        number = m.group().replace("_", "")
        return (float(number) if m.group(1) or m.group(2) else int(number)), m.end()
    fail(f"'{text[at:].strip()}' is no value taken here (a \"string\", a number, true, false or an array)")
    raise AssertionError  # fail() raised


def loads(text: str) -> Dict[str, Any]:
    data: Dict[str, Any] = {}
    table = data
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        number, line = i + 1, _without_comment(lines[i]).strip()
        i += 1
        if not line:
            continue
        header = re.fullmatch(rf"\[\s*({BARE})\s*\]", line)
        if header:
            name = header.group(1)
            if name in data:
                raise TomlError(f"line {number}: [{name}] appears twice, or a key of that name came first")
            table = data[name] = {}
            continue
        pair = re.fullmatch(rf"({BARE})\s*=(.*)", line)
        if not pair:
            raise TomlError(f"line {number}: expected `key = value` or `[table]`, got '{line}'")
        key, value = pair.group(1), pair.group(2)
        while _open_brackets(value) > 0 and i < len(lines):  # an array over several lines
            value += " " + _without_comment(lines[i]).strip()
            i += 1
        if key in table:
            raise TomlError(f"line {number}: {key} is set twice")
        table[key], end = _value(value, 0, number)
        if value[end:].strip():
            raise TomlError(f"line {number}: '{value[end:].strip()}' follows the value of {key}")
    return data


def dumps_value(value: Any) -> str:
    """A value as this reader (and TOML) reads it back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")
