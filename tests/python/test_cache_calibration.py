"""The shipped verifier calibration is what the training script makes from data/cache_train with
the current code: a change to the verifier's features, lexicon or vetoes without retraining
(scripts/train_cache_verifier.py) fails here."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import BIN, ROOT

SHIPPED = ROOT / "data" / "cache_calibration" / "multilingual-e5-small-q4.json"


def test_shipped_e5_calibration_is_reproduced(e5_file, tmp_path):
    out = tmp_path / "cal.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "train_cache_verifier.py"), "-m", str(e5_file),
                    "--frugal", str(BIN), "--out", str(out)], check=True, capture_output=True, timeout=900, cwd=ROOT)
    got, want = json.loads(out.read_text()), json.loads(SHIPPED.read_text())
    assert got["fingerprint"] == want["fingerprint"]
    assert got["recall_threshold"] == want["recall_threshold"]
    g, w = got["verifier"], want["verifier"]
    assert g["features"] == w["features"]
    assert abs(g["operating_point"] - w["operating_point"]) < 1e-3, (g["operating_point"], w["operating_point"])
    assert max(abs(a - b) for a, b in zip(g["weights"] + [g["bias"]], w["weights"] + [w["bias"]])) < 1e-3
    assert got["training"]["pairs_sha256"] == want["training"]["pairs_sha256"]
    cv = want["training"]["cross_validated"]["all"]
    assert cv["precision"] >= w["target_precision"], cv
