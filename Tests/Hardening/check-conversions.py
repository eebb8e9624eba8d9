#!/usr/bin/env python3
"""Fails on a trapping integer conversion in Sources/ that nobody has reviewed.

`Int(x)` (and Int8…Int64, UInt…) traps when x is a Double or Float that is nan, infinite or out
of range, and ends the process for every user. Numbers from clients are converted with
`Int(exactly:)`, range checks or `clamping:`; every other unlabelled conversion must be listed in
Tests/Hardening/reviewed-conversions.txt as `path | line` with a comment saying why it cannot trap
(a String parse answers nil; a value the server made itself; a bounded configuration value).

    python3 Tests/Hardening/check-conversions.py            # check (make test runs this)
    python3 Tests/Hardening/check-conversions.py --list     # print every conversion, to review
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
REVIEWED = ROOT / "Tests/Hardening/reviewed-conversions.txt"
CALL = re.compile(r"(?<![\w.])U?Int(8|16|32|64)?\((?!\s*(exactly|truncatingIfNeeded|clamping|bitPattern|littleEndian|bigEndian|ascii)\s*:)(?!\))")


def conversions():
    for path in sorted((ROOT / "Sources").rglob("*.swift")):
        relative = path.relative_to(ROOT).as_posix()
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.split("//")[0]
            if CALL.search(code):
                yield relative, line.strip()


def reviewed():
    entries = set()
    for raw in REVIEWED.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        path, _, line = raw.partition(" | ")
        entries.add((path.strip(), line.split("   # ")[0].strip()))
    return entries


def main():
    found = list(conversions())
    if "--list" in sys.argv:
        for path, line in found:
            print(f"{path} | {line}")
        return 0
    known = reviewed()
    new = [(path, line) for path, line in found if (path, line) not in known]
    stale = sorted(known - set(found))
    if stale:
        print("Reviewed conversions that are no longer in Sources/ (remove them, or re-review the changed line):")
        for path, line in stale:
            print(f"  {path} | {line}")
    if new:
        print("Unreviewed integer conversions (traps on nan, ±inf or out-of-range values):")
        for path, line in new:
            print(f"  {path} | {line}")
        print("Use Int(exactly:), a range check or clamping: for a client's number; if it cannot trap,")
        print("add the line to Tests/Hardening/reviewed-conversions.txt with the reason.")
        return 1
    if stale:
        return 1
    print(f"integer conversions: {len(found)} in Sources/, all reviewed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
