#!/usr/bin/env python3
"""Simulation-based calibration of every example model gpmc ships (`models/*.gpm` and
`models/eight_schools.stan`), as written, under Gibbs (issue 50). Each simulator below is written
from the model's text and the likelihoods' definitions in docs/language.md, apart from gpmc's
code, at a small size (12 rows) so that 500 fits take minutes. Writes
docs/calibration_examples.md and one image per model under docs/calibration_examples/.

    python bench/sbc_examples.py                       # every example, 500 simulations
    python bench/sbc_examples.py --simulations 200 --only probit_gp,negbin_gp

Hyperparameters the example learns by type-II maximum likelihood (`learn(v)`) are a point
estimate, not a posterior: the calibration is of the latents given them, so `learn(v)` is read
as the constant `v` (said in the table). The examples that are not a Bayesian model of the data
are named with the reason and not run: a pseudo-likelihood (the Bayesian SVM's hinge factor does
not normalise over the labels) and the robust β-divergence models (a generalised posterior, by
design not the Bayes posterior of the likelihood)."""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
import time

import numpy as np

import gpmc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import sbc as moves  # noqa: E402 - the shared table writer and deviation

ROOT = pathlib.Path(__file__).resolve().parents[1]
N = 12


def logistic(t):
    return 1 / (1 + np.exp(-t))


def phi(t):
    from scipy.special import ndtr

    return ndtr(t)


def inputs(rng, n=N, d=None):
    """1-D inputs on [-2, 2], sorted; or an n × d matrix."""
    if d is None:
        return np.sort(rng.uniform(-2, 2, n))
    return rng.uniform(-2, 2, (n, d))


def sqdist(x):
    x = x.reshape(len(x), -1)
    return ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)


def sqexp(x, lengthscale, variance=1.0):
    return variance * np.exp(-0.5 * sqdist(x) / lengthscale**2)


def matern52(x, lengthscale):
    r = np.sqrt(sqdist(x)) / lengthscale
    return (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)


def gp(rng, k, columns=None):
    """A draw from N(0, k) (a tiny jitter only for the factorisation)."""
    chol = np.linalg.cholesky(k + 1e-9 * np.eye(len(k)))
    if columns is None:
        return chol @ rng.normal(0, 1, len(k))
    return chol @ rng.normal(0, 1, (len(k), columns))


def gp_classification(rng):
    X = inputs(rng, d=2)
    f = gp(rng, sqexp(X, 1.0, 2.0))
    y = np.where(rng.uniform(size=N) < logistic(f), 1, -1)
    return {"f": f}, {"N": N, "D": 2, "X": X, "y": y}


def gumbel_gp(rng):
    beta = rng.gamma(4.0, 1 / 10.0)
    x = inputs(rng)
    f = gp(rng, sqexp(x, 1.0, 2.0))
    # -(y-f)/β - exp(-(y-f)/β) - log β: a Gumbel (maximum) law, location f, scale β.
    return {"beta": beta, "f": f}, {"N": N, "x": x, "y": f + rng.gumbel(0.0, beta, N)}


def heteroscedastic(rng, student_nu=None):
    x = inputs(rng)
    k = sqexp(x, 1.0)
    f, g = gp(rng, k), gp(rng, k)
    scale = 1 / np.sqrt(20.0 * logistic(g))
    noise = rng.normal(0, 1, N) if student_nu is None else rng.standard_t(student_nu, N)
    return {"f": f, "g": g}, {"N": N, "x": x, "y": f + scale * noise}


def hierarchical_logistic(rng, groups=4, per=4):
    su, sv = np.abs(rng.normal(0, 1, 2))
    a, b = rng.normal(0, 2, 2)
    u, v = rng.normal(0, su, groups), rng.normal(0, sv, groups)
    n = groups * per
    g = np.repeat(np.arange(1, groups + 1), per)
    X = rng.normal(0, 1, (n, 1))
    eta = a + X[:, 0] * (b + v[g - 1]) + u[g - 1]
    y = (rng.uniform(size=n) < logistic(eta)).astype(int)
    truth = {"su": su, "sv": sv, "a": a, "b": b, "u": u, "v": v}
    return truth, {"N": n, "G": groups, "g": g, "X": X, "y": y}


