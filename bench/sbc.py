#!/usr/bin/env python3
"""Simulation-based calibration of gpmc's methods on models that exercise each of its moves
(issue 50): `gpmc.sbc` with a simulator per model written here, apart from the model text, so
that the check does not share code with what it checks. Writes docs/calibration.md (a table
model x method -> calibrated or not, with the numbers) and one image per run under
docs/calibration/.

    python bench/sbc.py                      # every model and method, 500 simulations each
    python bench/sbc.py --simulations 200 --only linear,groups --methods gibbs

Gibbs and NUTS are exact: their ranks must be uniform (no ECDF band exceeded at 95 %). CAVI,
the particle flow and SVI are approximations: their miscalibration is reported as what it is,
with its size (the largest ECDF deviation from the uniform's, in percentage points)."""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

import gpmc

ROOT = pathlib.Path(__file__).resolve().parents[1]


def sqexp(x, variance, lengthscale):
    d = x[:, None] - x[None, :]
    return variance * np.exp(-0.5 * (d / lengthscale) ** 2) + 1e-8 * np.eye(len(x))


def linear(rng, n=8, d=2):
    tau, w, b = rng.gamma(3.0, 1.0), rng.normal(0, 1, d), rng.normal()
    X = rng.normal(0, 1, (n, d))
    y = X @ w + b + rng.normal(0, 1 / np.sqrt(tau), n)
    return {"tau": tau, "w": w, "b": b}, {"N": n, "D": d, "X": X, "y": y}


def logistic(rng, n=20, d=2):
    w, X = rng.normal(0, 1.5, d), rng.normal(0, 1, (n, d))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ w))).astype(int)
    return {"w": w}, {"N": n, "D": d, "X": X, "y": y}


def groups(rng, per=2, k=5):
    s = rng.gamma(4.0, 1 / 4.0)
    a = rng.normal(0, s, k)
    g = np.repeat(np.arange(1, k + 1), per)
    return {"s": s, "a": a}, {"N": per * k, "G": k, "g": g, "y": a[g - 1] + rng.normal(0, 0.5, per * k)}


def student_t(rng, n=12):
    w, b, x = rng.normal(), rng.normal(), rng.normal(0, 1, n)
    return {"w": w, "b": b}, {"N": n, "x": x, "y": x * w + b + 0.5 * rng.standard_t(3.0, n)}


def horseshoe(rng, n=15, d=3):
    tau = rng.gamma(4.0, 1 / 8.0)
    w = rng.normal(0, 1, d) * tau * np.abs(rng.standard_cauchy(d))
    X = rng.normal(0, 1, (n, d))
    return {"tau": tau, "w": w}, {"N": n, "D": d, "X": X, "y": X @ w + rng.normal(0, 1, n)}


def gp_classifier(rng, n=12):
    x = np.sort(rng.uniform(-2, 2, n))
    f = np.linalg.cholesky(sqexp(x, 2.0, 0.8)) @ rng.normal(0, 1, n)
    y = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-f)), 1, -1)
    return {"f": f}, {"N": n, "x": x, "y": y}


def gp_kernel(rng, n=12):
    ell, var = rng.gamma(6.0, 1 / 6.0), rng.gamma(4.0, 1 / 4.0)
    x = np.sort(rng.uniform(-2, 2, n))
    f = np.linalg.cholesky(sqexp(x, var, ell)) @ rng.normal(0, 1, n)
    return {"lengthscale": ell, "variance": var, "f": f}, {"N": n, "x": x, "y": f + rng.normal(0, 0.3, n)}


