"""The logistic-softmax's links compared (thesis §7.4.2-7.4.3, issue 34): over-parametrised,
bijective and scaled, by Gibbs and by CAVI, on iris, wine and a 10-class digits subset.

    bench/.venv/bin/python bench/softmax_links.py [--draws 1000] [--out bench/out/softmax_links]

Needs scikit-learn (for the data) in the interpreter that runs it — `bench/run` makes
`bench/.venv` with it — and a release build of gpmc (`cargo build --release`). Every run is the
`gpmc infer` CLI on a model written here, with a fixed train/test split; the table is printed in
Markdown (docs/augmentation.md keeps the one it printed) and the raw runs stay under `--out`.

Metrics on the test set: accuracy (the most probable class), mean log predictive density,
expected calibration error (15 equal-width bins of the top probability), and for Gibbs the
minimum bulk ESS over the latents and class scales per second of sampling (chain-seconds summed
over chains), for CAVI its wall time (the whole process).
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPMC = os.path.join(ROOT, "target", "release", "gpmc")

LINKS = {
    # name: (latent columns, extra hyper declaration, options), per method
    "over-parametrised": ("C", "", ""),
    "bijective": ("J", "", ', link = "bijective"'),
    "scaled": ("C", "theta : vector[C] in 0.. {spec};", ", scale = theta"),
    "bijective, scaled": ("J", "theta : vector[C] in 0.. {spec};",
                          ', link = "bijective", scale = theta'),
}


def model(link, method, ell):
    columns, hyper, options = LINKS[link]
    spec = "~ gamma(2, 2)" if method == "gibbs" else "= learn(1.0)"
    return f"""data {{
  N : int; D : int; C : int; let J = C - 1;
  X : matrix[N, D]; y : int[N] in 1..C;
}}
hyper {{
  lengthscale : real in 0.. = 1.0;
  {hyper.format(spec=spec)}
}}
latent {{ F : matrix[N, {columns}] ~ gp(X, 4.0 * sqexp({ell:.6f} * lengthscale)); }}
model {{ y ~ categorical_logistic_softmax(F{options}); }}
"""


def datasets(seed):
    from sklearn.datasets import load_digits, load_iris, load_wine
    from sklearn.model_selection import train_test_split

    out = {}
    for name, loader, train in [("iris", load_iris, None), ("wine", load_wine, None),
                                ("digits (10 classes)", load_digits, 300)]:
        d = loader()
        X, y = np.asarray(d.data, float), np.asarray(d.target, int)
        keep = X.std(0) > 0
        X = X[:, keep]
        kw = dict(train_size=train, test_size=200) if train else dict(test_size=0.3)
        Xtr, Xte, ytr, yte = train_test_split(X, y, stratify=y, random_state=seed, **kw)
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
        classes = int(y.max() + 1)
        common = dict(D=int(X.shape[1]), C=classes)
        out[name] = (
            dict(N=len(ytr), X=Xtr.tolist(), y=(ytr + 1).tolist(), **common),
            dict(N=len(yte), X=Xte.tolist(), y=(yte + 1).tolist(), **common),
        )
    return out


def ece(p, y, bins=15):
    top = p.max(1)
    right = (p.argmax(1) == y).astype(float)
    edges = np.linspace(0, 1, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (top > lo) & (top <= hi)
        if inside.any():
            total += inside.mean() * abs(right[inside].mean() - top[inside].mean())
    return total


def run(dir_, link, method, train, test, draws):
    os.makedirs(dir_, exist_ok=True)
    paths = {k: os.path.join(dir_, f"{k}.json") for k in ("train", "test")}
    for k, v in (("train", train), ("test", test)):
        with open(paths[k], "w") as f:
            json.dump(v, f)
    src = os.path.join(dir_, "model.gpm")
    with open(src, "w") as f:
        f.write(model(link, method, float(np.sqrt(train["D"]))))
    out = os.path.join(dir_, "run")
    cmd = [GPMC, "infer", src, "--data", paths["train"], "--predict", paths["test"],
           "--method", method, "--output", out, "--quiet", "--seed", "1"]
    if method == "gibbs":
        cmd += ["--chains", "2", "--warmup", "300", "--draws", str(draws)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    pred = np.genfromtxt(os.path.join(out, "predictions.csv"), delimiter=",", names=True)
    classes = test["C"]
    p = np.stack([pred[f"p_1_{k + 1}"] for k in range(classes)], 1)
    y = np.asarray(test["y"]) - 1
    row = dict(accuracy=float((p.argmax(1) == y).mean()),
               lpd=float(np.log(p[np.arange(len(y)), y]).mean()),
               ece=float(ece(p, y)), wall=wall)
    summary = json.load(open(os.path.join(out, "summary.json")))
    if method == "gibbs":
        ess = min(v["ess_bulk"] for v in summary["variables"]
                  if v["name"].startswith(("F.", "theta")))
        seconds = sum(summary["timing_seconds"]["sampling"])
        row.update(min_ess=ess, ess_per_s=ess / seconds)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "softmax_links"))
    a = ap.parse_args()
    rows = []
    for name, (train, test) in datasets(a.seed).items():
        for link in LINKS:
            where = os.path.join(a.out, name.split()[0], link.replace(", ", "_"))
            g = run(os.path.join(where, "gibbs"), link, "gibbs", train, test, a.draws)
            c = run(os.path.join(where, "cavi"), link, "cavi", train, test, a.draws)
            rows.append((name, link, g, c))
            print(f"{name} {link}: gibbs {g} cavi {c}", flush=True)
    print("\n| data | link | Gibbs accuracy | Gibbs test LPD | Gibbs ECE | Gibbs min-ESS/s | "
          "CAVI accuracy | CAVI test LPD | CAVI ECE | CAVI time (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, link, g, c in rows:
        print(f"| {name} | {link} | {g['accuracy']:.3f} | {g['lpd']:.3f} | {g['ece']:.3f} | "
              f"{g['ess_per_s']:.0f} | {c['accuracy']:.3f} | {c['lpd']:.3f} | {c['ece']:.3f} | "
              f"{c['wall']:.2f} |")


if __name__ == "__main__":
    main()