def laplace_regression(rng):
    x = inputs(rng)
    f = gp(rng, matern52(x, 1.0))
    return {"f": f}, {"N": N, "x": x, "y": f + rng.laplace(0, 0.3, N)}


def linear_regression(rng, d=2):
    tau = rng.gamma(2.0, 1.0)
    w, b = rng.normal(0, 10, d), rng.normal(0, 10)
    X = rng.normal(0, 1, (N, d))
    y = X @ w + b + rng.normal(0, 1 / np.sqrt(tau), N)
    return {"tau": tau, "w": w, "b": b}, {"N": N, "D": d, "X": X, "y": y}


def logistic_regression(rng, n=20, d=2):
    w, b = rng.normal(0, 2.5, d), rng.normal(0, 5)
    X = rng.normal(0, 1, (n, d))
    y = (rng.uniform(size=n) < logistic(X @ w + b)).astype(int)
    return {"w": w, "b": b}, {"N": n, "D": d, "X": X, "y": y}


def matern32_regression(rng, rho=0.5):
    x = inputs(rng)
    f = gp(rng, sqexp(x, 1.0))
    # sqrt(3)/(4ρ) (1 + a|r|) exp(-a|r|), a = sqrt(3)/ρ: |r| is an even mixture of a
    # Gamma(1, 1/a) and a Gamma(2, 1/a), the sign a fair coin.
    a = np.sqrt(3) / rho
    size = np.abs(rng.gamma(rng.integers(1, 3, N), 1 / a))
    return {"f": f}, {"N": N, "x": x, "y": f + rng.choice([-1, 1], N) * size}


def multiclass_gp(rng, classes=3):
    X = inputs(rng, d=2)
    F = gp(rng, sqexp(X, 1.0), columns=classes)
    # categorical_logistic_softmax: P(y = c) ∝ σ(F[i, c]) (docs/language.md).
    p = logistic(F)
    p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(classes, p=row) + 1 for row in p])
    return {"F": F}, {"N": N, "D": 2, "C": classes, "X": X, "y": y}


def negbin_gp(rng, r=3.0):
    x = inputs(rng)
    f = gp(rng, sqexp(x, 1.0))
    # Successes before r failures, success probability σ(f): numpy counts failures before r
    # successes, so its success probability is σ(-f).
    return {"f": f}, {"N": N, "x": x, "y": rng.negative_binomial(r, logistic(-f))}


def poisson_gp(rng):
    x = inputs(rng)
    f = gp(rng, sqexp(x, 1.0))
    return {"f": f}, {"N": N, "x": x, "y": rng.poisson(10.0 * logistic(f))}


def poisson_log_gp(rng):
    x = inputs(rng)
    f, b = gp(rng, sqexp(x, 1.0)), rng.normal(0, 2)
    E = rng.uniform(0.5, 2.0, N)
    return {"f": f, "b": b}, {"N": N, "x": x, "E": E, "y": rng.poisson(E * np.exp(f + b))}


def probit_gp(rng):
    x = inputs(rng)
    f = gp(rng, sqexp(x, 1.0, 2.0))
    return {"f": f}, {"N": N, "x": x, "y": (rng.uniform(size=N) < phi(f)).astype(int)}


def robust_gp_hyperpriors(rng):
    nu, sigma = rng.gamma(8.0, 1 / 2.0), rng.lognormal(-1.2, 0.5)
    ell, var = rng.lognormal(0.0, 0.5), rng.gamma(4.0, 1 / 4.0)
    x = inputs(rng)
    f = gp(rng, sqexp(x, ell, var))
    y = f + sigma * rng.standard_t(nu, N)
    truth = {"nu": nu, "sigma": sigma, "lengthscale": ell, "variance": var, "f": f}
    return truth, {"N": N, "x": x, "y": y}


def skew_normal_gp(rng, alpha=4.0, s=0.5):
    x = inputs(rng)
    f = gp(rng, sqexp(x, 1.0, 2.0))
    # A skew-normal draw: δ|u₀| + sqrt(1 − δ²) u₁ with δ = α / sqrt(1 + α²).
    delta = alpha / np.sqrt(1 + alpha**2)
    z = delta * np.abs(rng.normal(0, 1, N)) + np.sqrt(1 - delta**2) * rng.normal(0, 1, N)
    return {"f": f}, {"N": N, "x": x, "y": f + s * z}


