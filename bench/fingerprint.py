#!/usr/bin/env python3
"""The fingerprint of gpmc's outputs: every example model (`models/`) under every method, with a
fixed seed and small settings, each run's draws (CmdStan CSV rows, comments and timings left out)
and predictions hashed. A refactor that should change no output (issue 51: "the same seeds give
bit-identical draws on every example model and method before and after") is checked by running
this before and after and comparing:

    python bench/fingerprint.py > /tmp/before.txt      # at the base commit
    python bench/fingerprint.py > /tmp/after.txt       # with the change
    diff /tmp/before.txt /tmp/after.txt                # empty: no output changed

A run a method refuses is fingerprinted by its exit code and message, so a refusal that appears
or goes away is a difference too. `--gpmc PATH` picks the binary (default: target/release/gpmc,
built with `cargo build --release -p gpmc`)."""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
METHODS = {
    "gibbs": ["--chains", "2", "--draws", "30", "--warmup", "30", "--log-lik", "--ppc"],
    "nuts": ["--chains", "2", "--draws", "30", "--warmup", "60", "--log-lik", "--ppc"],
    "cavi": ["--iterations", "60", "--draws", "30", "--log-lik", "--ppc"],
    "gpf": ["--iterations", "60", "--draws", "30", "--log-lik", "--ppc"],
    "svi": ["--iterations", "60", "--batch", "20", "--draws", "30", "--log-lik", "--ppc"],
}
#: Files whose content is the run's answer (summary.json holds timings; it is left out).
ANSWERS = ("chain-*.csv", "predictions.csv", "posterior.csv", "fit.json")


def digest(directory):
    h = hashlib.sha256()
    for pattern in ANSWERS:
        for path in sorted(directory.glob(pattern)):
            h.update(path.name.encode())
            for line in path.read_text().splitlines():
                # CmdStan comments carry timings; fit.json's "seconds" too.
                if line.startswith("#") or '"seconds"' in line:
                    continue
                h.update(line.encode())
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpmc", default=str(ROOT / "target" / "release" / "gpmc"))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    models = sorted(p for p in (ROOT / "models").iterdir() if p.suffix in (".gpm", ".stan"))
    for model in models:
        stem = model.name.rsplit(".", 1)[0]
        if only and stem not in only:
            continue
        data = model.with_name(stem + ".data.json")
        test = model.with_name(stem + ".test.json")
        for method, flags in METHODS.items():
            with tempfile.TemporaryDirectory() as tmp:
                out = pathlib.Path(tmp) / "run"
                cmd = [args.gpmc, "infer", str(model), "--data", str(data), "--method", method,
                       "--seed", "7", "--output", str(out), "--quiet", *flags]
                if test.exists():
                    cmd += ["--predict", str(test)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0 and "posterior predictive" in r.stderr:
                    # A density formula has no distribution to draw y_rep from: without --ppc.
                    cmd.remove("--ppc")
                    r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode == 0:
                    print(f"{stem:28s} {method:6s} {digest(out)}", flush=True)
                else:
                    first = " ".join(r.stderr.split())[:120]
                    print(f"{stem:28s} {method:6s} exit {r.returncode}: {first}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
