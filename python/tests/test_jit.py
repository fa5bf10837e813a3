"""The JIT's host side without a GPU (CI): attn IR of every standard variant
and a user variant compiled by flashir-bundle, the manifest's kernels and
argument roles, the on-disk cache (hits, keys, concurrent processes),
compiler errors and chip selection.

    FLASHIR_COMPILER=build/bin/flashir-bundle python3 python/tests/test_jit.py
"""
import json
import math
import multiprocessing
import os
import re
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from flashir import ir, jit, options  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rope_variant():
    """The RoPE variant of the GPU lit tests (query and key hooks, three
    parameters)."""
    with open(os.path.join(ROOT, "test", "Conversion", "AttnToGPU", "variant-hooks.mlir")) as f:
        text = f.read()
    return re.search(r"^attn\.variant @rope .*?^}\n", text, re.S | re.M).group(0)


def has_libdevice():
    """Whether flashir-bundle finds a CUDA toolkit's libdevice (next to
    ptxas, in $CUDA_HOME or /usr/local/cuda): it compiles nothing without."""
    import shutil
    homes = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    ptxas = shutil.which("ptxas")
    if ptxas:
        homes.insert(0, os.path.dirname(os.path.dirname(ptxas)))
    return any(h and os.path.isdir(os.path.join(h, "nvvm", "libdevice")) for h in homes)


def manifest(folder):
    with open(os.path.join(folder, "manifest.json")) as f:
        return json.load(f)


def compile_in(args):
    program, cache = args
    return jit.compile_bundle(program, "sm_80", cache=cache)