def student_t_regression(rng):
    x = inputs(rng)
    f = gp(rng, sqexp(x, 1.0))
    return {"f": f}, {"N": N, "x": x, "y": f + 0.3 * rng.standard_t(4.0, N)}


def eight_schools(rng, schools=8):
    mu, tau = rng.normal(0, 5), abs(5 * rng.standard_cauchy())
    theta = rng.normal(mu, tau, schools)
    sigma = rng.uniform(5, 20, schools)
    return {"mu": mu, "tau": tau, "theta": theta}, {
        "J": schools, "y": rng.normal(theta, sigma), "sigma": sigma,
    }


#: file -> simulator, or the reason it is not a Bayesian model SBC can check.
EXAMPLES = {
    "bayesian_svm.gpm": "a pseudo-likelihood: the hinge factor exp(−2 max(1 − y f, 0)) does not "
    "sum to one over the labels, so there is no likelihood to simulate labels from",
    "eight_schools.stan": eight_schools,
    "gp_classification.gpm": gp_classification,
    "gumbel_gp.gpm": gumbel_gp,
    "heteroscedastic_gp.gpm": heteroscedastic,
    "heteroscedastic_student_t.gpm": lambda rng: heteroscedastic(rng, student_nu=4.0),
    "hierarchical_logistic.gpm": hierarchical_logistic,
    "laplace_regression.gpm": laplace_regression,
    "linear_regression.gpm": linear_regression,
    "logistic_regression.gpm": logistic_regression,
    "matern32_regression.gpm": matern32_regression,
    "multiclass_gp.gpm": multiclass_gp,
    "negbin_gp.gpm": negbin_gp,
    "poisson_gp.gpm": poisson_gp,
    "poisson_log_gp.gpm": poisson_log_gp,
    "probit_gp.gpm": probit_gp,
    "robust_gp_classification.gpm": "a generalised (β-divergence) posterior: by design not the "
    "Bayes posterior of its likelihood, so its ranks are not uniform",
    "robust_gp_hyperpriors.gpm": robust_gp_hyperpriors,
    "robust_gp_regression.gpm": "a generalised (β-divergence) posterior: by design not the Bayes "
    "posterior of its likelihood, so its ranks are not uniform",
    "skew_normal_gp.gpm": skew_normal_gp,
    "sparse_gp_classification.gpm": "its prior is FITC at inducing points gpmc chooses by k-means++ "
    "from the inputs: a simulator apart from gpmc cannot draw from that prior without "
    "re-implementing the choice (the full-GP classifiers above carry the same likelihood)",
    "student_t_regression.gpm": student_t_regression,
}


def source(path):
    """The example as written, with `learn(v)` read as the constant `v` (the calibration is
    of the latents given a learned hyperparameter)."""
    text = path.read_text()
    learned = re.findall(r"learn\(([^)]*)\)", text)
    return re.sub(r"learn\(([^)]*)\)", r"\1", text), bool(learned)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--simulations", type=int, default=500)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default=str(ROOT / "docs" / "calibration_examples.md"))
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    images = pathlib.Path(args.out).with_suffix("")
    images.mkdir(parents=True, exist_ok=True)
    models = sorted(p.name for p in (ROOT / "models").iterdir() if p.suffix in (".gpm", ".stan"))
    missing = [m for m in models if m not in EXAMPLES]
    if missing:
        raise SystemExit(f"examples without a simulator or a reason: {missing}")
    rows, skipped = [], []
    for name in models:
        stem = name.rsplit(".", 1)[0]
        if only and stem not in only:
            continue
        simulate = EXAMPLES[name]
        if isinstance(simulate, str):
            skipped.append((name, simulate))
            continue
        text, learned = source(ROOT / "models" / name)
        model = gpmc.Model(text) if name.endswith(".gpm") else gpmc.Model.from_stan(text)
        t0 = time.time()
        r = gpmc.sbc(model, simulate, args.simulations, method="gibbs", progress=False,
                     **moves.SETTINGS)
        row = moves.row(r, stem + (" (learn → fixed)" if learned else ""), "gibbs", images,
                        args.out, time.time() - t0, args.simulations)
        rows.append(row)
    moves.write(args.out, rows, args.simulations, title="every example model under Gibbs",
                skipped=skipped)


if __name__ == "__main__":
    sys.exit(main())
