"""One comparison model under PyMC + nutpie, in nutpie's own virtualenv.

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

from compare import sqexp  # the kernel compare.py's problems are defined with


def pymc_model(X, y, lik, var=None, ell=None, hypers=None):
    """compare.py's NumPyro models written in PyMC, the GP non-centred (`f = L z`): with the
    kernel fixed (`var`, `ell`: `numpyro_model`, `L` factored once), or with Gamma priors on
    its hyperparameters (`hypers`: name, shape, rate, role; `numpyro_full_bayes_model`, `L`
    the Cholesky factor of `K(θ) + 10⁻⁶ I`, one factorisation per gradient)."""
    import pymc as pm
    import pytensor.tensor as pt

    n = len(X)
    with pm.Model() as model:
        if hypers is None:
            L = np.linalg.cholesky(sqexp(X, var, ell) + 1e-6 * np.eye(n))
            scale = 0.5
        else:
            h = {role: pm.Gamma(name, alpha=a, beta=b) for name, a, b, role in hypers}
            d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
            L = pt.linalg.cholesky(h["var"] * pt.exp(-0.5 * d2 / h["ell"] ** 2) + 1e-6 * np.eye(n))
            scale = h["scale"] if lik == "student_t" else None
        if lik == "logistic_softmax":
            z = pm.Normal("z", 0.0, 1.0, shape=(n, 3))
            F = pm.Deterministic("F", pt.dot(L, z))
            s = pm.math.sigmoid(F)
            pm.Categorical("y", p=s / s.sum(axis=-1, keepdims=True), observed=y - 1)
            return model
        z = pm.Normal("z", 0.0, 1.0, shape=n)
        f = pm.Deterministic("f", pt.dot(L, z))
        if lik.startswith("hetero"):
            zg = pm.Normal("zg", 0.0, 1.0, shape=n)
            g = pm.Deterministic("g", pt.dot(L, zg))
            sd = 1.0 / pm.math.sqrt(20.0 * pm.math.sigmoid(g))
            if lik == "hetero_normal":
                pm.Normal("y", mu=f, sigma=sd, observed=y)
            else:
                pm.StudentT("y", nu=4.0, mu=f, sigma=sd, observed=y)
        elif lik == "logistic":
            pm.Bernoulli("y", logit_p=f, observed=(y + 1) // 2)
        elif lik == "student_t":
            pm.StudentT("y", nu=4.0, mu=f, sigma=scale, observed=y)
        elif lik == "laplace":
            pm.Laplace("y", mu=f, b=0.5, observed=y)
        elif lik == "poisson_logistic":
            pm.Poisson("y", mu=10.0 * pm.math.sigmoid(f), observed=y)
        else:
            raise SystemExit(f"nutpie_worker: unknown likelihood {lik!r}")
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
        model = pymc_model(p["X"], p["y"], lik, var=float(p["var"]), ell=float(p["ell"]))
    else:
        model = pymc_model(p["X"], p["y"], lik, hypers=hypers)
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
