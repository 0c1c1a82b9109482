"""Does a prompt's next-token logits depend on the prompts read beside it? The local judge, this machine's build.

The local judge decodes the calls one sample makes together, one sequence each in one
KV cache (``prompt_logits_many``, ``greedy_decode_many``). If each sequence's arithmetic
did not depend on its batch, several samples could be in flight at once (``--concurrency``)
and still give the scores of one at a time; today they do not (README: "More samples in
flight is faster but not stable"). This reads one prompt's last part (its "tail", 1 to 33
tokens, after a shared prefix) alone and beside another sequence of 1, 8 or 20 tokens, and
prints the largest difference in any logit and whether the top token is the same.

    python benchmarks/batch_invariance.py

On the 2-core Xeon (model 207, AMX build, Q8_0 copy), 2026-11-27: beside any other
sequence the tail's logits were bitwise the same whatever that sequence was, once the
pass held 8 rows or more; alone they differed from those by 0.23-0.54 in some logit at
every tail length (the top token the same). With ``GGML_AMX_ATTN=0`` (attention in
llama.cpp's F16 kernel at every row count) the batched reads were bitwise the same at
every row count, 2 included: the switch to BF16 attention tiles at 8 rows is what varies
below 8. Reading alone still differed (0.27-0.39): the last layer computed one output row
where a batch of two sequences computes two; read alone with logits asked for its last
two tokens, the prompt's logits were bitwise the batched ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lib.timing import machine_line

from assay.models import LocalJudge
from assay.models._decode import _logits, prompt_logits_many

BASE = (
    "The Amazon River is about 6,400 km long and empties into the Atlantic Ocean. "
    "Its basin covers parts of nine countries."
)
TAIL = " Statement: the river named by Orellana in 1542 is about 7,000 km long and crosses nine countries."
OTHER = " Another statement about something else entirely, with more words in it than the first one has."


def main() -> None:
    judge = LocalJudge()
    llama = judge.load()
    print(machine_line())
    assert judge.library is not None
    print(f"llama.cpp build: {judge.library.library} ({judge.library.reason}); weights: {judge.weights}")
    base = llama.tokenize(BASE.encode())
    tail = llama.tokenize(TAIL.encode(), add_bos=False)
    other = llama.tokenize(OTHER.encode(), add_bos=False)

    def alone(tokens: list[int]) -> np.ndarray:
        llama.reset()
        llama.eval(base)
        llama.eval(tokens)
        return _logits(llama, -1).copy()

    print("| tail tokens | beside | rows in the pass | max logit difference from alone | top token the same |")
    print("|---|---|---|---|---|")
    for m in (1, 2, 4, 7, 8, 9, 16, 17, 24, 33):
        reference = alone(tail[:m])
        beside: dict[int, np.ndarray] = {}
        for n in (1, 8, 20):
            llama.reset()
            beside[n] = prompt_logits_many(llama, [base + tail[:m], base + other[:n]])[0]
            diff = float(np.abs(beside[n] - reference).max())
            same = int(np.argmax(beside[n])) == int(np.argmax(reference))
            print(f"| {m} | {n} tokens | {m + n} | {diff:.4f} | {'yes' if same else 'no'} |")
        mates = [float(np.abs(beside[n] - beside[20]).max()) for n in (1, 8)]
        print(f"|   | beside 1 / 8 against beside 20 | | {mates[0]:.4f} / {mates[1]:.4f} | |")


if __name__ == "__main__":
    main()
