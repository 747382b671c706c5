"""The measurement behind cache.audit_min_similarity (docs/cache.md "The audit").

SmolLM2-135M-Instruct's greedy answers (48 tokens) to paraphrase pairs, what a correct semantic
hit compares, against answers to different questions; embedded with multilingual-e5-small as the
cache embeds (query prefix, whole text). Run from the repository root after a build:
    .venv/bin/python scripts/measure_audit_threshold.py
"""
import itertools
import json
import math
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = str(ROOT / "build" / "frugal")
LLM = str(ROOT / "models" / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf")
E5 = str(ROOT / "models" / "multilingual-e5-small" / "e5-small-q4.bin")
pairs = [
  ("What is the capital of France?", "Which city is the capital of France?"),
  ("How do I reset my password?", "How can I reset my password?"),
  ("What is photosynthesis?", "Can you explain what photosynthesis is?"),
  ("How many legs does a spider have?", "How many legs do spiders have?"),
  ("What is the boiling point of water?", "At what temperature does water boil?"),
  ("Who wrote Romeo and Juliet?", "Who is the author of Romeo and Juliet?"),
  ("What is your return policy?", "What is the return policy?"),
  ("How do I cook rice?", "How should I cook rice?"),
]
def gen(q):
    r = subprocess.run([BIN, "generate", "-m", LLM, "-t", "1", "--chat", "--temperature", "0",
                        "-n", "48", "-p", q], capture_output=True, text=True, check=True)
    return r.stdout.strip()
answers = [(gen(a), gen(b)) for a, b in pairs]
texts = [t for ab in answers for t in ab]
r = subprocess.run([BIN, "embed", "-m", E5, "-t", "1", "--query", "--whole", *texts],
                   capture_output=True, text=True, check=True)
vecs = [json.loads(l) for l in r.stdout.splitlines() if l.strip().startswith("[")]
assert len(vecs) == len(texts), (len(vecs), r.stderr[-500:])
def cos(u, v):

    d = sum(x*y for x, y in zip(u, v)); return d / math.sqrt(sum(x*x for x in u) * sum(y*y for y in v))
same = [cos(vecs[2*i], vecs[2*i+1]) for i in range(len(pairs))]
diff = [cos(vecs[2*i], vecs[2*j]) for i, j in itertools.combinations(range(len(pairs)), 2)]
for (a, b), (x, y), c in zip(pairs, answers, same):
    print(f"{c:.3f} | {a} -> {x[:70]!r} | {b} -> {y[:70]!r}")
print("paraphrase pairs: min %.3f median %.3f max %.3f" % (min(same), sorted(same)[len(same)//2], max(same)))
print("different questions: min %.3f median %.3f max %.3f (n=%d)" % (min(diff), sorted(diff)[len(diff)//2], max(diff), len(diff)))
for t in (0.80, 0.83, 0.85, 0.88, 0.90):
    print("at %.2f: %d of %d paraphrase pairs flagged, %d of %d different-question pairs pass"
          % (t, sum(c < t for c in same), len(same), sum(c >= t for c in diff), len(diff)))
