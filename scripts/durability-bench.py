#!/usr/bin/env python3
"""Commits per second of single-fact transactions through `dynalog session`, with and
without `--data-dir` (every commit appended to the write-ahead log and fsynced before
its summary line is printed).

    scripts/durability-bench.py BIN [COMMITS] [RUNS] [DATA_PARENT] [-- extra session args]

For each configuration and run: a fresh folder with `programs/tc.dl` and an empty
`edge.facts`, a session started with `--quiet`, then COMMITS transactions
`+ edge(2i, 2i+1).` / `commit` written without waiting (so the figure is the
throughput of the session, not the round trip of a pipe), timed from the first write
to the last summary line. Prints one line per configuration: the median, min and max
commits per second over RUNS runs. The data folders go under DATA_PARENT (default: a
temporary folder under /tmp), so the disk measured is that folder's.

Then the same over HTTP: `dynalog serve` on loopback, COMMITS sequential
`POST /transactions` of one fact each on one keep-alive connection, timed from the
first request to the last answer (an answer is sent after the commit is logged).
"""

import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(binary, commits, parent, extra):
    work = tempfile.mkdtemp(dir=parent)
    try:
        shutil.copy(os.path.join(ROOT, "programs", "tc.dl"), os.path.join(work, "tc.dl"))
        open(os.path.join(work, "edge.facts"), "w").close()
        args = [binary, "session", "tc.dl", "-F", ".", "--quiet", *extra]
        proc = subprocess.Popen(
            args, cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        first = proc.stdout.readline()
        if not first.startswith("commit "):
            sys.exit(f"unexpected first line {first!r}")
        text = "".join(f"+ edge({2 * i}, {2 * i + 1}).\ncommit\n" for i in range(commits))
        start = time.perf_counter()
        proc.stdin.write(text)
        proc.stdin.flush()
        seen = 0
        while seen < commits:
            line = proc.stdout.readline()
            if not line:
                sys.exit("the session ended early")
            if line.startswith("commit "):
                seen += 1
        elapsed = time.perf_counter() - start
        proc.stdin.write("quit\n")
        proc.stdin.close()
        proc.wait()
        return commits / elapsed
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_serve(binary, commits, parent, extra):
    work = tempfile.mkdtemp(dir=parent)
    try:
        shutil.copy(os.path.join(ROOT, "programs", "tc.dl"), os.path.join(work, "tc.dl"))
        open(os.path.join(work, "edge.facts"), "w").close()
        args = [binary, "serve", "tc.dl", "-F", ".", "--listen", "127.0.0.1:0", *extra]
        proc = subprocess.Popen(args, cwd=work, stdout=subprocess.PIPE, text=True)
        try:
            first = proc.stdout.readline().strip()
            host, port = first.split("http://")[1].rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port))
            start = time.perf_counter()
            for i in range(commits):
                conn.request("POST", "/transactions", body=f"+ edge({2 * i}, {2 * i + 1}).")
                answer = conn.getresponse()
                answer.read()
                if answer.status != 200:
                    sys.exit(f"transaction {i} refused: {answer.status}")
            return commits / (time.perf_counter() - start)
        finally:
            proc.terminate()
            proc.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    if not argv:
        sys.exit(__doc__)
    binary = os.path.abspath(argv[0])
    commits = int(argv[1]) if len(argv) > 1 else 2000
    runs = int(argv[2]) if len(argv) > 2 else 5
    parent = argv[3] if len(argv) > 3 else None
    configs = [
        ("no --data-dir", []),
        ("--data-dir (fsync per commit)", ["--data-dir", "data"]),
    ]
    for command, measure in [("session", run), ("serve", run_serve)]:
        for name, args in configs:
            rates = [measure(binary, commits, parent, [*args, *extra]) for _ in range(runs)]
            print(
                f"{command:8}{name:32} {statistics.median(rates):8.0f} commits/s median "
                f"(min {min(rates):.0f}, max {max(rates):.0f}; {runs} runs of {commits} "
                f"commits; args {' '.join(extra) or '(default)'})"
            )

if __name__ == "__main__":
    main()
