"""gpmc's NUTS against NumPyro's on the same models, and against gpmc's Gibbs (issue 35, the
thesis' §7.3 question: is the speed of augmented Gibbs the augmentation's or Gibbs's?).

For the fixed-hyperparameter models of `bench/compare.py` that `--method nuts` runs (the GP
classifier on breast cancer, 569 × 30; the Student-t and Laplace GP regressions on diabetes,
442 × 10; the Poisson GP, 200 points): `gpmc infer` by Gibbs (augmented) and by NUTS (the
original model, latents whitened by the prior), and NumPyro's NUTS on the same non-centred
model (`f = L z`), 2 chains × `--draws` after `--warmup` (NUTS) / 200 (Gibbs) warm-up
iterations, wall time of the whole run (gpmc: the process; NumPyro: compilation included).
Prints a Markdown table: min and median bulk ESS per second over the latents, the ratio of
gpmc's NUTS to NumPyro's, NUTS's leapfrog steps per draw, and the agreement of the posterior
means (worst |z| of gpmc NUTS against NumPyro). Interleaved per model (gpmc Gibbs, gpmc NUTS,
NumPyro), on a quiet machine.

    bench/.venv/bin/python bench/nuts_vs.py [--draws 1000] [--warmup 1000]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the models, NumPyro's runs and the ESS estimator)

MODELS = ["gp_classification", "student_t_gp", "laplace_gp", "poisson_gp"]


def run_gpmc(name, spec, method, draws, warmup):
    d = os.path.join(compare.OUT, "nuts_vs", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.gpm"), "w") as fh:
        fh.write(spec["gpm"])
    with open(os.path.join(d, "data.json"), "w") as fh:
        json.dump(spec["data"], fh)
    out = os.path.join(d, method)
    t = time.time()
    subprocess.run(
        [compare.GPMC, "infer", os.path.join(d, "model.gpm"), "--data", os.path.join(d, "data.json"),
         "--method", method, "--chains", str(compare.CHAINS), "--draws", str(draws),
         "--warmup", str(warmup), "--seed", "1", "--output", out, "--quiet"],
        check=True, stdout=subprocess.DEVNULL,
    )
    wall = time.time() - t
    import arviz as az

    files = sorted(os.path.join(out, f) for f in os.listdir(out) if f.startswith("chain-"))
    post = az.from_cmdstan(files).posterior
    lat = spec["latent"]
    names = [v for v in post.data_vars if v == lat or v.startswith(lat + ".")]
    arr = np.concatenate([post[v].values.reshape(post[v].shape[0], post[v].shape[1], -1)
                          for v in names], -1)
    steps = None
    if method == "nuts":
        s = json.load(open(os.path.join(out, "summary.json")))
        steps = np.mean([c["mean_leapfrog_steps"] for c in s["nuts"]])
    return arr, wall, steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=1000)
    a = ap.parse_args()
    import numpyro

    # NumPyro's two chains in parallel, as gpmc's (before 2026-11-27 they ran one after the
    # other here, which halved NumPyro's ESS per second in this table).
    numpyro.set_host_device_count(compare.CHAINS)
    specs = compare.datasets(np.random.default_rng(0))
    print("| model | gpmc Gibbs min / median ESS/s | gpmc NUTS min / median ESS/s | NumPyro NUTS "
          "min / median ESS/s | gpmc NUTS ÷ NumPyro (min) | gpmc Gibbs ÷ gpmc NUTS (min) | "
          "gpmc NUTS leapfrog steps / draw | worst |z| gpmc NUTS vs NumPyro |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in MODELS:
        spec = specs[name]
        g, gw, _ = run_gpmc(name, spec, "gibbs", a.draws, 200)
        n, nw, steps = run_gpmc(name, spec, "nuts", a.draws, a.warmup)
        p, pw = compare.run_nuts(spec, a.draws, a.warmup)
        rate = {}
        for tool, arr, wall in (("gibbs", g, gw), ("nuts", n, nw), ("numpyro", p, pw)):
            ess, mcse = compare.ess_mcse(arr)
            rate[tool] = (ess.min() / wall, np.median(ess) / wall, arr.mean((0, 1)), mcse)
        z = (rate["nuts"][2] - rate["numpyro"][2]) / np.sqrt(rate["nuts"][3] ** 2 + rate["numpyro"][3] ** 2)
        print(f"| {name} | {rate['gibbs'][0]:.0f} / {rate['gibbs'][1]:.0f} | "
              f"{rate['nuts'][0]:.0f} / {rate['nuts'][1]:.0f} | "
              f"{rate['numpyro'][0]:.0f} / {rate['numpyro'][1]:.0f} | "
              f"{rate['nuts'][0] / rate['numpyro'][0]:.2f} | {rate['gibbs'][0] / rate['nuts'][0]:.2f} | "
              f"{steps:.1f} | {np.abs(z).max():.2f} |", flush=True)


if __name__ == "__main__":
    main()
