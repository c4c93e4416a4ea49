#!/usr/bin/env python3
"""Inputs for the measurements in docs/limits.md: each written to standard output.

    limits_inputs.py docs-stream BYTES     JSON Lines documents, BYTES in all (streamed)
    limits_inputs.py plus-plan N           a plan of one ctx and N `d += xK` lines
    limits_inputs.py ctx-chain N           a plan of N ctxs, each including the one before
    limits_inputs.py candidates N          N `ctxpack select` candidates (a JSON array)

Everything is deterministic: the same arguments give the same bytes.
"""

import json
import sys


def docs_stream(total: int) -> None:
    """Documents of about 1 KiB each until `total` bytes are written, without holding them."""
    out = sys.stdout.buffer
    body = "lorem ipsum dolor sit amet " * 36
    written = 0
    n = 0
    while written < total:
        line = json.dumps({"_id": f"d{n}", "title": f"document {n}", "body": body}) + "\n"
        data = line.encode()
        out.write(data)
        written += len(data)
        n += 1
    out.flush()


def plus_plan(n: int) -> None:
    """One ctx, then `n` versions, each adding one new text member."""
    lines = ["flow chain"]
    lines += [f'  x{k} = text("member {k}")' for k in range(n + 1)]
    lines += ["  ctx d", '    purpose "a long += chain"', "    budget 1000", "    include x0"]
    lines += [f"  d += x{k}" for k in range(1, n + 1)]
    lines += ["  emit d"]
    print("\n".join(lines))


def ctx_chain(n: int) -> None:
    """`c0` holds a text; each `cK` includes `c(K-1)`: a chain `n` ctxs deep."""
    lines = ["flow deep", '  x = text("the evidence")']
    lines += ["  ctx c0", '    purpose "level 0"', "    budget 1000", "    include x"]
    for k in range(1, n):
        lines += [f"  ctx c{k}", f'    purpose "level {k}"', "    budget 1000", f"    include c{k - 1}"]
    lines += [f"  emit c{n - 1}"]
    print("\n".join(lines))


def candidates(n: int) -> None:
    """`n` candidates over 50 families with varied lengths and overlapping words."""
    words = [f"w{k}" for k in range(400)]
    items = []
    for k in range(n):
        text = " ".join(words[(k * 7 + j * 13) % len(words)] for j in range(5 + k % 40))
        items.append(
            {"id": f"src/f{k % 50}.rs#L{k}-L{k + 9}", "text": text, "family": f"f{k % 50}"}
        )
    json.dump(items, sys.stdout)
    sys.stdout.write("\n")


def main() -> None:
    commands = {
        "docs-stream": docs_stream,
        "plus-plan": plus_plan,
        "ctx-chain": ctx_chain,
        "candidates": candidates,
    }
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](int(sys.argv[2]))


if __name__ == "__main__":
    main()
