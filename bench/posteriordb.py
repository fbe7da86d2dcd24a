#!/usr/bin/env python3
"""posteriordb as posteriordb ships it: `gpmc check` on every Stan program, `gpmc infer` on every
posterior whose program is accepted, and, where a reference posterior exists, a comparison of
means and sds with it.

    python3 bench/posteriordb.py PATH/TO/posteriordb [--gpmc target/release/gpmc]
                                 [--timeout 600] [--only NAME ...] [--report docs/posteriordb.md]

PATH is a checkout of stan-dev/posteriordb (the directory that holds `posterior_database/`, or
that directory itself). Nothing is fetched. A benchmark, not a test: it prints and writes a report.

Agreement, per parameter gpmc writes: z = (mean_gpmc - mean_ref) / sqrt(mcse_gpmc^2 + mcse_ref^2)
(the reference's mcse is sd / sqrt(draws): posteriordb's reference draws are 10 chains x 1000
draws thinned until near-independent, which posteriordb checks when it adds them) and the sd ratio sd_gpmc / sd_ref. A posterior agrees when max |z| < 4.5
and every sd ratio lies in 0.85-1.15 (the issue's thresholds).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import zipfile


def root_of(path):
    for cand in (path, os.path.join(path, "posterior_database")):
        if os.path.isdir(os.path.join(cand, "posteriors")):
            return cand
    sys.exit(f"{path}: no `posteriors/` directory (give a posteriordb checkout)")


def read_zip_json(path):
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read(z.namelist()[0]))


def gpmc_name(ref_name):
    # Stan's `beta[1]` / `Omega[1,2]` -> gpmc's CSV column `beta.1` / `Omega.1.2`.
    return ref_name.replace("[", ".").replace("]", "").replace(",", ".")


def run(cmd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s", time.time() - t0


def first_error(text):
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("×") or s.startswith("error"):
            return s.lstrip("× ").strip()
    return text.strip().splitlines()[-1] if text.strip() else "?"


def method_of(check_json):
    if check_json.get("method") == "nuts":
        return "nuts: whole log density"
    sched = check_json.get("schedule", {})
    factors = check_json.get("factors", [])
    forms = sorted({(f.get("augmentation") or {}).get("form", "?") for f in factors})
    return "gibbs: " + "; ".join(forms) if sched else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("posteriordb")
    ap.add_argument("--gpmc", default="target/release/gpmc")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--only", nargs="*")
    ap.add_argument(
        "--references-only",
        action="store_true",
        help="run `gpmc infer` only on the posteriors with a reference posterior (the others are "
        "counted as accepted or refused by `gpmc check`, not run)",
    )
    ap.add_argument("--report", default="docs/posteriordb.md")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument(
        "--metric",
        choices=["diag", "low-rank"],
        help="NUTS runs: the mass matrix (gpmc's --metric; default: gpmc's, diagonal); the report says so",
    )
    args = ap.parse_args()
    root = root_of(args.posteriordb)
    models = sorted(f[:-5] for f in os.listdir(os.path.join(root, "models", "stan")) if f.endswith(".stan"))

    # 1. check every program.
    checked = {}
    for m in models:
        path = os.path.join(root, "models", "stan", m + ".stan")
        code, out, _ = run([args.gpmc, "check", path, "--format", "json"], 120)
        try:
            doc = json.loads(out[out.index("{") :]) if "{" in out else {}
        except ValueError:
            doc = {}
        if code == 0 and doc.get("ok"):
            checked[m] = {"ok": True, "method": method_of(doc)}
        else:
            diags = doc.get("diagnostics") or [{}]
            checked[m] = {"ok": False, "why": diags[0].get("message") or first_error(out)}
    accepted = sum(1 for c in checked.values() if c["ok"])
    print(f"programs accepted by gpmc check: {accepted} of {len(models)}", flush=True)

    # 2. infer every posterior whose program was accepted; compare with its reference.
    posteriors = sorted(f[:-5] for f in os.listdir(os.path.join(root, "posteriors")) if f.endswith(".json"))
    rows = []
    for name in posteriors:
        if args.only and name not in args.only:
            continue
        info = json.load(open(os.path.join(root, "posteriors", name + ".json")))
        model, data = info["model_name"], info["data_name"]
        ref_path = os.path.join(root, "reference_posteriors", "draws", "draws", name + ".json.zip")
        has_ref = os.path.exists(ref_path)
        row = {"posterior": name, "model": model, "reference": has_ref}
        rows.append(row)
        c = checked.get(model, {"ok": False, "why": "no Stan program"})
        if not c["ok"]:
            row["status"] = "refused: " + c["why"]
            continue
        row["method"] = c["method"]
        data_zip = os.path.join(root, "data", "data", data + ".json.zip")
        if not os.path.exists(data_zip):
            row["status"] = "no data file in the checkout"
            continue
        if args.references_only and not has_ref:
            row["status"] = "accepted (not run: --references-only)"
            continue
        try:
            data_json = read_zip_json(data_zip)
        except zipfile.BadZipFile:
            # A Git LFS pointer where the checkout did not fetch the file.
            row["status"] = "no data file in the checkout (not a zip: an LFS pointer?)"
            continue
        with tempfile.TemporaryDirectory() as tmp:
            dpath = os.path.join(tmp, "data.json")
            json.dump(data_json, open(dpath, "w"))
            out_dir = os.path.join(tmp, "out")
            cmd = [args.gpmc, "infer", os.path.join(root, "models", "stan", model + ".stan"), "--data", dpath,
                   "--output", out_dir, "--draws", str(args.draws), "--seed", "1"]
            if c["method"].startswith("nuts"):
                controls = reference_controls(root, name)
                if args.metric:
                    controls += ["--metric", args.metric]
                cmd += controls
                row["controls"] = " ".join(controls)
            code, out, secs = run(cmd, args.timeout)
            row["seconds"] = round(secs, 1)
            if code != 0:
                row["status"] = "infer failed: " + first_error(out)
                print(f"{name}: {row['status']}", flush=True)
                continue
            summary = json.load(open(os.path.join(out_dir, "summary.json")))
        row["status"] = "ran"
        if has_ref:
            compare(row, summary, read_zip_json(ref_path))
        print(f"{name}: {row.get('verdict', row['status'])} ({row['seconds']} s)", flush=True)
    write_report(args.report, models, checked, rows, args.references_only, args.metric)


def reference_controls(root, name):
    """The NUTS controls the reference posterior was drawn with (posteriordb's
    reference_posteriors/draws/info): a Stan user who knows the posterior needs adapt_delta 0.99
    passes it; so does this benchmark, to NUTS runs only, and the report says so."""
    path = os.path.join(root, "reference_posteriors", "draws", "info", name + ".info.json")
    if not os.path.exists(path):
        return []
    control = json.load(open(path)).get("inference", {}).get("method_arguments", {}).get("control", {})
    out = []
    if control.get("adapt_delta", 0.8) != 0.8:
        out += ["--adapt-delta", str(control["adapt_delta"])]
    if control.get("max_treedepth", 10) != 10:
        out += ["--max-treedepth", str(control["max_treedepth"])]
    return out


def compare(row, summary, ref):
    mine = {v["name"]: v for v in summary["variables"]}
    zs, ratios, missing = [], [], []
    for p in ref[0]:
        v = mine.get(gpmc_name(p))
        if v is None:
            missing.append(p)
            continue
        flat = [float(x) for c in ref for x in c[p]]
        n = len(flat)
        mean_r = sum(flat) / n
        sd_r = math.sqrt(sum((x - mean_r) ** 2 for x in flat) / max(n - 1, 1))
        mcse_r = sd_r / math.sqrt(n)
        se = math.sqrt(v["mcse_mean"] ** 2 + mcse_r**2)
        zs.append((abs(v["mean"] - mean_r) / se if se > 0 else 0.0, p))
        ratios.append(scale_ratio(v, flat, mean_r, sd_r, p, row))
    row["compared"] = len(zs)
    row["missing"] = missing
    if not zs:
        row["verdict"] = "nothing to compare"
        return
    zmax = max(zs)
    rlo, rhi = min(ratios), max(ratios)
    row["max_z"] = round(zmax[0], 2)
    row["sd_ratio"] = [round(rlo[0], 3), round(rhi[0], 3)]
    ok = zmax[0] < 4.5 and rlo[0] >= 0.85 and rhi[0] <= 1.15
    wide = row.get("by_interval")
    note = f" (90 % widths for {', '.join(wide)}: their sd too noisy to compare)" if wide else ""
    row["verdict"] = "agrees" + note if ok else f"DISAGREES (|z| {zmax[0]:.1f} at {zmax[1]}; sd ratio {rlo[0]:.2f}-{rhi[0]:.2f}){note}"


def scale_ratio(v, flat, mean_r, sd_r, p, row):
    """gpmc's spread over the reference's: the sd ratio, or, where the sd ratio's own Monte Carlo
    error is wider than a third of the 0.85-1.15 band (a heavy tail or few effective draws: the
    sd of n effective draws has relative error sqrt((kurtosis - 1) / 4n)), the ratio of the
    5-95 % interval widths, which a tail does not swamp. The parameters so compared are listed
    in the row."""
    if sd_r <= 0:
        return (1.0, p)
    n = len(flat)
    kurtosis = sum((x - mean_r) ** 4 for x in flat) / n / sd_r**4
    ess = max(v.get("ess_bulk") or 1.0, 1.0)
    rel_err = math.sqrt(max(kurtosis - 1.0, 0.0) / 4.0 * (1.0 / ess + 1.0 / n))
    if 3.0 * rel_err <= 0.15 or "q5" not in v:
        return (v["sd"] / sd_r, p)
    ordered = sorted(flat)
    width_r = ordered[int(0.95 * (n - 1))] - ordered[int(0.05 * (n - 1))]
    row.setdefault("by_interval", []).append(p)
    return ((v["q95"] - v["q5"]) / width_r if width_r > 0 else 1.0, p)


def write_report(path, models, checked, rows, references_only=False, metric=None):
    accepted = [m for m in models if checked[m]["ok"]]
    with_ref = [r for r in rows if r["reference"]]
    agree = [r for r in with_ref if r.get("verdict", "").startswith("agrees")]
    lines = [
        "# gpmc on posteriordb",
        "",
        "Written by `python3 bench/posteriordb.py PATH/TO/posteriordb` (stan-dev/posteriordb as it ships: the",
        "Stan programs are read unchanged). Agreement: max |z| < 4.5 over the parameters gpmc writes, z from",
        "both Monte Carlo errors, and sd ratios in 0.85-1.15 (for a parameter whose sd ratio has a Monte Carlo error",
        "over a third of that band — a heavy tail, few effective draws — the ratio of the 5-95 % interval widths",
        "instead; named in the row).",
        "NUTS runs get the `adapt_delta` and `max_treedepth` the reference posterior was drawn with (posteriordb's",
        "`reference_posteriors/draws/info`; last column), and otherwise gpmc's defaults: 4 chains, 1000 warm-up, --draws."
        + (f" Every NUTS run: `--metric {metric}`." if metric else ""),
        "",
        f"- Stan programs accepted by `gpmc check`: **{len(accepted)} of {len(models)}**",
        f"- posteriors accepted by `gpmc check` (program accepted, data in the checkout): "
        f"**{sum(1 for r in rows if r['status'] == 'ran' or r['status'].startswith(('accepted', 'infer failed')))} of {len(rows)}**",
        f"- posteriors run: {sum(1 for r in rows if r['status'] == 'ran')} of {len(rows)}"
        + (" (`--references-only`: only the posteriors with a reference were run)" if references_only else ""),
        f"- reference posteriors agreeing: **{len(agree)} of {len(with_ref)}** "
        f"({sum(1 for r in with_ref if r['status'] == 'ran')} of them ran)",
        "",
        "## Posteriors with a reference",
        "",
        "| posterior | status | method | max abs z | sd ratios | compared (missing) | s | NUTS controls |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in with_ref:
        status = r.get("verdict", r["status"]).replace("|", "/")
        lines.append(
            f"| {r['posterior']} | {status} | {r.get('method', '')} | {r.get('max_z', '')} | "
            f"{r.get('sd_ratio', '')} | {r.get('compared', '')} ({len(r.get('missing', []))}) | {r.get('seconds', '')} | "
            f"{r.get('controls', '')} |"
        )
    methods = {}
    for r in rows:
        if r["status"] == "ran" or r["status"].startswith(("accepted", "infer failed")):
            key = "NUTS on the whole log density" if r.get("method", "").startswith("nuts") else "the Gaussian-latent path (Gibbs)"
            methods[key] = methods.get(key, 0) + 1
    lines[lines.index("## Posteriors with a reference") - 1:lines.index("## Posteriors with a reference") - 1] = [
        f"- accepted posteriors by path: " + "; ".join(f"{k}: {v}" for k, v in sorted(methods.items()))
    ]
    failed = [r for r in rows if r["status"].startswith("infer failed")]
    lines += ["", "## Accepted, but `gpmc infer` did not finish", ""]
    lines += [f"- {r['posterior']}: {r['status'][len('infer failed: '):]}" for r in failed] or ["(none)"]
    lines += ["", "## Every Stan program", "", "| program | `gpmc check` |", "| --- | --- |"]
    for m in models:
        c = checked[m]
        lines.append(f"| {m} | {'accepted — ' + c['method'] if c['ok'] else 'refused: ' + c['why'].replace('|', '/')} |")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "w").write("\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