class IRTest(unittest.TestCase):
    def test_user_variant_params(self):
        name, params = ir.variant_params(rope_variant())
        self.assertEqual(name, "rope")
        self.assertEqual([(p.name, p.type, p.kind) for p in params],
                         [("log2_theta", "f32", "scalar"), ("half_dim", "i32", "scalar"),
                          ("offset", "i32", "per_request")])
        self.assertEqual([p.arg_type() for p in params], ["f32", "i32", "tensor<?xi32>"])

    def test_bad_specs_name_the_argument(self):
        cases = [(dict(num_qo_heads=12, num_kv_heads=8), "num_qo_heads"),
                 (dict(head_dim=0), "head_dim"), (dict(page_size=2.0), "page_size"),
                 (dict(kv_layout="NDH"), "kv_layout"), (dict(dtype="f32"), "dtype"),
                 (dict(variant="nope"), "unknown variant"),
                 (dict(variant_ir="attn.variant oops"), "variant_ir"),
                 (dict(variant_ir="attn.variant @v reduction softmax params(x : f32 sometimes) {}"),
                  "kind one of")]
        for change, needle in cases:
            fields = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16)
            fields.update(change)
            with self.subTest(change=change):
                with self.assertRaisesRegex(ValueError, needle):
                    ir.AttentionSpec(**fields)

    def test_alibi_slopes(self):
        self.assertEqual(options.alibi_slopes(8), tuple(2.0 ** -i for i in range(1, 9)))
        twelve = options.alibi_slopes(12)
        self.assertEqual(twelve[:8], options.alibi_slopes(8))
        self.assertEqual(twelve[8:], tuple(2.0 ** (-(2 * i + 1) / 2) for i in range(4)))
        with self.assertRaisesRegex(ValueError, "num_heads"):
            options.alibi_slopes(0)

    def test_flashinfer_options(self):
        base = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16)
        spec, recipes = options.attention_options(**base)
        self.assertEqual((spec.variant, spec.dtype, recipes), ("plain", "f16", []))
        spec, recipes = options.attention_options(**base, causal=True, window_left=255,
                                                  q_data_type="bfloat16")
        self.assertEqual((spec.variant, spec.dtype), ("sliding_window", "bf16"))
        self.assertEqual(recipes, [options.ParamRecipe("window_left", "per_request", 255)])
        spec, recipes = options.attention_options(**base, logits_soft_cap=30.0,
                                                  window_left=4096, sm_scale=0.0625,
                                                  pos_encoding_mode="ALIBI")
        self.assertEqual(spec.variant, "fi_window_softcap_alibi")
        self.assertEqual(spec.sm_scale, 0.0625)
        self.assertEqual([(r.name, r.kind) for r in recipes],
                         [("cap", "scalar"), ("window_left", "per_request"),
                          ("slope", "per_head")])
        self.assertEqual(recipes[0].value, 30.0)
        self.assertEqual(recipes[2].values, options.alibi_slopes(32))
        spec, _ = options.attention_options(**base, logits_soft_cap=0.0)
        self.assertEqual(spec.variant, "plain")
        spec, _ = options.attention_options(**base, q_data_type="half", kv_data_type="float16")
        self.assertEqual(spec.dtype, "f16")
        bad = [(dict(q_data_type="float16", kv_data_type="bfloat16"), ValueError,
                "kv_data_type"),
               (dict(pos_encoding_mode="ROPE_NEOX"), ValueError, "pos_encoding_mode"),
               (dict(pos_encoding_mode="ROPE_LLAMA", rope_theta=0.0), ValueError,
                "rope_theta"),
               (dict(pos_encoding_mode="ROPE_LLAMA", rope_scale=-2), ValueError, "rope_scale"),
               (dict(custom_mask=True, causal=True), ValueError, "causal"),
               (dict(custom_mask=True, logits_soft_cap=5.0), ValueError, "logits_soft_cap"),
               (dict(window_left=3.0), TypeError, "window_left"),
               (dict(logits_soft_cap=-1.0), ValueError, "logits_soft_cap"),
               (dict(kv_layout="NDH"), ValueError, "kv_layout"),
               (dict(sm_scale=-1.0), ValueError, "sm_scale")]
        for change, error, needle in bad:
            with self.subTest(change=change):
                with self.assertRaisesRegex(error, needle):
                    options.attention_options(**base, **change)

    def test_rope_and_custom_mask_options(self):
        base = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16)
        spec, recipes = options.attention_options(**base, pos_encoding_mode="ROPE_LLAMA",
                                                  rope_theta=5e5, rope_scale=8.0)
        self.assertEqual(spec.variant, "fi_rope")
        self.assertEqual([(r.name, r.kind) for r in recipes],
                         [("log2_theta", "scalar"), ("rcp_scale", "scalar")])
        self.assertAlmostEqual(recipes[0].value, math.log2(5e5))
        self.assertEqual(recipes[1].value, 0.125)
        self.assertIn("query(", spec.variant_ir)
        self.assertIn("key(", spec.variant_ir)
        self.assertIn("arith.constant 64 : index", spec.variant_ir)  # half of 128
        spec, recipes = options.attention_options(**base, causal=True, logits_soft_cap=30.0,
                                                  pos_encoding_mode="ROPE_LLAMA")
        self.assertEqual(spec.variant, "fi_causal_softcap_rope")
        self.assertEqual([r.name for r in recipes], ["cap", "log2_theta", "rcp_scale"])
        self.assertAlmostEqual(recipes[1].value, math.log2(1e4))
        spec, recipes = options.attention_options(**base, custom_mask=True)
        self.assertEqual(spec.variant, "custom_mask")
        self.assertEqual([(r.name, r.kind) for r in recipes],
                         [("bits", "custom_mask"), ("row0", "custom_mask"),
                          ("stride", "custom_mask")])
        for bad in (0, 3, True, 64.0):
            with self.assertRaisesRegex(ValueError, "rope_dim"):
                ir.composed_variant(rope_dim=bad)

    def test_variant_options(self):
        spec, recipes = options.variant_options(32, 8, 128, 16, "NHD", "sigmoid", [-1.5])
        self.assertEqual((spec.variant, [r.kind for r in recipes]), ("sigmoid", ["given"]))
        self.assertEqual(recipes[0].value, -1.5)
        spec, recipes = options.variant_options(32, 8, 128, 16, "HND", rope_variant(),
                                                [13.3, 64, "offsets"], sm_scale=0.1,
                                                q_data_type="bfloat16")
        self.assertEqual((spec.variant, spec.dtype, spec.sm_scale), ("rope", "bf16", 0.1))
        self.assertEqual([r.name for r in recipes], ["log2_theta", "half_dim", "offset"])
        bad = [(("sigmoid", []), TypeError, "variant_params: @sigmoid takes 1"),
               ((rope_variant(), [1.0]), TypeError, "log2_theta \\(scalar\\)"),
               (("no_such", []), ValueError, "unknown variant"),
               (("", []), TypeError, "variant must be")]
        for (variant, params), error, needle in bad:
            with self.subTest(variant=variant[:20]):
                with self.assertRaisesRegex(error, needle):
                    options.variant_options(32, 8, 128, 16, "NHD", variant, params)

    def test_transformers_layer_options(self):
        """The transformers integration's plan() options of a layer (no torch
        or transformers needed: stand-ins for the module and tensors)."""
        from types import SimpleNamespace as NS
        from flashir.integrations import transformers as fir
        q = NS(shape=(2, 8, 5, 256), dtype="torch.bfloat16")
        k = NS(shape=(2, 4, 9, 256))
        local = fir._options(NS(sliding_window=4096), q, k, 0.0625, None, 50.0)
        self.assertEqual(local, dict(num_qo_heads=8, num_kv_heads=4, head_dim=256, page_size=1,
                                     window_left=4095, logits_soft_cap=50.0, sm_scale=0.0625,
                                     q_data_type="torch.bfloat16"))
        full = fir._options(NS(sliding_window=None), q, k, None, None, None)
        self.assertEqual((full["window_left"], full["logits_soft_cap"], full["sm_scale"]),
                         (-1, None, None))
        self.assertEqual(fir._options(NS(), q, k, None, 128, None)["window_left"], 127)
        self.assertNotIn("flash", fir.NAME + fir.PAGED_NAME)  # transformers' FA trigger

    def test_o_data_type(self):
        from flashir._wrapper import _check_o_data_type
        _check_o_data_type(None, "bfloat16")
        _check_o_data_type("bf16", "bfloat16")
        with self.assertRaisesRegex(ValueError, "o_data_type"):
            _check_o_data_type("float16", "bfloat16")

    def test_spec_options(self):
        split = f"--schedule={jit.SPLIT_KV_SCHEDULE}"
        ptx = ("--module-per-kernel", "--ptxas=none")
        cubin = ("--module-per-kernel", "--ptxas=/bin/true")
        saved = {k: os.environ.get(k) for k in ("FLASHIR_JIT_IMAGE", "FLASHIR_PTXAS")}
        try:
            os.environ.pop("FLASHIR_JIT_IMAGE", None)
            os.environ["FLASHIR_PTXAS"] = "/bin/true"  # a ptxas found: cubins by default
            self.assertEqual(jit.find_ptxas(), "/bin/true")
            self.assertEqual(jit.spec_options("sm_80"), (split,) + cubin)
            self.assertEqual(jit.spec_options("sm_80", image="ptx"), (split,) + ptx)
            schedule, flag, *_ = jit.spec_options("sm_90a", prefill=True, image="cubin")
            self.assertIn("attn-select-tiles{chip=sm_90a", schedule)
            self.assertEqual(flag, "--split-prefill")
            with self.assertRaisesRegex(ValueError, "split_kv"):
                jit.spec_options("sm_80", split_kv=False, prefill=True)
            self.assertEqual(jit.spec_options("sm_80", split_kv=False, image="ptx"), ptx)
            self.assertEqual(jit.spec_options("sm_80", split_kv=False), cubin)
            os.environ["FLASHIR_JIT_IMAGE"] = "ptx"
            self.assertEqual(jit.spec_options("sm_80"), (split,) + ptx)
            os.environ["FLASHIR_JIT_IMAGE"] = "sass"
            with self.assertRaisesRegex(jit.JitError, "FLASHIR_JIT_IMAGE"):
                jit.spec_options("sm_80")
            os.environ.pop("FLASHIR_JIT_IMAGE")
            os.environ["FLASHIR_PTXAS"] = "/nonexistent/ptxas"
            with self.assertRaisesRegex(jit.JitError, "FLASHIR_PTXAS"):
                jit.spec_options("sm_80")
            os.environ.pop("FLASHIR_PTXAS")
            with mock.patch.object(jit, "find_ptxas", return_value=None):
                self.assertEqual(jit.spec_options("sm_80"), (split,) + ptx)
                with self.assertRaisesRegex(jit.JitError, "needs ptxas"):
                    jit.spec_options("sm_80", image="cubin")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_chip_for_capability(self):
        self.assertEqual(jit.chip_for_capability(9, 0), ("sm_90a", "sm_90a"))
        self.assertEqual(jit.chip_for_capability(8, 0), ("sm_80", "sm_80"))
        self.assertEqual(jit.chip_for_capability(8, 7), ("sm_86", "sm_86:ptx"))
        self.assertEqual(jit.chip_for_capability(10, 0), ("sm_89", "sm_89:ptx"))
        self.assertEqual(jit.chip_for_capability(12, 0), ("sm_89", "sm_89:ptx"))
        with self.assertRaisesRegex(jit.JitError, "sm_75 or newer"):
            jit.chip_for_capability(7, 0)