# name -> (model text, simulator, methods). Each model exercises one of gpmc's moves.
MODELS = {
    # The conjugate Gamma update of a precision and a dense Gaussian block.
    "linear": (
        """
data { N : int; D : int; X : matrix[N, D]; y : vector[N]; }
hyper { tau : real in 0.. ~ gamma(3.0, 1.0); }
latent { w : vector[D] ~ normal(0, 1); b : real ~ normal(0, 1); }
model { y ~ normal(X * w + b, 1 / sqrt(tau)); }
""",
        linear,
        ["gibbs", "nuts", "cavi", "gpf"],
    ),
    # Pólya-Gamma augmentation of a logistic likelihood.
    "logistic": (
        """
data { N : int; D : int; X : matrix[N, D]; y : int[N] in {0, 1}; }
latent { w : vector[D] ~ normal(0, 1.5); }
model { y ~ bernoulli_logit(X * w); }
""",
        logistic,
        ["gibbs", "nuts", "cavi", "gpf"],
    ),
    # A normal prior's scale, slice sampled with the coefficients integrated out (a funnel).
    "groups": (
        """
data { N : int; G : int; g : int[N] in 1..G; y : vector[N]; }
hyper { s : real in 0.. ~ gamma(4.0, 4.0); }
latent { a : vector[G] ~ normal(0, s); }
model { y ~ normal(a[g], 0.5); }
""",
        groups,
        ["gibbs", "nuts", "cavi"],
    ),
    # A Student-t likelihood as a scale mixture (an auxiliary Gamma precision per row).
    "student_t": (
        """
data { N : int; x : vector[N]; y : vector[N]; }
latent { w : real ~ normal(0, 1); b : real ~ normal(0, 1); }
model { y ~ student_t(3.0, x * w + b, 0.5); }
""",
        student_t,
        ["gibbs", "cavi", "gpf"],
    ),
    # The horseshoe: local scales integrated out, the global scale slice sampled.
    "horseshoe": (
        """
data { N : int; D : int; X : matrix[N, D]; y : vector[N]; }
hyper { tau : real in 0.. ~ gamma(4.0, 8.0); }
latent { w : vector[D] ~ horseshoe(tau); }
model { y ~ normal(X * w, 1.0); }
""",
        horseshoe,
        ["gibbs"],
    ),
    # A full GP classifier with a fixed kernel (Pólya-Gamma, N x N blocks).
    "gp_classifier": (
        """
data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
latent { f : vector[N] ~ gp(x, 2.0 * sqexp(0.8)); }
model { y ~ bernoulli_logit(f); }
""",
        gp_classifier,
        ["gibbs", "cavi", "gpf"],
    ),
    # A GP regression whose kernel is sampled (slice steps with the GP integrated out).
    "gp_kernel": (
        """
data { N : int; x : vector[N]; y : vector[N]; }
hyper {
  lengthscale : real in 0.. ~ gamma(6.0, 6.0);
  variance : real in 0.. ~ gamma(4.0, 4.0);
}
latent { f : vector[N] ~ gp(x, variance * sqexp(lengthscale)); }
model { y ~ normal(f, 0.3); }
""",
        gp_kernel,
        ["gibbs"],
    ),
}

SETTINGS = {"draws": 99, "warmup": 200, "thin": 5}

#: Hyperparameters with priors: the variational methods hold them at their start (and warn),
#: so their rows rank the latents only.
HELD_BY_APPROXIMATIONS = {"tau", "s", "lengthscale", "variance"}


