"""An SVG bar chart of transformers_bench.py's serving results (no plotting
library needed): median and P99 inter-token latency, median TTFT and
throughput per workload, FlashIR's paged attention next to paged|sdpa.

    python3 bench/gpu/plot_serving.py RESULTS.json OUT.svg
"""
import json
import sys

METRICS = [("itl_median_ms", "ITL median (ms)"), ("itl_p99_ms", "ITL P99 (ms)"),
           ("ttft_median_ms", "TTFT median (ms)"), ("throughput_tok_s", "throughput (tok/s)")]
COLORS = {"paged|sdpa": "#9e9e9e", "paged|fir": "#1f77b4"}


def panel(x0, y0, w, h, title, values):
    """One metric: a bar per (workload, implementation)."""
    top = max(v for _, _, v in values) * 1.15
    out = [f'<text x="{x0 + w / 2}" y="{y0 - 8}" text-anchor="middle" font-size="13">'
           f'{title}</text>',
           f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + w}" y2="{y0 + h}" stroke="black"/>']
    slot = w / len(values)
    for i, (workload, impl, v) in enumerate(values):
        bh = h * v / top
        x = x0 + i * slot + slot * 0.15
        out.append(f'<rect x="{x:.1f}" y="{y0 + h - bh:.1f}" width="{slot * 0.7:.1f}" '
                   f'height="{bh:.1f}" fill="{COLORS[impl]}"/>')
        out.append(f'<text x="{x + slot * 0.35:.1f}" y="{y0 + h - bh - 3:.1f}" '
                   f'text-anchor="middle" font-size="10">{v:.0f}</text>')
        if i % 2 == 0:
            out.append(f'<text x="{x0 + (i + 1) * slot:.1f}" y="{y0 + h + 14}" '
                       f'text-anchor="middle" font-size="10">{workload}</text>')
    return out


def main():
    results = json.load(open(sys.argv[1]))
    serving = results["serving"]
    workloads = [k for k in serving if isinstance(serving[k], dict) and "trace" in serving[k]]
    parts = []
    for m, (key, title) in enumerate(METRICS):
        values = [(wl, impl, serving[wl][impl][key]) for wl in workloads
                  for impl in ("paged|sdpa", "paged|fir")]
        parts += panel(40 + (m % 2) * 330, 60 + (m // 2) * 200, 280, 140, title, values)
    legend = [f'<rect x="{40 + i * 160}" y="440" width="12" height="12" fill="{c}"/>'
              f'<text x="{56 + i * 160}" y="451" font-size="11">{name}</text>'
              for i, (name, c) in enumerate(COLORS.items())]
    head = (f'<text x="350" y="24" text-anchor="middle" font-size="14">transformers '
            f'{results["transformers"]} generate_batch, Llama-3-8B shape '
            f'({serving["layers"]} layers), {results["device"]}, {results["date"]}</text>')
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="700" height="470" '
           'font-family="sans-serif">', '<rect width="100%" height="100%" fill="white"/>',
           head] + parts + legend + ["</svg>"]
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
