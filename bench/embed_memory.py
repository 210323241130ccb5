"""What loading MiniLM int8 costs in memory, and what each way of avoiding onnxruntime's graph
optimisation saves: each variant in a fresh process, RSS after the imports and after loading,
time to embed 200 short texts and 50 single queries, and the largest difference of its vectors
from the default session's (the index holds vectors made by the default: a variant must stay
within 1e-5 of them).

    .venv/bin/python bench/embed_memory.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

VARIANTS = ("default", "no-constant-folding", "disable-all", "saved-optimized")

CHILD = r"""
import json, os, sys, time
import numpy as np, onnxruntime as ort, psutil
from claude_mem.index import embed
variant, out_path, saved = sys.argv[1], sys.argv[2], sys.argv[3]
proc = psutil.Process()
before = proc.memory_info().rss
options = ort.SessionOptions()
options.intra_op_num_threads = 2
options.inter_op_num_threads = 1
options.log_severity_level = 3
options.enable_cpu_mem_arena = False
path = str(embed.model_path())
if variant == "no-constant-folding":
    session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=["ConstantFolding"])
elif variant == "disable-all":
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
elif variant == "saved-optimized":
    if not os.path.exists(saved):
        o = ort.SessionOptions(); o.optimized_model_filepath = saved; o.log_severity_level = 3
        ort.InferenceSession(path, sess_options=o, providers=["CPUExecutionProvider"])
        before = proc.memory_info().rss  # the one-off save is not what a later start pays
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(saved, sess_options=options, providers=["CPUExecutionProvider"])
else:
    session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
model = embed._Model.__new__(embed._Model)
model.session = session
model.input_names = {i.name for i in session.get_inputs()}
from tokenizers import Tokenizer
tok = Tokenizer.from_file(str(embed.TOKENIZER_PATH))
tok.enable_truncation(max_length=embed.MAX_TOKENS); tok.enable_padding(pad_id=0, pad_token="[PAD]")
model.tokenizer = tok
loaded = proc.memory_info().rss
texts = [f"Fixed the login crash number {i}: the refresh token raced with logout in src/auth.py line {i * 7}" for i in range(200)]
t = time.perf_counter(); vectors = model.embed(texts); batch_s = time.perf_counter() - t
t = time.perf_counter()
for i in range(50):
    model.embed([f"why did test number {i} fail"])
query_ms = (time.perf_counter() - t) / 50 * 1000
peak = proc.memory_info().rss
np.save(out_path, vectors)
print(json.dumps({"variant": variant, "imports_mib": before / 2**20, "load_mib": (loaded - before) / 2**20,
                  "after_embedding_mib": peak / 2**20, "batch_200_s": batch_s, "query_ms": query_ms}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import numpy as np

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "optimized.onnx")
        for variant in VARIANTS:
            if variant == "saved-optimized":  # the first run only saves the file: measure a start that finds it
                subprocess.run([sys.executable, "-c", CHILD, variant, os.path.join(tmp, "first.npy"), saved], capture_output=True,
                               check=True)
            out = os.path.join(tmp, f"{variant}.npy")
            proc = subprocess.run([sys.executable, "-c", CHILD, variant, out, saved], capture_output=True, text=True, check=True)
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row["vectors"] = out
            results.append(row)
        reference = np.load(results[0]["vectors"])
        for row in results:
            row["max_abs_diff"] = float(np.abs(np.load(row.pop("vectors")) - reference).max())
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'variant':<22}{'imports MiB':>12}{'load +MiB':>11}{'peak MiB':>10}{'200 texts s':>13}{'query ms':>10}{'max |diff|':>12}")
    for r in results:
        print(f"{r['variant']:<22}{r['imports_mib']:>12.0f}{r['load_mib']:>11.0f}{r['after_embedding_mib']:>10.0f}"
              f"{r['batch_200_s']:>13.2f}{r['query_ms']:>10.1f}{r['max_abs_diff']:>12.1e}")


if __name__ == "__main__":
    main()
