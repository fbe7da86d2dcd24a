"""Distributed CAVI of a sparse GP classifier (issue 33), run on purpose (not in CI):
writes N synthetic rows (D inputs) as Parquet, then fits `sparse_gp_classification.gpm`
(M inducing points) by `gpmc.cluster.cavi` — the partitions worked through in this process, and
on a Dask LocalCluster of 2 worker processes — and by `gpmc.cluster.svi` on the cluster (4×
the steps, minibatches of --batch rows), and prints the seconds per step, the bytes that travel per step, each worker's peak memory, and test accuracy and NLL.

    target/pyenv/bin/python bench/cluster.py [--rows 1000000] [--dim 10] [--inducing 100]
        [--partitions 8] [--steps 10] [--batch 10000]

(`./run-tests` makes target/pyenv with gpmc, dask and distributed installed.)
"""

import argparse
import json
import os
import pathlib
import resource
import tempfile
import time

import numpy as np
import pandas as pd

import gpmc

ROOT = pathlib.Path(__file__).resolve().parents[1]


def make(rows, dim, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(rows, dim))
    f = np.sin(2 * X[:, 0]) + X[:, 1] * np.cos(X[:, 2 % dim]) - 0.3 * X[:, 3 % dim]
    y = np.where(rng.uniform(size=rows) < 1 / (1 + np.exp(-3 * f)), 1.0, -1.0)
    return X, y


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb():
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=10)
    ap.add_argument("--inducing", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=10000)
    args = ap.parse_args()
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    cols = [f"x{j}" for j in range(args.dim)]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="gpmc-cluster-"))
    X, y = make(args.rows, args.dim, 1)
    per = -(-args.rows // args.partitions)
    for k in range(args.partitions):
        part = pd.DataFrame(X[k * per : (k + 1) * per], columns=cols)
        part["y"] = y[k * per : (k + 1) * per]
        part.to_parquet(tmp / f"part-{k:03d}.parquet")
    del X, y
    Xt, yt = make(20_000, args.dim, 2)
    src = (ROOT / "models" / "sparse_gp_classification.gpm").read_text()
    # Lengthscale 3 for inputs on [-2, 2]^D (the example's 0.5 suits D = 2).
    src = src.replace("inducing = 50", f"inducing = {args.inducing}")
    model = gpmc.Model(src.replace("lengthscale : real in 0.. = 0.5", "lengthscale : real in 0.. = 3.0"))
    columns = {"X": cols, "y": "y"}
    frame = dd.read_parquet(str(tmp / "*.parquet"))

    def report(label, fit, wall, workers_mb):
        p = fit.predict({"X": Xt}, columns=None)
        prob = p["p_1_1"].to_numpy()
        acc = np.mean(np.where(prob > 0.5, 1.0, -1.0) == yt)
        nll = -np.mean(np.log(np.where(yt > 0, prob, 1 - prob).clip(1e-300)))
        state = json.dumps(fit.state)
        m = args.inducing
        print(
            f"| {label} | {args.rows} | {fit.partitions} | {wall / len(fit.elbo):.3f} | "
            f"{len(state) / 1e3:.0f} kB out, {fit.partitions * 8 * (m * m + m) / 1e3:.0f} kB back | "
            f"{workers_mb} | {acc:.4f} | {nll:.4f} |"
        )

    print("| run | rows | partitions | s per step (start included) | bytes per step | MB: driver peak / workers' resident after the fit | test accuracy | test NLL |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    parts = [pd.read_parquet(p) for p in sorted(tmp.glob("*.parquet"))]
    t = time.time()
    fit = gpmc.cluster.cavi(model, parts, columns=columns, iterations=args.steps, tol=0.0)
    report("CAVI, one process", fit, time.time() - t, f"{peak_rss_mb():.0f}")
    del parts
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, Client(cl) as client:
        t = time.time()
        fit = gpmc.cluster.cavi(model, frame, client=client, columns=columns, iterations=args.steps, tol=0.0)
        wall = time.time() - t
        mem = client.run(rss_mb)
        report("CAVI, LocalCluster, 2 workers", fit, wall, "/".join(f"{v:.0f}" for v in mem.values()))
        t = time.time()
        fit = gpmc.cluster.svi(
            model, frame, client=client, columns=columns, batch=args.batch, iterations=args.steps * 4
        )
        wall = time.time() - t
        mem = client.run(rss_mb)
        report(f"SVI (batch {args.batch}), LocalCluster, 2 workers", fit, wall, "/".join(f"{v:.0f}" for v in mem.values()))


if __name__ == "__main__":
    main()
