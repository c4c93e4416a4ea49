#!/usr/bin/env python3
"""Reference token counts for the ctxpack-meter test corpus, computed with OpenAI's `tiktoken`.

Writes crates/ctxpack-meter/tests/corpus/expected.json: a JSON object (sorted keys) mapping
each corpus file name to {"bytes": B, "chars": C, "cl100k": N, "o200k": N}, where
  N = len(enc.encode(text, disallowed_special=()))  (special-token look-alikes are plain text),
  text = the file's exact content decoded as UTF-8 (no newline translation, CRLF preserved),
  C = number of Unicode code points, B = UTF-8 byte length.
Every regular file in the corpus directory is counted except `expected.json` and dot-files.

Generated with tiktoken==0.14.0 (Python 3.11). The Rust side (bpe-openai 0.3.2) must match exactly.

Setup (offline: only PyPI is needed; tiktoken's vocabulary download is replaced by a local cache)
-----------------------------------------------------------------------------------------------
    python3 -m venv /work/tiktoken-venv
    /work/tiktoken-venv/bin/pip install tiktoken==0.14.0

tiktoken caches downloads in $TIKTOKEN_CACHE_DIR under the name sha1(url).hexdigest() and checks
the sha256 of the content (see read_file_cached in tiktoken/load.py; URLs and hashes are in
tiktoken_ext/openai_public.py). The same vocabularies ship gzipped in the bpe-openai crate, so:

    mkdir -p /work/tiktoken-cache && cd /work/tiktoken-cache
    for n in cl100k_base o200k_base; do
      url="https://openaipublic.blob.core.windows.net/encodings/$n.tiktoken"
      key=$(printf %s "$url" | sha1sum | cut -d' ' -f1)
      gunzip -c ~/.cargo/registry/src/*/bpe-openai-0.3.2/data/$n.tiktoken.gz > "$key"
    done
    # cl100k_base -> 9b5ad71b2ce5302211f9c61530b329a4922fc6a4 (sha256 223921b7...)
    # o200k_base  -> fb374d419588a4632f3f557e76b4b70aebbca790 (sha256 446a9538...)

If a cached file's sha256 does not match, tiktoken deletes it and tries the network (which fails
offline), so a successful run proves the vocabularies are the authentic ones.

Run (from the repository root)
------------------------------
    TIKTOKEN_CACHE_DIR=/work/tiktoken-cache /work/tiktoken-venv/bin/python scripts/tiktoken_counts.py
        [--write-long]   first regenerate long_mixed.txt from the other samples (deterministic)
        [--check]        do not write; exit 1 if expected.json is out of date

Output is deterministic: same corpus + same tiktoken version => byte-identical expected.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import tiktoken

TIKTOKEN_VERSION = "0.14.0"
CORPUS = Path(__file__).resolve().parent.parent / "crates" / "ctxpack-meter" / "tests" / "corpus"
EXPECTED = "expected.json"
LONG = "long_mixed.txt"
LONG_TARGET_BYTES = 200_000
ENCODINGS = {"cl100k": "cl100k_base", "o200k": "o200k_base"}


def corpus_files() -> list[Path]:
    return sorted(
        (p for p in CORPUS.iterdir() if p.is_file() and p.name != EXPECTED and not p.name.startswith(".")),
        key=lambda p: p.name,
    )


def read_text(path: Path) -> str:
    # newline="" disables universal-newline translation: \r\n and lone \r are kept verbatim.
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


class XorShift64:
    """Tiny fixed PRNG, so the long file does not depend on Python's `random` implementation."""

    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF or 1

    def next(self) -> int:
        x = self.state
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        self.state = x
        return x

    def below(self, n: int) -> int:
        return self.next() % n


SYLLABLES = ["ka", "to", "ri", "men", "sa", "lo", "qu", "ex", "zan", "tri", "ol", "ph", "ing", "ст", "ав", "の", "한", "é"]
SEPARATORS = [" ", " ", " ", "  ", "\t", ", ", ". ", "\n", "\r\n", " - ", "_", "/", "'s ", "'LL "]


def make_long(sources: list[Path]) -> str:
    """Mixes runs of lines from the other samples with synthetic words, numbers and whitespace."""
    lines: list[str] = []
    for p in sources:
        lines.extend(read_text(p).splitlines(keepends=True))
    rng = XorShift64(0x00C7C9AC)
    out: list[str] = []
    size = 0
    while size < LONG_TARGET_BYTES:
        kind = rng.below(10)
        if kind < 6:  # a run of consecutive lines from one of the samples
            start = rng.below(len(lines))
            chunk = "".join(lines[start : start + 1 + rng.below(25)])
        elif kind < 8:  # synthetic words glued with assorted separators
            parts = []
            for _ in range(5 + rng.below(40)):
                parts.append("".join(SYLLABLES[rng.below(len(SYLLABLES))] for _ in range(1 + rng.below(4))))
                parts.append(SEPARATORS[rng.below(len(SEPARATORS))])
            chunk = "".join(parts) + "\n"
        elif kind < 9:  # long digit strings and numbers
            chunk = " ".join(str(rng.next() % 10 ** (1 + rng.below(19))) for _ in range(1 + rng.below(12))) + "\n"
        else:  # whitespace runs
            chunk = " " * rng.below(70) + "\t" * rng.below(4) + "\n" * (1 + rng.below(6))
        out.append(chunk)
        size += len(chunk.encode("utf-8"))
    return "".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-long", action="store_true", help=f"regenerate {LONG} first")
    ap.add_argument("--check", action="store_true", help="verify expected.json instead of writing it")
    args = ap.parse_args()

    if tiktoken.__version__ != TIKTOKEN_VERSION:
        print(f"warning: tiktoken {tiktoken.__version__} != pinned {TIKTOKEN_VERSION}", file=sys.stderr)
    encs = {key: tiktoken.get_encoding(name) for key, name in ENCODINGS.items()}
    assert encs["cl100k"].encode("hello world") == [15339, 1917], "unexpected cl100k_base vocabulary"

    if args.write_long:
        text = make_long([p for p in corpus_files() if p.name != LONG])
        with open(CORPUS / LONG, "w", encoding="utf-8", newline="") as f:
            f.write(text)

    expected: dict[str, dict[str, int]] = {}
    for path in corpus_files():
        raw = path.read_bytes()
        text = read_text(path)
        assert text.encode("utf-8") == raw, f"{path.name}: not round-trippable UTF-8"
        entry = {"bytes": len(raw), "chars": len(text)}
        for key, enc in encs.items():
            entry[key] = len(enc.encode(text, disallowed_special=()))
        expected[path.name] = entry

    rendered = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    target = CORPUS / EXPECTED
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != rendered:
            print(f"{target} is out of date", file=sys.stderr)
            return 1
        return 0
    with open(target, "w", encoding="utf-8", newline="\n") as f:
        f.write(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
