"""bench/quant_scale.py, the issue-48 benchmark, on its `tiny` shape so that it cannot rot: a
synthetic Hugging Face folder of BF16 shards with SmolLM2's tokenizer, quantized with GPTQ to
--target vllm, and --check doing what the 8B run in docs/benchmarks.md did (frugal info and
generate on the GGUF, the vLLM folder read back by the tests' numpy reader and compared with
frugal dequant). About 15 s."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import BIN, ROOT


def test_tiny_hf_source_to_vllm_with_check(tmp_path, smollm2_gguf):
    out = tmp_path / "qs"
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "quant_scale.py"), "--shape", "tiny", "--layers", "2",
         "--source", "hf", "--target", "vllm", "--check", "--threads", "2", "--frugal", str(BIN),
         "--out-dir", str(out)],
        capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    src = out / "synth-tiny-2L-s0-hf"
    index = json.loads((src / "model.safetensors.index.json").read_text())
    assert sorted(set(index["weight_map"].values())) == ["model-00001-of-00001.safetensors"]
    assert json.loads((src / "config.json").read_text())["torch_dtype"] == "bfloat16"
    result = json.loads((out / "result-tiny-2L.json").read_text())
    (run,) = result["runs"]
    assert run["rc"] == 0 and len(run["layer_s"]) == 2 and run["peak_rss_gb"] > 0
    assert run["report"]["target"] == "vllm" and run["report"]["method"] == "gptq"
    check = run["check"]
    assert check["info_rc"] == 0 and check["generate_rc"] == 0
    assert check["vllm_tensors"] > 0
    assert check["vllm_vs_gguf"] == {"layers": [0, 1], "tensors": 6, "max_abs_diff": 0.0}
    assert not list(out.glob("q-tiny-*"))  # outputs removed without --keep-output