def deviation(result):
    """The largest |ECDF − uniform| over the ECDF points and parameters, in percentage points."""
    from gpmc import _sbc

    z = np.arange(1, _sbc.ECDF_POINTS + 1) / (_sbc.ECDF_POINTS + 1)
    p = _sbc._uniform_ecdf(result.draws, z)
    return 100 * max(np.max(np.abs(_sbc._ecdf(r, result.draws, z) - p)) for r in result.ranks.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--simulations", type=int, default=500)
    ap.add_argument("--only", default="")
    ap.add_argument("--methods", default="gibbs,nuts,cavi,gpf")
    ap.add_argument("--out", default=str(ROOT / "docs" / "calibration.md"))
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    methods = args.methods.split(",")
    images = pathlib.Path(args.out).with_suffix("")
    images.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, (source, simulate, supported) in MODELS.items():
        if only and name not in only:
            continue
        model = gpmc.Model(source)
        for method in [m for m in methods if m in supported]:
            t0 = time.time()
            truth, _ = simulate(np.random.default_rng(0))
            parameters = [
                k for k in truth if method in ("gibbs", "nuts") or k not in HELD_BY_APPROXIMATIONS
            ]
            r = gpmc.sbc(
                model, simulate, args.simulations, method=method, parameters=parameters,
                progress=False, **SETTINGS,
            )
            row_ = row(r, name, method, images, args.out, time.time() - t0, args.simulations)
            rows.append(row_)
    write(args.out, rows, args.simulations)


def row(r, name, method, images, out, seconds, simulations):
    """One table row of a calibration run (its image written), printed as it is made."""
    table = r.table()
    image = images / f"{name.split(' ')[0]}_{method}.png"
    # The eight parameters furthest from uniform (a GP's 36 values would make a 90-panel image).
    r.plot(image, parameters=list(table.sort_values("ecdf_p")["parameter"][:8]))
    row = {
        "model": name, "method": method, "simulations": simulations - len(r.failures),
        "failures": len(r.failures), "parameters": len(table),
        "outside": list(table.loc[table["ecdf_outside"], "parameter"]),
        "family_outside": list(table.loc[table["family_outside"], "parameter"]),
        "min_ecdf_p": table["ecdf_p"].min(), "min_band_p": table["band_p"].min(),
        "gamma": table["band_gamma"].iloc[0], "min_chi2_p": table["chi2_p"].min(),
        "deviation": deviation(r), "seconds": seconds,
        "image": image.relative_to(pathlib.Path(out).parent),
    }
    print(
        f"{name:14s} {method:6s} outside={row['outside'] or '-'} family={row['family_outside'] or '-'} "
        f"min ecdf p={row['min_ecdf_p']:.3g} (band {row['gamma']:.3g}) max dev {row['deviation']:.1f} pp, "
        f"{seconds:.0f} s, {len(r.failures)} failures",
        flush=True,
    )
    return row


def write(path, rows, simulations, title="every method", skipped=()):
    exact = {"gibbs", "nuts"}
    lines = [
        f"# Calibration: simulation-based calibration of {title} (generated by `bench/{pathlib.Path(sys.argv[0]).name}`)",
        "",
        f"Each row: {simulations} data sets drawn from the model's prior and likelihood by a simulator",
        f"written apart from the model (bench/{pathlib.Path(sys.argv[0]).name}), each fitted with one chain of "
        f"{SETTINGS['draws']} draws (warm-up {SETTINGS['warmup']}, thinned by {SETTINGS['thin']}) or "
        f"{SETTINGS['draws']} draws from q, and each parameter's rank among the draws. Calibrated: no "
        "parameter's rank ECDF leaves its 95 % simultaneous band (Säilynoja et al. 2022) at the family's",
        "level (Bonferroni over the row's parameters: a GP's dozen values leave their own 95 % bands by chance",
        "alone); `outside its own band` lists those that leave it at 95 % each. `min ECDF p` is the smallest",
        "pointwise tail probability against the band's level `γ`, `band p` the smallest band-test p-value, `max dev`",
        "the largest |ECDF − uniform| in percentage points, `χ² p` the smallest histogram test's p-value. Gibbs and NUTS",
        "are exact and must be calibrated; CAVI, GPF and SVI are approximations whose miscalibration is",
        "their approximation's, reported with its size. Images: rank histograms and ECDF-difference plots",
        "of the eight parameters furthest from uniform (smallest ECDF p) of each row.",
        "",
        "| model | method | calibrated | parameters | outside its own band | min ECDF p (γ) | band p | max dev (pp) | min χ² p | failed fits | seconds | plots |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        calibrated = "yes" if not r["family_outside"] else (
            "**no**" if r["method"] in exact else "no (approximation)")
        lines.append(
            f"| {r['model']} | {r['method']} | {calibrated} | {r['parameters']} | {', '.join(r['outside']) or '—'} | "
            f"{r['min_ecdf_p']:.3g} ({r['gamma']:.3g}) | {r['min_band_p']:.3g} | {r['deviation']:.1f} | "
            f"{r['min_chi2_p']:.3g} | {r['failures']} | {r['seconds']:.0f} | [png]({r['image']}) |"
        )
    if skipped:
        lines += ["", "Not run, and why:", ""]
        lines += [f"- `{name}`: {why}." for name, why in skipped]
    # The findings written by hand below the table (from the runs they name) are kept.
    old = pathlib.Path(path).read_text() if pathlib.Path(path).exists() else ""
    tail = old[old.index("\n## Findings"):] if "\n## Findings" in old else ""
    pathlib.Path(path).write_text("\n".join(lines) + "\n" + tail)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
