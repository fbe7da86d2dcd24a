"""Funnels: hierarchical models where a scale meets the latents it scales, gpmc against NumPyro
NUTS on the same model and data (issue 31, item 4). Not a test: run on purpose, prints ratios.

    bench/.venv/bin/python bench/funnel.py [--seeds 3] [--draws 1000] [--only heteroscedastic]

(`bench/run` makes the virtualenv; `cargo build --release -p gpmc` first.) For every problem:
* gpmc: `gpmc infer` (4 chains, 200 warm-up sweeps), its default plan and `--generic` (every
  factor through the generic update, where a scale hyperparameter is sampled given the latents
  and interwoven with its non-centred move); wall time of the whole process; the minimum bulk
  ESS over every parameter (hyperparameters and latents) from its summary.json;
* NumPyro: NUTS on the same model written the same (centred) way and, for eight schools, the
  non-centred way Stan users write; 4 chains run sequentially (the machine has 2 cores and gpmc
  runs its 4 chains on them), wall time including compilation, stopped once the draws exist;
  bulk ESS by ArviZ (the estimator gpmc's summary implements); divergences.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPMC = os.path.join(ROOT, "target", "release", "gpmc")

EIGHT = """
data { J : int; y : vector[J]; sigma : vector[J] in 0..; }
hyper { tau : real in 0.. ~ cauchy(0, 5); }
latent { mu : real ~ normal(0, 5); eta : vector[J] ~ normal(0, tau); }
model { for j in 1..J { y[j] ~ normal(mu + eta[j], sigma[j]); } }
"""
EIGHT_DATA = {"J": 8, "y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}


def numpyro_models():
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    def eight_centred(y, sigma):
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        eta = numpyro.sample("eta", dist.Normal(0.0, tau).expand([len(y)]))
        numpyro.sample("y", dist.Normal(mu + eta, sigma), obs=y)

    def eight_non_centred(y, sigma):
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        eta_t = numpyro.sample("eta_tilde", dist.Normal(0.0, 1.0).expand([len(y)]))
        numpyro.sample("y", dist.Normal(mu + tau * eta_t, sigma), obs=y)

    def hierarchical_logistic(g, x, y, G):
        su = numpyro.sample("su", dist.HalfNormal(1.0))
        sv = numpyro.sample("sv", dist.HalfNormal(1.0))
        a = numpyro.sample("a", dist.Normal(0.0, 2.0))
        b = numpyro.sample("b", dist.Normal(0.0, 2.0))
        u = numpyro.sample("u", dist.Normal(0.0, su).expand([G]))
        v = numpyro.sample("v", dist.Normal(0.0, sv).expand([G]))
        eta = a + x * (b + v[g]) + u[g]
        numpyro.sample("y", dist.Bernoulli(logits=eta), obs=y)

    def heteroscedastic_agp(B, y, lam):
        t3 = lambda s: dist.TruncatedDistribution(dist.StudentT(3, 0, s), low=0.0)
        sd1, sd2 = numpyro.sample("sd1", t3(1.0)), numpyro.sample("sd2", t3(1.0))
        l1 = numpyro.sample("l1", dist.InverseGamma(2, 1))
        l2 = numpyro.sample("l2", dist.InverseGamma(2, 1))
        a = numpyro.sample("a", dist.StudentT(3, 0, 2.5))
        c = numpyro.sample("c", dist.StudentT(3, 0, 2.5))
        spd = lambda sd, l: sd * jnp.sqrt(jnp.sqrt(2 * jnp.pi) * l * jnp.exp(-0.5 * l**2 * lam))
        z1 = numpyro.sample("z1", dist.Normal(0, 1).expand([B.shape[1]]))
        z2 = numpyro.sample("z2", dist.Normal(0, 1).expand([B.shape[1]]))
        w1, w2 = z1 * spd(sd1, l1), z2 * spd(sd2, l2)
        numpyro.sample("y", dist.Normal(a + B @ w1, jnp.exp(c + B @ w2)), obs=y)

    return eight_centred, eight_non_centred, hierarchical_logistic, heteroscedastic_agp, jnp


def run_gpmc(model_path, data_path, seed, draws, generic):
    out = tempfile.mkdtemp(prefix="gpmc-funnel-")
    cmd = [GPMC, "infer", model_path, "--data", data_path, "--output", out, "--quiet",
           "--seed", str(seed), "--draws", str(draws)]
    if generic:
        cmd.append("--generic")
    t = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.time() - t
    s = json.load(open(os.path.join(out, "summary.json")))
    rows = [v for v in s["variables"] if v["name"] != "lp__"]
    worst = min(rows, key=lambda v: v["ess_bulk"])
    return {"min_ess": worst["ess_bulk"], "worst": worst["name"], "wall": wall,
            "rhat": max(v["rhat"] for v in rows)}


def run_nuts(model, kwargs, seed, draws):
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    t = time.time()
    mcmc = MCMC(NUTS(model), num_warmup=draws, num_samples=draws, num_chains=4,
                chain_method="sequential", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), **kwargs, extra_fields=("diverging",))
    samples = jax.block_until_ready(mcmc.get_samples(group_by_chain=True))
    wall = time.time() - t
    idata = az.from_dict(posterior={k: np.asarray(v) for k, v in samples.items()})
    ess = az.ess(idata, method="bulk")
    rhat = az.rhat(idata)
    per = {k: float(np.min(ess[k].values)) for k in ess.data_vars}
    worst = min(per, key=per.get)
    div = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    return {"min_ess": per[worst], "worst": worst, "wall": wall, "divergences": div,
            "rhat": float(max(np.max(rhat[k].values) for k in rhat.data_vars))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--only", default="", help="run the problems whose name contains this")
    args = ap.parse_args()
    import jax

    jax.config.update("jax_enable_x64", True)
    eight_c, eight_nc, hlog, het, jnp = numpyro_models()
    tmp = tempfile.mkdtemp(prefix="gpmc-funnel-models-")
    eight_path = os.path.join(tmp, "eight.gpm")
    open(eight_path, "w").write(EIGHT)
    eight_data = os.path.join(tmp, "eight.json")
    json.dump(EIGHT_DATA, open(eight_data, "w"))
    hl_path = os.path.join(ROOT, "models", "hierarchical_logistic.gpm")
    hl_data_path = os.path.join(ROOT, "models", "hierarchical_logistic.data.json")
    hl = json.load(open(hl_data_path))
    y8 = jnp.array(EIGHT_DATA["y"], dtype=float)
    s8 = jnp.array(EIGHT_DATA["sigma"], dtype=float)
    hl_kw = dict(g=jnp.array(hl["g"]) - 1, x=jnp.array(np.asarray(hl["X"])[:, 0]),
                 y=jnp.array(hl["y"]), G=int(hl["G"]))
    het_path = os.path.join(ROOT, "bench", "models", "heteroscedastic_agp.gpm")
    het_data_path = os.path.join(ROOT, "bench", "models", "heteroscedastic_agp.data.json")
    het_data = json.load(open(het_data_path))
    het_kw = dict(B=jnp.array(het_data["B"]), y=jnp.array(het_data["y"]),
                  lam=jnp.array(het_data["sqrt_lambda"]) ** 2)
    problems = [
        ("eight schools", [
            ("gpmc (centred, conjugate)", lambda s: run_gpmc(eight_path, eight_data, s, args.draws, False)),
            ("gpmc --generic (interwoven)", lambda s: run_gpmc(eight_path, eight_data, s, args.draws, True)),
            ("NUTS centred", lambda s: run_nuts(eight_c, dict(y=y8, sigma=s8), s, args.draws)),
            ("NUTS non-centred", lambda s: run_nuts(eight_nc, dict(y=y8, sigma=s8), s, args.draws)),
        ]),
        ("hierarchical_logistic", [
            ("gpmc (Pólya-Gamma)", lambda s: run_gpmc(hl_path, hl_data_path, s, args.draws, False)),
            ("gpmc --generic (interwoven)", lambda s: run_gpmc(hl_path, hl_data_path, s, args.draws, True)),
            ("NUTS centred", lambda s: run_nuts(hlog, hl_kw, s, args.draws)),
        ]),
        ("heteroscedastic approximate GP (bench/models/heteroscedastic_agp.gpm)", [
            ("gpmc (mean drawn exactly, log-scale generic)", lambda s: run_gpmc(het_path, het_data_path, s, args.draws, False)),
            ("NUTS non-centred", lambda s: run_nuts(het, het_kw, s, args.draws)),
        ]),
    ]
    for name, runs in problems:
        if args.only not in name:
            continue
        print(f"\n## {name} (4 chains x {args.draws} draws, seeds 1..{args.seeds}, runs interleaved)\n")
        print("| sampler | min bulk ESS (worst parameter) | max R-hat | wall s | min-ESS/s | divergences |")
        print("| --- | --- | --- | --- | --- | --- |")
        results = {label: [] for label, _ in runs}
        for s in range(1, args.seeds + 1):
            for label, run in runs:  # interleaved: load affects every sampler alike
                results[label].append(run(s))
        for label, rs in results.items():
            ess = "/".join(f"{r['min_ess']:.0f}" for r in rs)
            worst = ",".join(sorted({r["worst"] for r in rs}))
            rate = "/".join(f"{r['min_ess'] / r['wall']:.0f}" for r in rs)
            wall = "/".join(f"{r['wall']:.1f}" for r in rs)
            rhat = max(r["rhat"] for r in rs)
            div = "/".join(str(r["divergences"]) for r in rs) if "divergences" in rs[0] else "—"
            print(f"| {label} | {ess} ({worst}) | {rhat:.3f} | {wall} | {rate} | {div} |")


if __name__ == "__main__":
    main()
