"""FlashIR attention under transformers' tensor parallelism (issue 26):
one process per GPU (torchrun), the model loaded with tp_plan="auto", each
rank planning and running its own query and KV heads through
flashir.integrations.transformers; next to transformers' "sdpa" at the
same TP. Random weights (no hub): a Llama-3-8B-shaped model with fewer
layers and a smaller vocabulary, saved once to --model-dir.

Run mode (under torchrun; every rank runs it):
  greedy generate() of --new tokens over a fixed batch of ragged prompts per
  attention implementation, plus the logits along TP=1's tokens (teacher
  forcing) when --work holds TP=1's run; decode step time (generate() of 33
  tokens minus 1, over 32) and each rank's attention GPU time
  (torch.profiler, kernels by name) over 9 steps; generate_batch ("paged|")
  tokens where transformers' continuous batching runs under TP. Rank 0
  writes --work/tp<N>_<impl>.pt and --out/tp<N>.json.

Compare mode (no torchrun): --compare reads --work's runs and writes
--out/tp_compare.json: tokens at each TP vs TP=1 per implementation (where
they differ: the reference's top-2 margin and the teacher-forced logit
deviation, bf16 ties) and FlashIR vs sdpa at each TP.

    torchrun --nproc_per_node=N bench/gpu/tp_bench.py --out OUT --work WORK
    python3 bench/gpu/tp_bench.py --compare --out OUT --work WORK
(bench/gpu/tp_check.sh runs both with NVLink multicast off.)
"""
import argparse
import glob
import json
import os
import sys
import time

# NVLink multicast stays off in every process (before NCCL starts).
for _key in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
    os.environ.setdefault(_key, "0" if _key == "NCCL_NVLS_ENABLE" else "1")

import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import transformers_bench as tb  # noqa: E402
from transformers_bench import fir  # noqa: E402

IMPLS = ("sdpa", fir.NAME)
LENGTHS = [17, 200, 64, 333, 5, 128, 97, 40]


def world():
    return (int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0)),
            int(os.environ.get("LOCAL_RANK", 0)))


def model_dir(args, rank, dist):
    """The random-weight model's folder, written once by rank 0."""
    from transformers import LlamaForCausalLM
    path = args.model_dir or (f"/tmp/flashir-tp-llama-L{args.layers}-V{args.vocab}"
                              f"-KV{args.kv_heads}")
    if rank == 0 and not os.path.exists(os.path.join(path, "config.json")):
        _, config = tb.llama(args.layers)
        config.vocab_size = args.vocab
        config.num_key_value_heads = args.kv_heads
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
        model.save_pretrained(path)
        del model
        torch.cuda.empty_cache()
    if dist.is_initialized():
        dist.barrier()
    return path


def load(path, report, size):
    """The model under tp_plan="auto" on two or more ranks (a failure is
    recorded in `report`); TP = 1 is the model on one device, no tensor
    parallelism (tp_plan at world size 1 hands attention DTensors)."""
    from transformers import LlamaForCausalLM
    kw = dict(dtype=torch.bfloat16, attn_implementation="sdpa")
    if size > 1:
        try:
            model = LlamaForCausalLM.from_pretrained(path, tp_plan="auto", **kw)
            report["tp_plan"] = "auto"
            report["tp_size"] = getattr(model, "tp_size", None) or getattr(model, "_tp_size",
                                                                           None)
            return model.eval()
        except Exception as e:  # noqa: BLE001 - recorded
            report["tp_plan_error"] = f"{type(e).__name__}: {e}"[:500]
    report["tp_plan"] = None
    return LlamaForCausalLM.from_pretrained(path, device_map="cuda", **kw).eval()


def local_heads(model):
    """Rank 0's q/k projection output widths (a sharded weight is a DTensor
    whose shape is the global one: its local shard's)."""
    attn = model.model.layers[0].self_attn

    def rows(proj):
        w = getattr(proj, "weight", None)
        if w is None:
            return None
        return (w.to_local() if hasattr(w, "to_local") else w).shape[0]
    return {"q_proj_out": rows(attn.q_proj), "k_proj_out": rows(attn.k_proj)}


def step_ms(model, impl, batch):
    tb.generate(model, impl, batch, 4, logits=False)  # warm-up (JIT, allocator)
    times = {}
    for n in (1, 33):
        torch.cuda.synchronize()
        start = time.perf_counter()
        tb.generate(model, impl, batch, n, logits=False)
        torch.cuda.synchronize()
        times[n] = time.perf_counter() - start
    return (times[33] - times[1]) / 32 * 1e3


