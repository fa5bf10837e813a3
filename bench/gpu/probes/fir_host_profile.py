"""Probe: where the dense "fir" transformers path spends host time per
decode step (cProfile over generate(), FlashIR's Python functions and the
C calls), next to sdpa's step time. Llama-3-8B shape, 4 layers, vocabulary
32000, random weights, 8 ragged prompts (tp_bench.py's).

    python3 bench/gpu/probes/fir_host_profile.py OUT.json
"""
import cProfile
import json
import os
import pstats
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import transformers_bench as tb  # noqa: E402
from tp_bench import LENGTHS  # noqa: E402
from transformers_bench import fir  # noqa: E402


def main():
    fir.register()
    cls, config = tb.llama(4)
    config.vocab_size = 32000
    model = tb.build((cls, config), "sdpa")
    batch = tb.prompts(1, LENGTHS, 32000)
    out = {}
    for impl in ("sdpa", fir.NAME):
        tb.generate(model, impl, batch, 4, logits=False)
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        start = time.perf_counter()
        prof.enable()
        tb.generate(model, impl, batch, 33, logits=False)
        torch.cuda.synchronize()
        prof.disable()
        wall = (time.perf_counter() - start) * 1e3
        stats = pstats.Stats(prof)
        rows = []
        for (file, line, name), (cc, nc, tt, ct, _) in stats.stats.items():
            rows.append({"function": f"{os.path.basename(file)}:{line}:{name}", "calls": nc,
                         "tottime_ms": tt * 1e3, "cumtime_ms": ct * 1e3})
        rows.sort(key=lambda r: -r["tottime_ms"])
        ours = sorted((r for r in rows if "flashir" in r["function"] or "_wrapper" in
                       r["function"] or "runner" in r["function"] or "transformers.py" in
                       r["function"]), key=lambda r: -r["cumtime_ms"])
        out[impl] = {"wall_ms_33_tokens": wall, "top_tottime": rows[:25], "flashir_cumtime": ours[:25]}
        print(impl, round(wall, 1), "ms", flush=True)
        for r in rows[:15]:
            print(f"  {r['tottime_ms']:8.1f} {r['cumtime_ms']:8.1f} {r['calls']:6d} {r['function']}")
    json.dump(out, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
