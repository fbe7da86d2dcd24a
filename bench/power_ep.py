"""Sparse Gibbs at a Power-EP power α (thesis §7.5, Algorithm 6; issue 34 item 2): test error and
log predictive density of `models/sparse_gp_classification.gpm` against α, for M = 10 and 50
inducing points, by `gpmc infer --method gibbs` (2 chains × 1 000 draws after 200 warm-up
sweeps, seed 1) and, for reference, CAVI (the variational bound, α = 0 whatever the model says).

    python3 bench/power_ep.py        (after `cargo build --release`; needs numpy only)
"""
import json
import os
import re
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPMC = os.path.join(ROOT, "target", "release", "gpmc")
MODEL = os.path.join(ROOT, "models", "sparse_gp_classification.gpm")
OUT = os.path.join(ROOT, "bench", "out", "power_ep")


def run(m, alpha, method):
    src = open(MODEL).read().replace("inducing = 50)", f"inducing = {m}, alpha = {alpha})")
    d = os.path.join(OUT, f"m{m}_a{alpha}_{method}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.gpm")
    open(path, "w").write(src)
    cmd = [GPMC, "infer", path, "--method", method, "--quiet", "--seed", "1",
           "--data", os.path.join(ROOT, "models", "sparse_gp_classification.data.json"),
           "--predict", os.path.join(ROOT, "models", "sparse_gp_classification.test.json"),
           "--output", os.path.join(d, "run")]
    if method == "gibbs":
        cmd += ["--chains", "2", "--draws", "1000"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    s = json.load(open(os.path.join(d, "run", "summary.json")))
    row = dict(error=s["test"]["error_rate_factor_1"],
               lpd=s["test"]["mean_log_predictive_density"], wall=wall)
    found = re.search(r"min bulk ESS (\d+)", out)
    if found:
        row["min_ess"] = int(found.group(1))
    return row


def main():
    print("| M | α | Gibbs test error | Gibbs test LPD | Gibbs min bulk ESS | Gibbs wall (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for m in (10, 50):
        for alpha in (0.0, 0.25, 0.5, 0.75, 1.0):
            g = run(m, alpha, "gibbs")
            print(f"| {m} | {alpha} | {g['error']:.3f} | {g['lpd']:.4f} | {g.get('min_ess', '')} "
                  f"| {g['wall']:.1f} |", flush=True)
        c = run(m, 1.0, "cavi")
        print(f"| {m} | CAVI | {c['error']:.3f} | {c['lpd']:.4f} | — | {c['wall']:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