def run(args):
    import torch.distributed as dist
    size, rank, local = world()
    torch.cuda.set_device(local)
    if "RANK" in os.environ:
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    fir.register()
    path = model_dir(args, rank, dist)
    report = {}
    model = load(path, report, size)
    batch = tb.prompts(1, LENGTHS, args.vocab)
    report.update({"tp": size, "device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
              "command": " ".join(sys.argv), "layers": args.layers, "vocab": args.vocab,
              "kv_heads": args.kv_heads,
              "prompts": LENGTHS, "new": args.new, "local_heads_rank0": local_heads(model),
              "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE",
                                                      "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                      "NVSHMEM_DISABLE_NVLS")}})
    for impl in IMPLS:
        tokens, logits = tb.generate(model, impl, batch, args.new)
        ref_path = os.path.join(args.work, f"tp1_{impl}.pt")
        forced = None
        if size > 1 and os.path.exists(ref_path):
            ref = torch.load(ref_path)
            _, forced = tb.generate(model, impl, batch, args.new, force=ref["tokens"])
        row = {"step_ms": step_ms(model, impl, batch)}
        prof = tb.profiled(lambda: tb.generate(model, impl, batch, 9, logits=False))
        mine = {"attention_ms_9_steps": prof["attention_ms"], "gpu_ms_9_steps": prof["gpu_ms"],
                "top": prof["top"]}
        ranks = [None] * size
        if dist.is_initialized():
            dist.all_gather_object(ranks, mine)
        else:
            ranks = [mine]
        row["per_rank"] = ranks
        try:
            paged, _ = tb.generate_batch(model, "paged|" + impl, batch, args.new)
            row["paged_tokens_equal_generate"] = [a == b for a, b in zip(paged, tokens)]
        except Exception as e:  # noqa: BLE001 - recorded: continuous batching under TP
            paged, row["paged_error"] = None, f"{type(e).__name__}: {e}"[:500]
        report[impl] = row
        if rank == 0:
            torch.save({"tokens": tokens, "logits": logits.half().cpu(), "paged": paged,
                        "forced": None if forced is None else forced.half().cpu()},
                       os.path.join(args.work, f"tp{size}_{impl}.pt"))
            print(f"tp{size} {impl}", json.dumps({k: v for k, v in row.items()
                                                   if k != "per_rank"}), flush=True)
    if rank == 0:
        with open(os.path.join(args.out, f"tp{size}.json"), "w") as f:
            json.dump(report, f, indent=1)
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def compare(args):
    runs = {}
    for path in glob.glob(os.path.join(args.work, "tp*_*.pt")):
        name = os.path.basename(path)[:-3]
        tp, impl = name.split("_", 1)
        runs[(int(tp[2:]), impl)] = torch.load(path)
    out = {}
    for (tp, impl), got in sorted(runs.items()):
        ref = runs.get((1, impl))
        row = {}
        if ref is not None and tp > 1:
            row["vs_tp1"] = tb.compare(ref["tokens"], ref["logits"].float(), got["tokens"])
            if got["forced"] is not None:
                dev = (got["forced"].float() - ref["logits"].float()).abs()
                row["vs_tp1"]["teacher_forced_max_logit_dev"] = float(dev.max())
                row["vs_tp1"]["teacher_forced_mean_logit_dev"] = float(dev.mean())
                row["vs_tp1"]["logit_scale"] = float(ref["logits"].float().abs().max())
            if got["paged"] is not None and ref["paged"] is not None:
                row["paged_vs_tp1"] = tb.compare(ref["paged"], ref["logits"].float(),
                                                 got["paged"])
        sdpa = runs.get((tp, "sdpa"))
        if impl != "sdpa" and sdpa is not None:
            row["vs_sdpa_same_tp"] = tb.compare(sdpa["tokens"], sdpa["logits"].float(),
                                                got["tokens"], got["logits"].float())
        if not args.rows:
            for v in row.values():
                v.pop("rows", None)
        out[f"tp{tp}_{impl}"] = row
        print(f"tp{tp} {impl}", json.dumps(row), flush=True)
    with open(os.path.join(args.out, "tp_compare.json"), "w") as f:
        json.dump(out, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--work", default="/tmp/flashir-tp-work")
    ap.add_argument("--model-dir", default=None)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--kv-heads", type=int, default=8,
                    help="KV heads (fewer than the TP size: replicated per rank)")
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--rows", action="store_true", help="keep per-request rows in compare")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.compare:
        compare(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
