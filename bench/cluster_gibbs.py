"""Sparse Gibbs over partitions against single-process sparse Gibbs (issue 33), run on purpose
(not in CI): the sparse GP classifier (`sparse_gp_classification.gpm`, M inducing points) on N
synthetic points, sampled by `Model.sample` in one process and by `gpmc.cluster.sample` on a Dask
LocalCluster of 2 worker processes over the same rows in partitions (the same inducing inputs:
k-means++ on every row). Prints the seconds per sweep of each and, per inducing coordinate, the
difference of the posterior means in units of their combined Monte Carlo standard error, the
ratio of the posterior sds, and the largest difference of the predictive probabilities on
held-out points.

    target/pyenv/bin/python bench/cluster_gibbs.py [--rows 100000] [--inducing 50]
        [--partitions 8] [--warmup 100] [--draws 400] [--progress]

Also prints each run's held-out accuracy against the true labels and the cluster run's mixing
warnings; `--progress` shows both runs' progress bars (what a user at that size sees).
"""

import argparse
import pathlib
import time

import numpy as np
import pandas as pd

import gpmc

ROOT = pathlib.Path(__file__).resolve().parents[1]


def make(rows, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(rows, 2))
    f = np.sin(2 * X[:, 0]) + X[:, 1] * np.cos(X[:, 0])
    y = np.where(rng.uniform(size=rows) < 1 / (1 + np.exp(-3 * f)), 1.0, -1.0)
    return X, y


def moments(draws):
    """Per coordinate: mean, sd and Monte Carlo standard error of the mean (ArviZ's), from
    (chain, draw, coordinate) draws."""
    import arviz as az

    idata = az.from_dict(posterior={"v": draws})
    mcse = az.mcse(idata, method="mean")["v"].values
    flat = draws.reshape(-1, draws.shape[-1])
    return flat.mean(0), flat.std(0), mcse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--inducing", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args()
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    X, y = make(args.rows, 1)
    Xt, yt = make(2000, 2)
    src = (ROOT / "models" / "sparse_gp_classification.gpm").read_text()
    model = gpmc.Model(src.replace("inducing = 50", f"inducing = {args.inducing}"))
    kw = dict(chains=2, warmup=args.warmup, draws=args.draws, seed=1)
    sweeps = kw["chains"] * (args.warmup + args.draws)

    t = time.time()
    one = model.sample({"X": X, "y": y}, log_lik=False, ppc=False, progress=args.progress, **kw)
    t_one = time.time() - t
    v_one = one.posterior["f_inducing"].values
    p_one = gpmc.predict(one, {"X": Xt})["p_1_1"].to_numpy()
    del one

    frame = dd.from_pandas(
        pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "y": y}), npartitions=args.partitions, sort=False
    )
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cl, Client(cl) as client:
        t = time.time()
        many = gpmc.cluster.sample(
            model, frame, client=client, columns={"X": ["x1", "x2"], "y": "y"},
            sample_rows=args.rows, progress=args.progress, **kw,
        )
        t_many = time.time() - t
    v_many = many.draws
    p_many = many.predict({"X": Xt})["p_1_1"].to_numpy()

    (m1, s1, e1), (m2, s2, e2) = moments(v_one), moments(v_many)
    z = (m1 - m2) / np.sqrt(e1**2 + e2**2)
    print(f"rows {args.rows}, M = {args.inducing}, 2 chains x ({args.warmup} + {args.draws}) sweeps")
    print("| run | s per sweep (chains side by side on 2 cores) |")
    print("| --- | --- |")
    print(f"| `Model.sample`, one process | {t_one / (args.warmup + args.draws):.3f} |")
    print(
        f"| `gpmc.cluster.sample`, LocalCluster of 2 workers, {args.partitions} partitions | "
        f"{t_many / (args.warmup + args.draws):.3f} |"
    )
    print(
        f"inducing coordinates: |z| of the mean differences: max {np.max(np.abs(z)):.2f}, "
        f"share above 2: {np.mean(np.abs(z) > 2):.3f} (about 0.05 expected), share above 3: "
        f"{np.mean(np.abs(z) > 3):.3f}; sd ratios {np.min(s1 / s2):.3f} to {np.max(s1 / s2):.3f}"
    )
    print(
        f"predictive probability at {len(Xt)} held-out points: largest difference "
        f"{np.max(np.abs(p_one - p_many)):.4f}, mean {np.mean(np.abs(p_one - p_many)):.4f}"
    )
    accuracy = lambda p: np.mean(np.where(p > 0.5, 1.0, -1.0) == yt)
    print(f"held-out accuracy: one process {accuracy(p_one):.3f}, cluster {accuracy(p_many):.3f}")
    print(f"cluster warnings: {many.summary['warnings']}")
    print(f"({sweeps} sweeps in all)")


if __name__ == "__main__":
    main()
