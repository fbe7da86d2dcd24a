"""Distributed CAVI and SVI of a sparse GP classifier (issue 33), run on purpose (not in CI):
writes N synthetic rows (D inputs) as Parquet, then fits `sparse_gp_classification.gpm` (M
inducing points) by CAVI and by SVI on a Dask LocalCluster of 2 worker processes (a fresh one
for each method, so that each worker's peak memory is the method's), against the
single-process runs on the same data (`Model.cavi`, `Model.svi`, the data in memory), and
prints the seconds per step, the bytes that travel per step, peak memory (the driver's, each
worker's), and test accuracy and NLL on 20 000 held-out points.

    target/pyenv/bin/python bench/cluster.py [--rows 10000000] [--dim 10] [--inducing 100]
        [--partitions 40] [--steps 10] [--batch 10000] [--skip-single]

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
    """This process's peak resident memory (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dim", type=int, default=10)
    ap.add_argument("--inducing", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=40)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--skip-single", action="store_true")
    args = ap.parse_args()
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    cols = [f"x{j}" for j in range(args.dim)]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="gpmc-cluster-"))
    # Written a partition at a time: the driver never holds the data.
    per = -(-args.rows // args.partitions)
    for k in range(args.partitions):
        X, y = make(min(per, args.rows - k * per), args.dim, 1000 + k)
        part = pd.DataFrame(X, columns=cols)
        part["y"] = y
        part.to_parquet(tmp / f"part-{k:03d}.parquet")
    del X, y, part
    Xt, yt = make(20_000, args.dim, 2)
    src = (ROOT / "models" / "sparse_gp_classification.gpm").read_text()
    # Lengthscale 3 for inputs on [-2, 2]^D (the example's 0.5 suits D = 2).
    src = src.replace("inducing = 50", f"inducing = {args.inducing}")
    model = gpmc.Model(src.replace("lengthscale : real in 0.. = 0.5", "lengthscale : real in 0.. = 3.0"))
    columns = {"X": cols, "y": "y"}
    frame = str(tmp / "*.parquet")  # Parquet paths: gpmc.cluster reads them with Dask

    class Clock:
        """The times of the steps (the callback): seconds per step after the first, i.e.
        without the start (loading the partitions, choosing the inducing inputs)."""

        def __init__(self):
            self.times = []

        def __call__(self, *_):
            self.times.append(time.time())

        def per_step(self):
            t = self.times
            return (t[-1] - t[0]) / (len(t) - 1) if len(t) > 1 else float("nan")

    def report(label, fit, wall, workers_mb, clock=None):
        p = fit.predict({"X": Xt}, columns=None)
        prob = p["p_1_1"].to_numpy()
        acc = np.mean(np.where(prob > 0.5, 1.0, -1.0) == yt)
        nll = -np.mean(np.log(np.where(yt > 0, prob, 1 - prob).clip(1e-300)))
        m = args.inducing
        # The partitions' statistics are tree-summed on the workers: one block's reach the
        # driver, the others travel between workers.
        travel = (
            f"{len(json.dumps(fit.state)) / 1e3:.0f} kB out, {8 * (m * m + m) / 1e3:.0f} kB back "
            f"({(fit.partitions - 1) * 8 * (m * m + m) / 1e3:.0f} kB between workers)"
            if fit.state
            else "-"
        )
        steady = f"{clock.per_step():.3f}" if clock is not None else "-"
        print(
            f"| {label} | {args.rows} | {fit.partitions} | {wall / len(fit.elbo):.3f} | {steady} | "
            f"{travel} | {workers_mb} | {acc:.4f} | {nll:.4f} |",
            flush=True,
        )

    print(
        "| run | rows | partitions | s per step (setup included) | s per step after the first | bytes per step | "
        "peak MB: driver / each worker | test accuracy | test NLL |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for method in ("cavi", "svi"):
        steps = args.steps if method == "cavi" else args.steps * 4
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cl, Client(cl) as client:
            t, clock = time.time(), Clock()
            if method == "cavi":
                fit = gpmc.cluster.cavi(
                    model, frame, client=client, columns=columns, iterations=steps, tol=0.0,
                    callback=clock,
                )
                label = "CAVI, LocalCluster, 2 workers"
            else:
                fit = gpmc.cluster.svi(
                    model, frame, client=client, columns=columns, batch=args.batch,
                    iterations=steps, callback=clock,
                )
                label = f"SVI (batch {args.batch}), LocalCluster, 2 workers"
            wall = time.time() - t
            mem = client.run(peak_rss_mb)
        workers = " / ".join(f"{v:.0f}" for v in mem.values())
        report(label, fit, wall, f"{peak_rss_mb():.0f} / {workers}", clock)
    if args.skip_single:
        return
    # The single-process runs on the same data: CAVI through the partitions one after the
    # other in this process (bounded memory), `Model.cavi` on all the rows at once (refused
    # when its features would not fit), `Model.svi` on all the rows in memory.
    parts = [pd.read_parquet(p) for p in sorted(tmp.glob("*.parquet"))]
    t, clock = time.time(), Clock()
    fit = gpmc.cluster.cavi(model, parts, columns=columns, iterations=args.steps, tol=0.0, callback=clock)
    report("CAVI, one process, partition after partition", fit, time.time() - t, f"{peak_rss_mb():.0f}", clock)
    data = pd.concat(parts)
    del parts
    arrays = {"X": data[cols].to_numpy(), "y": data["y"].to_numpy()}
    del data
    t = time.time()
    try:
        fit = model.cavi(arrays, iterations=args.steps, progress=False)
        report("CAVI, one process (`Model.cavi`)", Steps(fit, args.steps), time.time() - t, f"{peak_rss_mb():.0f}")
    except gpmc.InferenceError as e:
        print(f"| CAVI, one process (`Model.cavi`) | {args.rows} | 1 | refused: {e} | | | | | |", flush=True)
    t = time.time()
    fit = model.svi(arrays, batch=args.batch, iterations=args.steps * 4, progress=False)
    report(f"SVI (batch {args.batch}), one process (`Model.svi`)", Steps(fit, args.steps * 4), time.time() - t, f"{peak_rss_mb():.0f}")


class Steps:
    """A single-process fit seen as a distributed one by `report`: one partition, the steps
    asked for (CAVI's trace may stop sooner, at convergence)."""

    def __init__(self, fit, steps):
        self.fit, self.partitions = fit, 1
        self.elbo = fit.elbo if len(fit.elbo) else [0.0] * steps
        self.state = {}

    def predict(self, data, columns=None):
        return self.fit.predict(data)


if __name__ == "__main__":
    main()
