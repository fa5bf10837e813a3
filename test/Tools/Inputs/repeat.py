"""Runs a command many times and summarises how the runs ended, so an
intermittent hang or crash shows: `repeat.py N TIMEOUT -- cmd args...`
prints `N runs: <exit status> x <count> ..., H timed out, S killed by a
signal`."""
import collections
import subprocess
import sys

times, timeout = int(sys.argv[1]), float(sys.argv[2])
cmd = sys.argv[sys.argv.index("--") + 1:]
statuses = collections.Counter()
hangs = signals = 0
for _ in range(times):
    try:
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        hangs += 1
        continue
    if rc < 0:
        signals += 1
    else:
        statuses[rc] += 1
ends = ", ".join(f"status {rc} x {n}" for rc, n in sorted(statuses.items()))
print(f"{times} runs: {ends}; {hangs} timed out, {signals} killed by a signal")