@unittest.skipUnless(has_libdevice(), "no CUDA toolkit with libdevice for flashir-bundle")
class JitTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.cache = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_every_standard_variant_compiles(self):
        for variant, params in ir.STANDARD_VARIANTS.items():
            for layout in ("NHD", "HND"):
                spec = ir.AttentionSpec(16, 4, 64, 16, layout, "f16", variant)
                with self.subTest(variant=variant, layout=layout):
                    folder, info = jit.compile_spec(spec, "sm_80", cache=self.cache)
                    self.assertFalse(info["cached"])
                    m = manifest(folder)
                    kinds = sorted(k["kind"] for k in m["kernels"])
                    self.assertIn("merge", kinds)
                    split = [k for k in m["kernels"] if k["kind"] != "merge"]
                    self.assertTrue(split)
                    for k in split:
                        self.assertEqual(k["variant"], variant)
                        self.assertEqual(k["kv_layout"], layout.lower())
                        got = [(a["name"], a["param_kind"]) for a in k["args"]
                               if a["role"] == "param"]
                        self.assertEqual(got, [(p.name, p.kind) for p in params])

    def test_composed_variants_compile(self):
        import itertools
        for flags in itertools.product((False, True), repeat=5):
            causal, window, soft_cap, alibi, rope = flags
            if alibi and rope:
                with self.assertRaisesRegex(ValueError, "one position encoding"):
                    ir.composed_variant(*flags[:4], rope_dim=64)
                continue
            name, text = ir.composed_variant(*flags[:4], rope_dim=64 if rope else None)
            spec = ir.AttentionSpec(8, 2, 64, 16, variant=name, variant_ir=text)
            expected = [n for n, on in (("cap", soft_cap), ("window_left", window),
                                        ("slope", alibi), ("log2_theta", rope),
                                        ("rcp_scale", rope)) if on]
            if not text:  # a standard variant: its own parameter names
                expected = [p.name for p in ir.STANDARD_VARIANTS[name]]
            with self.subTest(flags=flags, variant=name):
                self.assertEqual([p.name for p in spec.params], expected)
                folder, _ = jit.compile_spec(spec, "sm_80", cache=self.cache)
                k = [k for k in manifest(folder)["kernels"] if k["kind"] != "merge"][0]
                self.assertEqual(k["variant"], name)
                self.assertEqual([a["name"] for a in k["args"] if a["role"] == "param"],
                                 expected)

    def test_composed_variants_run_on_cpu(self):
        """flashir-run: each composed variant JIT-run on the CPU against the
        float64 interpretation of its hooks (ragged paged batch)."""
        import itertools
        import subprocess
        run = os.path.join(os.path.dirname(jit.find_compiler()), "flashir-run")
        if not os.access(run, os.X_OK):
            self.skipTest("no flashir-run next to the compiler")
        for flags in itertools.product((False, True), repeat=5):
            if flags[3] and flags[4]:  # alibi with rope: refused (test above)
                continue
            name, text = ir.composed_variant(*flags[:4], rope_dim=64 if flags[4] else None)
            if not text:
                continue
            path = os.path.join(self.cache, name + ".mlir")
            with open(path, "w") as f:
                f.write(text)
            with self.subTest(variant=name):
                done = subprocess.run(
                    [run, f"--variants-file={path}", f"--variant={name}", "--cap=30",
                     "--qo-heads=8", "--kv-heads=2", "--head-dim=64", "--qo-lens=3,1,7",
                     "--kv-lens=40,70,9", "--page-size=16", "--dtype=f32"],
                    capture_output=True, text=True)
                self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
                self.assertIn("PASS", done.stdout + done.stderr)

    def test_flashinfer_options_compile(self):
        # Gemma-2-like: head dim 256, soft-cap 50, a 4096-key window, bf16.
        spec, recipes = options.attention_options(
            16, 8, 256, 16, "HND", window_left=4095, logits_soft_cap=50.0,
            sm_scale=256 ** -0.5, q_data_type="bfloat16")
        folder, _ = jit.compile_spec(spec, "sm_90a", cache=self.cache)
        k = [k for k in manifest(folder)["kernels"] if k["kind"] != "merge"][0]
        self.assertEqual([a["name"] for a in k["args"] if a["role"] == "param"],
                         [r.name for r in recipes])
        self.assertEqual(k["kv_layout"], "hnd")

    def test_prefill_kernels(self):
        """prefill=True: the tensor-core split-KV prefill kernel (tiles of 16+
        rows) and its merge kernel, per chip."""
        for chip, dtype in (("sm_90a", "bf16"), ("sm_80", "f16"), ("sm_75", "f16")):
            spec = ir.AttentionSpec(32, 8, 128, 16, dtype=dtype, variant="causal")
            with self.subTest(chip=chip):
                folder, _ = jit.compile_spec(spec, chip, prefill=True, cache=self.cache)
                kinds = sorted(k["kind"] for k in manifest(folder)["kernels"])
                self.assertEqual(kinds, ["merge", "prefill"])
                split = [k for k in manifest(folder)["kernels"] if k["kind"] == "prefill"][0]
                self.assertGreaterEqual(split["q_tokens"], 16)
                self.assertTrue(split["name"].startswith(spec.function_name() + "_prefill_"))

    def test_sm_scale(self):
        spec = ir.AttentionSpec(8, 2, 64, 16, sm_scale=0.05)
        self.assertIn("scale = 5.000000000e-02 : f32", ir.attention_module(spec))
        self.assertNotEqual(spec.function_name(),
                            ir.AttentionSpec(8, 2, 64, 16).function_name())
        folder, _ = jit.compile_spec(spec, "sm_80", cache=self.cache)
        self.assertTrue(manifest(folder)["kernels"])
        for bad in (0, -1.0, float("nan"), True, "0.1"):
            with self.assertRaisesRegex(ValueError, "sm_scale"):
                ir.AttentionSpec(8, 2, 64, 16, sm_scale=bad)

    def test_user_variant_compiles(self):
        spec = ir.AttentionSpec(32, 8, 128, 16, variant_ir=rope_variant())
        self.assertEqual(spec.variant, "rope")
        folder, _ = jit.compile_spec(spec, "sm_90a", cache=self.cache)
        m = manifest(folder)
        names = [a["name"] for a in m["kernels"][0]["args"] if a["role"] == "param"]
        self.assertEqual(names, ["log2_theta", "half_dim", "offset"])

    def test_cache_hits_and_keys(self):
        spec = ir.AttentionSpec(8, 8, 64, 16, variant="causal")
        first, info = jit.compile_spec(spec, "sm_80", split_kv=False, cache=self.cache)
        self.assertFalse(info["cached"])
        again, info = jit.compile_spec(spec, "sm_80", split_kv=False, cache=self.cache)
        self.assertTrue(info["cached"])
        self.assertEqual(first, again)
        program = ir.attention_module(spec)
        compiler = jit.find_compiler()
        key = jit.cache_key(program, "sm_80", jit.spec_options("sm_80", split_kv=False),
                            compiler)
        self.assertEqual(os.path.basename(first), key)
        others = {jit.cache_key(program + " ", "sm_80", (), compiler),
                  jit.cache_key(program, "sm_86", (), compiler),
                  jit.cache_key(program, "sm_80", ("--warps=2",), compiler),
                  jit.cache_key(program, "sm_80", (), None)}
        self.assertEqual(len(others), 4)
        self.assertNotIn(key, others)
        # A torn or older bundle under the key is compiled again.
        with open(os.path.join(first, "manifest.json"), "w") as f:
            f.write('{"abi_version": 4}')
        _, info = jit.compile_spec(spec, "sm_80", split_kv=False, cache=self.cache)
        self.assertFalse(info["cached"])
        self.assertEqual(manifest(first)["abi_version"], jit.ABI_VERSION)

    def test_images_and_cubins_first(self):
        """One module per kernel; image "ptx" writes PTX only, "cubin" a
        cubin per kernel too, and a cubin bundle in the cache serves first."""
        spec = ir.AttentionSpec(8, 2, 64, 16, variant="soft_cap")
        kernels = [k["name"] for k in manifest(jit.compile_spec(
            spec, "sm_80", cache=self.cache, image="ptx")[0])["kernels"]]
        ptx, info = jit.compile_spec(spec, "sm_80", cache=self.cache, image="ptx")
        self.assertTrue(info["cached"])
        modules = manifest(ptx)["targets"][0]["modules"]
        self.assertEqual(sorted(m["kernels"][0] for m in modules), sorted(kernels))
        self.assertEqual(len(kernels), 2)  # the split kernel and its merge kernel
        self.assertEqual(sorted(os.listdir(ptx)),
                         sorted(["manifest.json"] + [k + ".sm_80.ptx" for k in kernels]))
        if not jit.find_ptxas():
            self.skipTest("no ptxas for cubins")
        cubin, info = jit.compile_spec(spec, "sm_80", cache=self.cache, image="cubin")
        self.assertFalse(info["cached"])
        self.assertTrue(all(k + ".sm_80.cubin" in os.listdir(cubin) for k in kernels))
        self.assertTrue(all("cubin" in m for m in manifest(cubin)["targets"][0]["modules"]))
        found, info = jit.compile_spec(spec, "sm_80", cache=self.cache)
        self.assertEqual((found, info["cached"]), (cubin, True))

    def test_aot_command(self):
        import subprocess
        config = os.path.join(self.cache, "aot.json")
        with open(config, "w") as f:
            json.dump([{"num_qo_heads": 8, "num_kv_heads": 2, "head_dim": 64, "page_size": 16,
                        "variant": "soft_cap", "chip": "sm_80"},
                       {"num_qo_heads": 8, "num_kv_heads": 8, "head_dim": 128, "page_size": 1,
                        "kv_layout": "HND", "dtype": "f16", "chip": "sm_75",
                        "split_kv": False}], f)
        env = dict(os.environ, FLASHIR_CACHE_DIR=self.cache,
                   PYTHONPATH=os.path.join(ROOT, "python"))
        outputs = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-m", "flashir.jit", config], env=env,
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            outputs.append(done.stdout.splitlines())
        self.assertEqual([("compiled in" in line) for line in outputs[0]], [True, True])
        self.assertEqual([line.split(": ")[1].startswith("cached") for line in outputs[1]],
                         [True, True])
        bad = subprocess.run([sys.executable, "-m", "flashir.jit"], env=env,
                             capture_output=True, text=True)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("usage", bad.stderr)

    def test_concurrent_processes_compile_once(self):
        program = ir.attention_module(ir.AttentionSpec(8, 2, 64, 16))
        with multiprocessing.get_context("spawn").Pool(4) as pool:
            results = pool.map(compile_in, [(program, self.cache)] * 4)
        self.assertEqual(len({folder for folder, _ in results}), 1)
        self.assertEqual(sum(not info["cached"] for _, info in results), 1)
        left = [n for n in os.listdir(self.cache) if n.startswith(".tmp-")]
        self.assertEqual(left, [])

    def test_compiler_errors_are_jit_errors(self):
        spec = ir.AttentionSpec(8, 2, 12, 16)  # head dims are multiples of 8
        with self.assertRaisesRegex(jit.JitError, "head_dim|head dim"):
            jit.compile_spec(spec, "sm_80", cache=self.cache)
        self.assertEqual([n for n in os.listdir(self.cache) if not n.endswith(".lock")], [])

    def test_missing_compiler(self):
        old = os.environ.get("FLASHIR_COMPILER")
        os.environ["FLASHIR_COMPILER"] = os.path.join(self.cache, "no-such-compiler")
        try:
            with self.assertRaisesRegex(jit.JitError, "FLASHIR_COMPILER"):
                jit.find_compiler()
        finally:
            if old is None:
                del os.environ["FLASHIR_COMPILER"]
            else:
                os.environ["FLASHIR_COMPILER"] = old


if __name__ == "__main__":
    unittest.main()
