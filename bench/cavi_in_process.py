"""gpmc CAVI against GPflow SVGP with natural gradients, both in one Python process with their
data in memory (issue 36, item 4): the Python API (`gpmc.Model.cavi`, `Fit.predict`) against
GPflow, at N = 2·10⁴ and 2·10⁵. The same sparse GP classifier as `bench/variational.py`
(logistic link, D = 10 inputs, M = 100 inducing points at the same k-means centres, kernel
2·sqexp(2.5) fixed, whitened q(u)), the same synthetic data.

gpmc: `Model.cavi(data, iterations=k)` for a grid of k, each a fresh fit from the data already
in memory (its time: the call, binding the data included; not the model's compilation, done
once), the median of three such fits. GPflow: `NaturalGradient(γ)` steps on q(u), full batch, `tf.function`-compiled, its time
from model construction (tracing included), not the test evaluations; γ ∈ {0.1, 0.5, 1}. For
each: the test NLL against time and the time until it is within 1 % of its own final value.
Writes docs/benchmarks_cavi_in_process.md.

    # the package beside GPflow (bench/run makes the venv; TensorFlow 2.16 needs numpy < 2,
    # so the numpy-1 releases of gpmc's own dependencies):
    bench/.venv-gpflow/bin/pip install target/wheels/gpmc_ppl-*.whl "numpy<2" "arviz<0.18" \
        "scipy<1.13" "matplotlib<3.9"
    bench/.venv-gpflow/bin/python bench/cavi_in_process.py [--sizes 20000 200000]
"""
import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variational as v  # noqa: E402  (the data, the NLL, GPflow's run, the 1 % rule)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = (
    "data { N : int; D : int; M : int; X : matrix[N, D]; Z : matrix[M, D]; y : int[N] in {-1, 1}; }\n"
    f"latent {{ f : vector[N] ~ gp(X, {v.VARIANCE} * sqexp({v.LENGTHSCALE}), inducing = Z); }}\n"
    "model { y ~ bernoulli_logit(f); }\n"
)


def run_gpmc(x, y, xt, yt, z, grid):
    import gpmc

    path = os.path.join(ROOT, "bench", "out", "cavi_in_process.gpm")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(MODEL)
    model = gpmc.Model(path)
    data = {"N": len(y), "D": v.D, "M": len(z), "X": x, "Z": z, "y": y}
    test = {"N": len(yt), "D": v.D, "M": len(z), "X": xt, "Z": z, "y": yt}
    points = []
    for k in grid:
        # The median of three fresh fits (each the same computation): on this shared machine one
        # timing of a fraction of a second can be twice another.
        times = []
        for _ in range(3):
            t = time.time()
            fit = model.cavi(data, iterations=k, progress=False)
            times.append(time.time() - t)
        seconds = sorted(times)[1]
        pred = fit.predict(test)
        points.append({"iterations": k, "seconds": seconds, "nll": v.nll(pred["p_1_1"].to_numpy(), yt)})
        print({"gpmc": points[-1]}, flush=True)
    return points


def one_size(n, ntest, rng):
    from sklearn.cluster import MiniBatchKMeans

    x, y = v.synthetic(n, rng)
    xt, yt = v.synthetic(ntest, rng)
    z = MiniBatchKMeans(v.M, n_init=1, random_state=0, batch_size=4096).fit(x).cluster_centers_
    ours = run_gpmc(x, y, xt, yt, z, [1, 2, 3, 4, 6, 8, 12, 16, 24, 40, 100])
    theirs = {g: v.run_gpflow(x, y, xt, yt, z, g, steps, every)
              for g, steps, every in [(0.1, 300, 5), (0.5, 100, 2), (1.0, 60, 1)]}
    return ours, theirs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[20000, 200000])
    a = ap.parse_args()
    import gpflow
    import tensorflow as tf

    lines = [
        "# CAVI in one process: gpmc's Python API against GPflow SVGP",
        "",
        f"Written by `bench/.venv-gpflow/bin/python bench/cavi_in_process.py` on "
        f"{datetime.date.today()}; {platform.machine()}, {os.cpu_count()} cores; gpflow "
        f"{gpflow.__version__}, tensorflow {tf.__version__}.",
        "",
        " ".join(p.replace("\n", " ") for p in (__doc__ or "").split("\n\n")[:2]),
        "",
        "| N | method | final test NLL | time to within 1 % of its final NLL | iterations then | "
        "GPflow's best time ÷ gpmc's |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    rng = np.random.default_rng(20261127)
    costs = []
    for n in a.sizes:
        ours, theirs = one_size(n, 5000, rng)
        # Seconds per CAVI iteration (between 4 and 8 iterations) and per natgrad step.
        by_k = {p["iterations"]: p["seconds"] for p in ours}
        per_it = (by_k[8] - by_k[4]) / 4 if 8 in by_k and 4 in by_k else float("nan")
        g1 = theirs.get(1.0) or []
        per_step = (g1[-1]["seconds"] - g1[0]["seconds"]) / max(1, g1[-1]["iterations"] - g1[0]["iterations"]) if len(g1) > 1 else float("nan")
        costs.append(f"N = {n}: gpmc {by_k.get(1, float('nan')):.2f} s for a one-iteration fit "
                     f"(binding and the features Φ included), then {per_it:.3f} s an iteration; "
                     f"GPflow {per_step:.3f} s a natural-gradient step (γ = 1)")
        t_ours, k_ours = v.time_to_within(ours, ours[-1]["nll"])
        best = min((v.time_to_within(p, p[-1]["nll"])[0] for p in theirs.values() if p),
                   default=float("nan"))
        lines.append(f"| {n} | gpmc CAVI | {ours[-1]['nll']:.4f} | {t_ours:.2f} s | {k_ours} | "
                     f"{best / t_ours:.2f} |")
        for g, pts in theirs.items():
            if not pts:
                lines.append(f"| {n} | GPflow natgrad γ = {g} | diverged | — | — | |")
                continue
            t, k = v.time_to_within(pts, pts[-1]["nll"])
            lines.append(f"| {n} | GPflow natgrad γ = {g} | {pts[-1]['nll']:.4f} | {t:.2f} s | {k} | |")
    lines += ["", "Cost per iteration: " + "; ".join(costs) + ".", ""]
    path = os.path.join(ROOT, "docs", "benchmarks_cavi_in_process.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    print("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
