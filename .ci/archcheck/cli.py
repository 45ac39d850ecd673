"""The command line of `.ci/check-architecture`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .graph import check, print_graph


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Check src/'s module graph against ARCHITECTURE.md.")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent.parent, help="tree to check")
    ap.add_argument("--print", action="store_true", dest="print_graph", help="print the actual graph: modules, test-modules, crate uses")
    ap.add_argument("--self-test", action="store_true", help="run the script's own tests")
    args = ap.parse_args(argv)
    if args.self_test:
        from .selftest import self_test

        return self_test()
    if not (args.root / "src").is_dir():
        print(f"check-architecture: no src/ in {args.root}", file=sys.stderr)
        return 2
    if args.print_graph:
        print_graph(args.root)
        return 0
    problems = check(args.root)
    if problems:
        print(f"check-architecture: {len(problems)} problem(s) (ARCHITECTURE.md vs src/):", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        print("  (`.ci/check-architecture --print` prints the actual graph as ```modules and ```test-modules blocks)", file=sys.stderr)
        return 1
    print("check-architecture: the module graph is acyclic, layered and as ARCHITECTURE.md draws it")
    return 0
