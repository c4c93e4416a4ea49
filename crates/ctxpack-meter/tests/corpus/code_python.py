"""Sample module for token counting: a small INI-ish config parser.

This file is test data and is not imported by anything.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Iterator

_SECTION = re.compile(r"^\[(?P<name>[A-Za-z0-9_.-]+)\]\s*$")
_PAIR = re.compile(r"^(?P<key>[^=#;]+?)\s*=\s*(?P<value>.*)$")


@dataclasses.dataclass(frozen=True)
class Entry:
    section: str
    key: str
    value: str
    line_no: int

    def as_bool(self) -> bool:
        v = self.value.strip().lower()
        if v in {"1", "yes", "true", "on"}:
            return True
        if v in {"0", "no", "false", "off"}:
            return False
        raise ValueError(f"{self.section}.{self.key}: not a boolean: {self.value!r}")


class ParseError(Exception):
    def __init__(self, line_no: int, message: str) -> None:
        super().__init__(f"line {line_no}: {message}")
        self.line_no = line_no


def parse(lines: Iterable[str]) -> Iterator[Entry]:
    section = "default"
    for line_no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if m := _SECTION.match(line):
            section = m["name"]
            continue
        if m := _PAIR.match(line):
            yield Entry(section, m["key"].strip(), m["value"], line_no)
            continue
        raise ParseError(line_no, f"cannot parse {raw!r}")


def to_dict(entries: Iterable[Entry]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for e in entries:
        out.setdefault(e.section, {})[e.key] = e.value
    return out


if __name__ == "__main__":
    sample = """
    # comment
    [server]
    host = 127.0.0.1
    port=8080
    debug = yes

    [paths]
    root = /var/lib/example
    """
    cfg = to_dict(parse(sample.splitlines()))
    assert cfg["server"]["port"] == "8080", cfg
    print(sorted(cfg), len(cfg["paths"]), 0x1F, 1e-9, 3.14_15j, b"\x00\xff")
    lam = lambda *args, **kw: (args, kw)  # noqa: E731
    print(lam(1, 2, k=[i ** 2 for i in range(10) if i % 3 != 0]))
