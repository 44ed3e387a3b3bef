"""Long runs of the structure-aware fuzzer in tests/test_fuzz.py, with random seeds.

    python fuzz/run_structural.py --examples 100000            # ~100k examples in chunks of 2000
    python fuzz/run_structural.py --examples 50000 --seed 1000  # another, disjoint stream

Each chunk is one hypothesis run of ``fuzz_example`` with its own seed (``--seed`` + chunk
number), so any chunk can be replayed alone (``--seed N --examples CHUNK --chunk CHUNK``).  A
failing chunk is shrunk by hypothesis, its minimal model is saved under ``--save``/seed-N/ (the
XML, the .bin if any, the mutations and input plan) and the run goes on.  A hang is ended by a
watchdog after ``--hang`` seconds, with a traceback, leaving the model in the work directory.
Prints the figures at the end (and every chunk): examples run, outcomes, failures.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
os.environ.setdefault("NUMBA_NUM_THREADS", "2")


def _body(save: str, hang: float):
    from test_fuzz import fuzz_example

    def body(data) -> None:
        faulthandler.dump_traceback_later(hang, exit=True)
        try:
            fuzz_example(data, save)
        finally:
            faulthandler.cancel_dump_traceback_later()

    return body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=100_000, help="total examples (default 100000)")
    ap.add_argument("--chunk", type=int, default=2000, help="examples per hypothesis run (default 2000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first chunk (default 0)")
    ap.add_argument("--save", default=os.path.join(tempfile.gettempdir(), "irnorm-fuzz-findings"),
                    help="where failing models are saved (default: $TMPDIR/irnorm-fuzz-findings)")
    ap.add_argument("--hang", type=float, default=120.0, help="seconds before one example counts as a hang")
    ap.add_argument("--max-failures", type=int, default=20, help="stop after this many failing chunks")
    args = ap.parse_args(argv)

    from hypothesis import given, seed
    from hypothesis import strategies as st
    from test_fuzz import _WORKDIR, STATS, fuzz_settings

    t_start = time.time()
    failures: list[tuple[int, str]] = []
    chunk_no = 0
    while STATS.get("examples", 0) < args.examples:
        s = args.seed + chunk_no
        chunk_no += 1
        n = min(args.chunk, args.examples - STATS.get("examples", 0))
        save = os.path.join(args.save, f"seed-{s}")

        run = fuzz_settings(n, seed=s)(seed(s)(given(st.data())(_body(save, args.hang))))

        before = STATS.get("examples", 0)
        try:
            run()
        except BaseException as e:  # noqa: BLE001 - a fuzz failure: record it and go on
            if isinstance(e, KeyboardInterrupt):
                raise
            text = "".join(traceback.format_exception(e))
            failures.append((s, text))
            os.makedirs(save, exist_ok=True)
            with open(os.path.join(save, "failure.txt"), "w") as f:
                f.write(text)
            print(f"seed {s}: FAILURE saved in {save}\n{text[-3000:]}", flush=True)
        if STATS.get("examples", 0) == before and (not failures or failures[-1][0] != s):
            break  # nothing generated and nothing failed: hypothesis has nothing more to give
        if len(failures) >= args.max_failures:
            print(f"stopping after {len(failures)} failing chunks", flush=True)
            break
        el = time.time() - t_start
        print(f"[{el:7.0f} s] seed {s}: examples {STATS.get('examples', 0)} attempts {STATS.get('attempts', 0)} "
              f"outcomes { {k: v for k, v in STATS.items() if k not in ('examples', 'attempts')} } "
              f"failures {len(failures)}", flush=True)
    el = time.time() - t_start
    print(f"DONE: {STATS.get('examples', 0)} examples passed ({STATS.get('attempts', 0)} executed, incl. shrinking) "
          f"in {el:.0f} s; outcomes: { {k: v for k, v in STATS.items() if k not in ('examples', 'attempts')} }; "
          f"failing chunks: {len(failures)} {[s for s, _ in failures]}; work dir {_WORKDIR}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
