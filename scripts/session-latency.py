#!/usr/bin/env python3
"""Latency of single-fact transactions fed through `dynalog session`.

Starts `dynalog session PROGRAM -F DIR [extra args]`, waits for the summary of
transaction 0 (the load), then sends one transaction at a time: a fact line and
`commit`, and measures the wall time from writing the `commit` line to reading the
transaction's summary line (its changes are printed before the summary). Odd
transactions insert the fact, even ones delete it again, so every transaction changes
the materialization the same way.

    scripts/session-latency.py BIN programs/tc.dl DIR 'edge(2000, 1)' 50 -- -w 2

prints the median, min and max in milliseconds of the inserts and of the deletes.
"""

import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    binary, program, facts, fact, count = sys.argv[1:6]
    extra = sys.argv[7:] if len(sys.argv) > 6 and sys.argv[6] == "--" else []
    proc = subprocess.Popen(
        [binary, "session", program, "-F", facts, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )

    def summary():
        changes = 0
        while True:
            line = proc.stdout.readline()
            if not line:
                sys.exit("session ended early")
            if line.startswith("commit "):
                return line.strip(), changes
            if line.startswith(("+ ", "- ")):
                changes += 1

    print(summary()[0], file=sys.stderr)
    inserts, deletes = [], []
    for i in range(int(count)):
        sign = "+" if i % 2 == 0 else "-"
        proc.stdin.write(f"{sign} {fact}.\n")
        proc.stdin.flush()
        start = time.perf_counter()
        proc.stdin.write("commit\n")
        proc.stdin.flush()
        line, changes = summary()
        elapsed = (time.perf_counter() - start) * 1000
        (inserts if sign == "+" else deletes).append(elapsed)
        if i < 2:
            print(f"{line} ({changes} change lines)", file=sys.stderr)
    proc.stdin.write("quit\n")
    proc.stdin.close()
    proc.wait()
    for name, times in (("insert", inserts), ("delete", deletes)):
        print(
            f"{name}: median {statistics.median(times):.2f} ms, "
            f"min {min(times):.2f}, max {max(times):.2f} ({len(times)} transactions)"
        )


if __name__ == "__main__":
    main()
