"""One fixed-kernel comparison model under PyMC + nutpie, in nutpie's own virtualenv.

bench/compare.py runs this with bench/.venv-nutpie's Python (PyMC and nutpie do not share
NumPyro's virtualenv): it reads a problem written by compare.py (`--problem P.npz`: inputs `X`,
observations `y`, the kernel's `var` and `ell`, the likelihood `lik`), builds the same model
as compare.py's NumPyro one (the GP non-centred, `f = L z`, `L` the Cholesky factor of the
fixed kernel matrix plus 10⁻⁶ I), samples 2 chains in parallel with nutpie, and writes the
latent draws (chains × draws × coordinates, in NumPyro's order) and the wall time, from before
the model is compiled to the draws in memory (as NumPyro's includes its JIT compilation).
A full-Bayes problem (compare.py's `full_bayes_datasets`: Gamma priors on the hyperparameters)
adds the hyperparameters' draws.

    python bench/nutpie_worker.py --problem P.npz --draws D --warmup W --out R.npz [--backend numba|jax]
"""
import argparse
import time

import numpy as np


def sqexp(X, variance, lengthscale):
    d2 = ((X[:, None, :] - X[None, :, :]) / lengthscale) ** 2
    return variance * np.exp(-0.5 * d2.sum(-1))


def pymc_model(X, y, var, ell, lik):
    """compare.py's `numpyro_model`, written in PyMC: same priors, same likelihoods."""
    import pymc as pm

    n = len(X)
    L = np.linalg.cholesky(sqexp(X, var, ell) + 1e-6 * np.eye(n))
    with pm.Model() as model:
        if lik == "logistic_softmax":
            z = pm.Normal("z", 0.0, 1.0, shape=(n, 3))
            F = pm.Deterministic("F", pm.math.dot(L, z))
            s = pm.math.sigmoid(F)
            pm.Categorical("y", p=s / s.sum(axis=-1, keepdims=True), observed=y - 1)
            return model
        z = pm.Normal("z", 0.0, 1.0, shape=n)
        f = pm.Deterministic("f", pm.math.dot(L, z))
        if lik.startswith("hetero"):
            zg = pm.Normal("zg", 0.0, 1.0, shape=n)
            g = pm.Deterministic("g", pm.math.dot(L, zg))
            sd = 1.0 / pm.math.sqrt(20.0 * pm.math.sigmoid(g))
            if lik == "hetero_normal":
                pm.Normal("y", mu=f, sigma=sd, observed=y)
            else:
                pm.StudentT("y", nu=4.0, mu=f, sigma=sd, observed=y)
        elif lik == "logistic":
            pm.Bernoulli("y", logit_p=f, observed=(y + 1) // 2)
        elif lik == "student_t":
            pm.StudentT("y", nu=4.0, mu=f, sigma=0.5, observed=y)
        elif lik == "laplace":
            pm.Laplace("y", mu=f, b=0.5, observed=y)
        elif lik == "poisson_logistic":
            pm.Poisson("y", mu=10.0 * pm.math.sigmoid(f), observed=y)
        else:
            raise SystemExit(f"nutpie_worker: unknown likelihood {lik!r}")
    return model


def pymc_full_bayes_model(X, y, lik, hypers):
    """compare.py's `numpyro_full_bayes_model` in PyMC: Gamma priors on the hyperparameters
    (`hypers`: name, shape, rate, role), the GP non-centred with `L` the Cholesky factor of
    `K(θ) + 10⁻⁶ I`, one factorisation per gradient."""
    import pymc as pm
    import pytensor.tensor as pt

    n = len(X)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    with pm.Model() as model:
        h = {role: pm.Gamma(name, alpha=a, beta=b) for name, a, b, role in hypers}
        K = h["var"] * pt.exp(-0.5 * d2 / h["ell"] ** 2) + 1e-6 * np.eye(n)
        L = pt.linalg.cholesky(K)
        if lik == "logistic_softmax":
            z = pm.Normal("z", 0.0, 1.0, shape=(n, 3))
            F = pm.Deterministic("F", pt.dot(L, z))
            s = pm.math.sigmoid(F)
            pm.Categorical("y", p=s / s.sum(axis=-1, keepdims=True), observed=y - 1)
            return model
        z = pm.Normal("z", 0.0, 1.0, shape=n)
        f = pm.Deterministic("f", pt.dot(L, z))
        if lik == "logistic":
            pm.Bernoulli("y", logit_p=f, observed=(y + 1) // 2)
        elif lik == "student_t":
            pm.StudentT("y", nu=4.0, mu=f, sigma=h["scale"], observed=y)
        else:
            raise SystemExit(f"nutpie_worker: unknown full-Bayes likelihood {lik!r}")
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True)
    ap.add_argument("--draws", type=int, required=True)
    ap.add_argument("--warmup", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", choices=("numba", "jax"), default="numba")
    args = ap.parse_args()
    import nutpie

    p = np.load(args.problem, allow_pickle=False)
    lik = str(p["lik"])
    # A full-Bayes problem carries its hyperparameters' priors (names, shapes, rates, roles).
    hypers = ([(str(nm), float(a), float(b), str(r)) for nm, a, b, r in
               zip(p["hyper_names"], p["hyper_shapes"], p["hyper_rates"], p["hyper_roles"])]
              if "hyper_names" in p.files else None)
    t = time.time()
    if hypers is None:
        model = pymc_model(p["X"], p["y"], float(p["var"]), float(p["ell"]), lik)
    else:
        model = pymc_full_bayes_model(p["X"], p["y"], lik, hypers)
    if args.backend == "jax":
        compiled = nutpie.compile_pymc_model(model, backend="jax", gradient_backend="jax")
    else:
        compiled = nutpie.compile_pymc_model(model)
    compile_s = time.time() - t
    trace = nutpie.sample(compiled, draws=args.draws, tune=args.warmup, chains=2, cores=2,
                          seed=1, progress_bar=False)
    post = trace.posterior
    latents = ["F"] if lik == "logistic_softmax" else (["f", "g"] if lik.startswith("hetero") else ["f"])
    arr = np.concatenate(
        [post[v].values.reshape(post[v].shape[0], post[v].shape[1], -1) for v in latents], -1)
    wall = time.time() - t
    steps = trace.sample_stats["n_steps"].values.mean() if "n_steps" in trace.sample_stats else np.nan
    hyp = {f"hyper_{h[0]}": post[h[0]].values for h in hypers or []}
    np.savez(args.out, arr=arr, wall=wall, compile_seconds=compile_s, leapfrog=steps, **hyp)


if __name__ == "__main__":
    main()
