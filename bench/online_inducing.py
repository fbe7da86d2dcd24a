"""Online inducing points (thesis Appendix A, issue 34 item 3) against k-means++ on a stream:
N synthetic rows (D = 3 inputs on [-2, 2]^3, labels ±1 from a logistic of a smooth function),
seen once each by SVI (batch 1 000, N/1 000 iterations: one epoch, every row offered to the
online rule as its minibatch arrives), against the same SVI with M points chosen beforehand by
k-means++ (which needs the data up front: it runs on 20 000 rows sampled from all of them).
Every run is the `gpmc infer` CLI on CSV files; the table gives test accuracy and NLL on 20 000
held-out rows, the final number of points and the wall time of the whole process.

    bench/.venv/bin/python bench/online_inducing.py [--rows 1000000]   (after `cargo build --release`)
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPMC = os.path.join(ROOT, "target", "release", "gpmc")
OUT = os.path.join(ROOT, "bench", "out", "online_inducing")


def make(rows, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(rows, 3))
    f = np.sin(2 * X[:, 0]) + X[:, 1] * np.cos(X[:, 2]) - 0.3 * X[:, 2]
    y = np.where(rng.uniform(size=rows) < 1 / (1 + np.exp(-3 * f)), 1, -1)
    return X, y


def write_csv(path, X, y):
    with open(path, "w") as f:
        f.write("X.1,X.2,X.3,y\n")
        np.savetxt(f, np.column_stack([X, y]), fmt=["%.6f", "%.6f", "%.6f", "%d"], delimiter=",")


MODEL = """data {{ N : int; X : matrix[N, 3]; y : int[N] in {{-1, 1}}; }}
hyper {{ lengthscale : real in 0.. = 1.0; variance : real in 0.. = 3.0; }}
latent {{ f : vector[N] ~ gp(X, variance * sqexp(lengthscale), inducing = {inducing}); }}
model {{ y ~ bernoulli_logit(f); }}
"""


def run(tag, inducing, train, test, iterations):
    d = os.path.join(OUT, tag)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "model.gpm")
    with open(src, "w") as f:
        f.write(MODEL.format(inducing=inducing))
    out = os.path.join(d, "run")
    cmd = [GPMC, "infer", src, "--method", "svi", "--batch", "1000", "--iterations",
           str(iterations), "--data", train, "--predict", test, "--output", out, "--quiet"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    s = json.load(open(os.path.join(out, "summary.json")))
    points = sum(1 for _ in open(os.path.join(out, "inducing.csv"))) - 1
    return dict(accuracy=1 - s["test"]["error_rate_factor_1"],
                nll=-s["test"]["mean_log_predictive_density"], points=points, wall=wall,
                svi_seconds=s["seconds"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    train, test = os.path.join(OUT, "train.csv"), os.path.join(OUT, "test.csv")
    X, y = make(a.rows, 1)
    write_csv(train, X, y)
    Xt, yt = make(20_000, 2)
    write_csv(test, Xt, yt)
    del X, y
    iterations = a.rows // 1000
    print("| inducing points | chosen | final M | test accuracy | test NLL | SVI (s) | wall (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rows = [("kmeans50", "50", "k-means++, before"), ("kmeans100", "100", "k-means++, before"),
            ("kmeans200", "200", "k-means++, before"),
            ("online05", "adaptive(rho = 0.5, max = 500)", "online ρ = 0.5"),
            ("online07", "adaptive(rho = 0.7, max = 500)", "online ρ = 0.7"),
            ("online08", "adaptive(rho = 0.8, max = 500)", "online ρ = 0.8"),
            ("online08cap", "adaptive(rho = 0.8, max = 100)", "online ρ = 0.8, max 100")]
    for tag, inducing, how in rows:
        r = run(tag, inducing, train, test, iterations)
        print(f"| `{inducing}` | {how} | {r['points']} | {r['accuracy']:.4f} | {r['nll']:.4f} | "
              f"{r['svi_seconds']:.1f} | {r['wall']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
