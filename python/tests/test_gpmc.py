"""The Python package: errors, data in (dicts, pandas), every InferenceData group with its
shapes, LOO and PPC in ArviZ, the same draws as the CLI for the same seed, Ctrl-C, and
prediction at new inputs without responses."""

import _thread
import json
import os
import pathlib
import subprocess
import threading
import time

import arviz as az
import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd
import pytest

import gpmc

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

REGRESSION = """
data { N : int; x : vector[N]; y : vector[N]; }
latent { w : real ~ normal(0, 1); b : real ~ normal(0, 1); }
model { y ~ normal(w * x + b, 0.5); }
"""


def gp_data():
    d = json.loads((MODELS / "gp_classification.data.json").read_text())
    return {"X": np.array(d["X"]), "y": np.array(d["y"])}


def regression_data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    x = np.linspace(-1, 1, n)
    return {"x": x, "y": 0.7 * x - 0.2 + 0.5 * rng.standard_normal(n)}


def test_a_bad_model_raises_model_error_with_the_diagnostic():
    with pytest.raises(gpmc.ModelError) as e:
        gpmc.Model("data { N : int; }\nlatent { f : vector[N] ~ normal(0, 1); }\nmodel { y ~ normal(f, 1); }")
    assert "y" in str(e.value) and "error" in str(e.value).lower()


def test_bad_data_raise_data_error():
    m = gpmc.Model(REGRESSION)
    d = regression_data()
    with pytest.raises(gpmc.DataError, match="`y` is missing: the model declares `y : vector"):
        m.sample({"x": d["x"]}, progress=False)
    bad = dict(d, y=np.where(np.arange(30) == 3, np.nan, d["y"]))
    with pytest.raises(gpmc.DataError):
        m.sample(bad, progress=False)
    g = gpmc.Model(MODELS / "gp_classification.gpm")
    labels = gp_data()
    labels["y"] = labels["y"] * 2  # labels outside {-1, 1}
    with pytest.raises(gpmc.DataError):
        g.sample(labels, progress=False)


def test_check_is_the_cli_json():
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    report = m.check()
    cli = subprocess.run(
        [str(cli_binary()), "check", str(MODELS / "gp_classification.gpm"), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    want = json.loads(cli.stdout)
    assert report["factors"] == want["factors"]
    assert report["schedule"] == want["schedule"]


def test_every_group_with_its_shapes():
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    idata = m.sample(gp_data(), chains=2, draws=300, warmup=100, progress=False)
    for g in ["posterior", "sample_stats", "log_likelihood", "posterior_predictive", "observed_data", "constant_data"]:
        assert g in idata.groups(), g
    assert idata.posterior["f"].dims == ("chain", "draw", "N")
    assert idata.posterior["f"].shape == (2, 300, 60)
    assert idata.sample_stats["lp"].shape == (2, 300)
    assert idata.log_likelihood["y"].shape == (2, 300, 60)
    assert idata.posterior_predictive["y"].shape == (2, 300, 60)
    assert set(np.unique(idata.posterior_predictive["y"].values)) <= {-1.0, 1.0}
    assert idata.observed_data["y"].shape == (60,)
    assert idata.constant_data["X"].shape == (60, 2)
    loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo) and loo.elpd_loo < 0
    az.plot_ppc(idata, num_pp_samples=20)


def test_log_likelihood_is_the_library_density():
    m = gpmc.Model(REGRESSION)
    d = regression_data()
    idata = m.sample(d, chains=1, draws=50, progress=False)
    w = idata.posterior["w"].values[0]
    b = idata.posterior["b"].values[0]
    mu = w[:, None] * d["x"][None, :] + b[:, None]
    want = -0.5 * ((d["y"] - mu) / 0.5) ** 2 - np.log(0.5 * np.sqrt(2 * np.pi))
    np.testing.assert_allclose(idata.log_likelihood["y"].values[0], want, rtol=1e-9, atol=1e-9)


def test_pandas_input_with_a_column_mapping():
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    d = gp_data()
    frame = pd.DataFrame(
        {"a": d["X"][:, 0], "b": d["X"][:, 1], "label": d["y"], "note": ["text"] * 60}
    )
    from_frame = m.sample(frame, columns={"X": ["a", "b"], "y": "label"}, chains=1, draws=100, progress=False)
    from_dict = m.sample(d, chains=1, draws=100, progress=False)
    np.testing.assert_array_equal(from_frame.posterior["f"].values, from_dict.posterior["f"].values)


def cli_binary():
    path = os.environ.get("GPMC_BIN", str(ROOT / "target" / "release" / "gpmc"))
    assert os.path.exists(path), f"the gpmc binary is built by `cargo build --release` ({path})"
    return path


def test_the_same_seed_gives_the_cli_draws(tmp_path):
    cli = subprocess.run(
        [
            cli_binary(), "infer", str(MODELS / "gp_classification.gpm"),
            "--data", str(MODELS / "gp_classification.data.json"),
            "--chains", "2", "--draws", "200", "--seed", "7", "--quiet",
            "--output", str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    idata = gpmc.Model(MODELS / "gp_classification.gpm").sample(
        gp_data(), chains=2, draws=200, seed=7, log_lik=False, ppc=False, progress=False
    )
    for k in (1, 2):
        lines = [l for l in (tmp_path / "run" / f"chain-{k}.csv").read_text().splitlines() if not l.startswith("#")]
        header = lines[0].split(",")
        rows = np.array([[float(v) for v in l.split(",")] for l in lines[1:]])
        f1 = rows[:, header.index("f.1")]
        np.testing.assert_allclose(idata.posterior["f"].values[k - 1, :, 0], f1, rtol=1e-9)
        lp = rows[:, header.index("lp__")]
        np.testing.assert_allclose(idata.sample_stats["lp"].values[k - 1], lp, rtol=1e-9)


def test_nuts_gives_the_cli_draws_and_samples_hyperparameters(tmp_path):
    """`Model.nuts` is `gpmc infer --method nuts`: the same draws for the same seed, in the
    same InferenceData as `Model.sample`; sampled group scales move with the latents; NUTS on
    the augmented Student-t model; sampled ARD lengthscales are refused with what to do."""
    cli = subprocess.run(
        [
            cli_binary(), "infer", str(MODELS / "gp_classification.gpm"), "--method", "nuts",
            "--data", str(MODELS / "gp_classification.data.json"),
            "--chains", "2", "--draws", "100", "--warmup", "200", "--seed", "5", "--quiet",
            "--output", str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    idata = gpmc.Model(MODELS / "gp_classification.gpm").nuts(
        gp_data(), chains=2, draws=100, warmup=200, seed=5, progress=False
    )
    lines = [l for l in (tmp_path / "run" / "chain-2.csv").read_text().splitlines() if not l.startswith("#")]
    header = lines[0].split(",")
    rows = np.array([[float(v) for v in l.split(",")] for l in lines[1:]])
    np.testing.assert_allclose(idata.posterior["f"].values[1, :, 3], rows[:, header.index("f.4")], rtol=1e-9)
    assert "log_likelihood" in idata.groups()
    summary = json.loads(idata.posterior.attrs["gpmc_summary"])
    assert summary["method"] == "nuts" and len(summary["nuts"]) == 2
    hier = gpmc.Model(MODELS / "hierarchical_logistic.gpm").nuts(
        model_data("hierarchical_logistic"), chains=1, draws=50, warmup=100, seed=2, progress=False
    )
    su = hier.posterior["su"].values
    assert su.shape == (1, 50) and np.all(su > 0) and np.std(su) > 0
    aug = gpmc.Model(MODELS / "student_t_regression.gpm").nuts(
        model_data("student_t_regression"), chains=1, draws=50, warmup=100, seed=2,
        progress=False, augmented=True,
    )
    assert json.loads(aug.posterior.attrs["gpmc_summary"])["nuts"][0]["model"] == "augmented"
    ard = tmp_path / "ard.gpm"
    ard.write_text(
        (MODELS / "gp_classification.gpm").read_text().replace(
            "lengthscale : real in 0.. = learn(1.0);",
            "lengthscale : vector[D] in 0.. ~ gamma(2.0, 1.0);",
        )
    )
    with pytest.raises(Exception, match="vector hyperparameter"):
        gpmc.Model(ard).nuts(gp_data(), chains=1, draws=10, progress=False)


def model_data(name, kind="data"):
    d = json.loads((MODELS / f"{name}.{kind}.json").read_text())
    return {k: (np.array(v) if isinstance(v, list) else v) for k, v in d.items()}


EXAMPLES = sorted(p.stem for p in MODELS.glob("*.gpm") if (MODELS / f"{p.stem}.test.json").exists())


@pytest.mark.parametrize("name", EXAMPLES)
def test_prediction_from_python_is_the_clis_for_every_example(name, tmp_path):
    # Issue 37: gpmc.predict on the InferenceData (in memory and through netCDF) gives the
    # predictions `gpmc infer --predict` gives for the same seed — multi-class with its class
    # count given as data included, and test inputs without the sizes the fit fixed.
    cli = subprocess.run(
        [
            cli_binary(), "infer", str(MODELS / f"{name}.gpm"),
            "--data", str(MODELS / f"{name}.data.json"),
            "--predict", str(MODELS / f"{name}.test.json"),
            "--chains", "2", "--draws", "100", "--warmup", "100", "--seed", "3", "--quiet",
            "--output", str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    want = pd.read_csv(tmp_path / "run" / "predictions.csv")
    idata = gpmc.Model(MODELS / f"{name}.gpm").sample(
        model_data(name), chains=2, draws=100, warmup=100, seed=3, ppc=False, log_lik=False,
        progress=False,
    )
    test = model_data(name, "test")
    got = gpmc.predict(idata, test)
    assert list(got.columns) == list(want.columns)
    # The CLI predicts from the draws as written to its chain files (7 significant digits).
    np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float), rtol=1e-5, atol=1e-9)
    idata.to_netcdf(tmp_path / "fit.nc")
    again = gpmc.predict(az.from_netcdf(tmp_path / "fit.nc"), test)
    np.testing.assert_allclose(again.to_numpy(float), want.to_numpy(float), rtol=1e-5, atol=1e-9)


def test_multiclass_prediction_needs_no_class_count_in_the_test_data():
    idata = gpmc.Model(MODELS / "multiclass_gp.gpm").sample(
        model_data("multiclass_gp"), chains=1, draws=100, warmup=100, seed=3, progress=False
    )
    test = model_data("multiclass_gp", "test")
    inputs_only = {"X": test["X"]}
    df = gpmc.predict(idata, inputs_only)
    assert len(df) == len(test["X"])
    with pytest.raises(gpmc.DataError, match="`C` = 2 but the fit was made with `C` = 3"):
        gpmc.predict(idata, dict(inputs_only, C=2))


def test_ctrl_c_raises_keyboard_interrupt_within_a_second():
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    d = gp_data()
    timer = threading.Timer(0.5, _thread.interrupt_main)
    t0 = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        # Long enough to be interrupted, small enough that its draws would fit in memory
        # (a run that could not is refused before it starts).
        m.sample(d, chains=2, draws=1_000_000, progress=False)
    assert time.monotonic() - t0 < 1.5


def test_progress_is_reported():
    m = gpmc.Model(REGRESSION)
    seen = []
    m._compiled.sample(
        gpmc._data.handover(gpmc._data.normalise(regression_data())),
        2, 20000, 100, 1, 1, False, False, None, lambda done, total: seen.append((done, total)),
    )
    assert seen and seen[-1] == (2 * 20100, 2 * 20100)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


def test_prediction_at_new_inputs_without_responses(tmp_path):
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    idata = m.sample(gp_data(), chains=2, draws=300, progress=False)
    test = json.loads((MODELS / "gp_classification.test.json").read_text())
    new = {"X": np.array(test["X"])}
    df = gpmc.predict(idata, new)
    assert len(df) == len(test["X"])
    assert {"f_mean", "f_sd", "y_rep_1_q5", "y_rep_1_q95"} <= set(df.columns)
    assert "no" in df.attrs["metrics"]["scored"]
    # With responses: scored, and the same predictions (same draws, same seed).
    scored = gpmc.predict(idata, {"X": new["X"], "y": np.array(test["y"])})
    np.testing.assert_array_equal(scored["f_mean"], df["f_mean"])
    assert scored.attrs["metrics"]["error_rate_factor_1"] < 0.3
    # The InferenceData carries what prediction needs, also through netCDF.
    idata.to_netcdf(tmp_path / "fit.nc")
    again = gpmc.predict(az.from_netcdf(tmp_path / "fit.nc"), new)
    np.testing.assert_allclose(again["f_mean"], df["f_mean"], rtol=1e-12)


def test_the_inference_data_owns_its_data_and_test_inputs_are_checked():
    # Issue 32: changing the caller's arrays after sampling must not change what prediction
    # from the InferenceData returns; test inputs of another width are refused.
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    data = gp_data()
    idata = m.sample(data, chains=1, draws=100, warmup=100, progress=False)
    test = json.loads((MODELS / "gp_classification.test.json").read_text())
    new = {"X": np.array(test["X"])}
    before = gpmc.predict(idata, new)
    data["X"][:] = 0.0
    after = gpmc.predict(idata, new)
    np.testing.assert_array_equal(before["f_mean"], after["f_mean"])
    narrow = np.array(test["X"])[:, :1]
    # The size `D` is the fit's when the test data leave it out, and then `X` is too narrow;
    # given, it differs from the fit's.
    with pytest.raises(gpmc.DataError, match="`X` has 1 columns"):
        gpmc.predict(idata, {"X": narrow})
    with pytest.raises(gpmc.DataError, match="`D` = 1 but the fit was made with `D` = 2"):
        gpmc.predict(idata, {"X": narrow, "D": 1})
    bad = gp_data()
    bad["X"] = bad["X"].astype(object)
    bad["X"][0, 0] = "a"
    with pytest.raises(gpmc.DataError, match="`X` is an object array"):
        m.sample(bad, progress=False)


def test_a_full_gp_that_cannot_fit_in_memory_raises_instead_of_killing_python():
    # Issue 32: N = 10^5 under a full GP needs about 480 GB; it used to abort the interpreter.
    n = 100_000
    rng = np.random.default_rng(0)
    data = {"X": rng.standard_normal((n, 2)), "y": np.where(rng.random(n) < 0.5, -1, 1)}
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    with pytest.raises(gpmc.InferenceError, match="would need about"):
        m.sample(data, chains=1, draws=2, warmup=2, progress=False)


def test_the_clis_warnings_are_python_warnings():
    # Issue 37: too few draws to trust, and a prior a variational method holds, are said.
    m = gpmc.Model(REGRESSION)
    with pytest.warns(gpmc.GpmcWarning, match="not mixed well enough"):
        idata = m.sample(regression_data(), chains=1, draws=20, warmup=20, progress=False)
    assert "not mixed" in json.loads(idata.posterior.attrs["gpmc_warnings"])[0]
    lr = gpmc.Model(MODELS / "linear_regression.gpm")
    d = model_data("linear_regression")
    with pytest.warns(gpmc.GpmcWarning, match="`tau` has a prior"):
        fit = lr.cavi(d, progress=False)
    assert any("--method gibbs" in w for w in fit.warnings)


def test_integer_data_stay_integers_so_arviz_draws_bars():
    g = gpmc.Model(MODELS / "gp_classification.gpm")
    idata = g.sample(gp_data(), chains=1, draws=50, warmup=50, progress=False)
    assert idata.observed_data["y"].dtype.kind == "i"
    assert idata.posterior_predictive["y"].dtype.kind == "i"
    assert idata.constant_data["X"].dtype.kind == "f"


def test_variational_fits():
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    d = gp_data()
    fit = m.cavi(d, progress=False)
    assert fit.method == "cavi" and set(fit.hypers) == {"lengthscale", "variance"}
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(fit.elbo, fit.elbo[1:])), "CAVI's ELBO never decreases"
    q = fit.to_inference_data(draws=400)
    assert q.posterior["f"].shape == (1, 400, 60)
    assert q.log_likelihood["y"].shape == (1, 400, 60)
    assert np.isfinite(az.loo(q).elpd_loo)
    df = fit.predict({"X": d["X"][:5]})
    assert len(df) == 5 and "y_rep_1_q50" in df.columns
    assert gpmc.predict(fit, {"X": d["X"][:5]}).equals(df)
    # SVI on a sparse GP: draws from q too.
    s = gpmc.Model(MODELS / "sparse_gp_classification.gpm")
    sd = json.loads((MODELS / "sparse_gp_classification.data.json").read_text())
    sfit = s.svi({"X": np.array(sd["X"]), "y": np.array(sd["y"])}, batch=100, iterations=200, progress=False)
    sq = sfit.to_inference_data(draws=50)
    assert sq.posterior["f"].shape == (1, 50, len(sd["y"]))
    assert "f_inducing" in sq.posterior


def test_particle_flow_fits_with_either_particle_map():
    m = gpmc.Model(MODELS / "gp_classification.gpm")
    d = gp_data()
    fit = m.gpf(d, progress=False)
    assert fit.method == "gpf" and fit.summary["particle_map"] == "symmetric"
    assert fit.summary["converged"]
    trace = fit.summary["free_energy"]
    assert all(b <= a for a, b in zip(trace, trace[1:])), "the free energy never rises"
    affine = m.gpf(d, particle_map="affine", iterations=50, progress=False)
    assert affine.summary["particle_map"] == "affine" and len(affine.summary["free_energy"]) == 51
    with pytest.raises(ValueError, match="particle_map"):
        m.gpf(d, particle_map="rotated", progress=False)
    with pytest.raises(Exception, match="particle_map=.affine."):
        m.gpf(d, particle_map="symmetric", precondition=True, progress=False)


def test_an_unconverged_particle_flow_warns():
    """Issue 50: a flow that did not converge warns (it returned the prior's draw silently)."""
    m = gpmc.Model(
        "data { N : int; x : vector[N]; y : vector[N]; }\n"
        "latent { w : real ~ normal(0, 1e30); }\n"
        "model { y ~ normal(x * w, 1e-3); }"
    )
    d = {"x": np.array([0.5, -1.0, 1.5, 2.0]), "y": np.array([1.2, -2.6, 3.9, 4.8])}
    with pytest.warns(gpmc.GpmcWarning, match="without converging"):
        fit = m.gpf(d, particle_map="affine", progress=False)
    assert fit.summary["converged"] is False
    assert fit.summary["stationarity"]["mean_shift_sd"] > 0


def python_blocks(path):
    text = path.read_text()
    blocks, inside, lines = [], False, []
    for line in text.splitlines():
        if line.strip() == "```python":
            inside, lines = True, []
        elif inside and line.strip() == "```":
            inside = False
            blocks.append("\n".join(lines))
        elif inside:
            lines.append(line)
    return blocks


def test_the_docs_example_runs_as_written(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    namespace = {}
    blocks = python_blocks(ROOT / "docs" / "python.md")
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), namespace)
    compare = az.compare(namespace["fits"])
    assert compare.index[0] == "student_t"
    assert namespace["pred"].shape[0] == 3


def test_the_readme_example_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    first = python_blocks(ROOT / "README.md")[0]
    assert "gpmc.Model" in first
    exec(compile(first, "README.md", "exec"), {})


def test_the_readme_cmdstan_snippet_runs_as_written(monkeypatch, tmp_path):
    # Issue 37: the CLI's files into ArviZ, with observed_data, so that plot_ppc works.
    (tmp_path / "models").symlink_to(MODELS)
    monkeypatch.chdir(tmp_path)
    cli = subprocess.run(
        [
            cli_binary(), "infer", "models/gp_classification.gpm",
            "--data", "models/gp_classification.data.json", "--log-lik", "--ppc",
            "--draws", "200", "--quiet", "--output", "out/gp_classification",
        ],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    snippet = python_blocks(ROOT / "README.md")[1]
    assert "from_cmdstan" in snippet
    scope = {}
    exec(compile(snippet, "README.md", "exec"), scope)
    assert "observed_data" in scope["idata"].groups()


def test_rao_blackwellised_means_are_the_closed_form_for_a_gaussian_model():
    # Bayesian linear regression with known noise: the conditional mean of (w, b) given nothing
    # else is the exact posterior mean, at every draw.
    d = regression_data()
    idata = gpmc.Model(REGRESSION).sample(d, chains=2, draws=300, progress=False)
    rb = gpmc.rao_blackwell(idata)
    x = np.column_stack([d["x"], np.ones_like(d["x"])])
    precision = x.T @ x / 0.25 + np.eye(2)
    exact = np.linalg.solve(precision, x.T @ d["y"] / 0.25)
    np.testing.assert_allclose(rb.loc[["w", "b"], "mean"].values, exact, atol=1e-9)
    assert (rb["mcse_mean"] < 1e-12).all()
    # The plain averages agree within their own error.
    z = (rb["draws_mean"] - rb["mean"]) / rb["draws_mcse_mean"]
    assert (z.abs() < 4.5).all(), rb


def test_draws_that_cannot_fit_in_memory_are_refused_before_sampling():
    t0 = time.time()
    with pytest.raises(gpmc.InferenceError, match="of memory"):
        gpmc.Model(REGRESSION).sample(regression_data(), draws=10**12, progress=False)
    assert time.time() - t0 < 10


STAN_STYLE = """
data {
  N : int; earn : vector[N] in 0..; x : vector[N]; z : vector[N];
  let log_earn = log(earn);
  let x_c = x - 0.5;
}
hyper { lambda : real in 0.. ~ gamma(2, 2); }
latent { b0 : real ~ flat(); beta : vector[2] ~ laplace(0, 1 / lambda); }
model {
  for i in 1..N { log_earn[i] ~ normal(b0 + beta[1] * x_c[i] + beta[2] * x_c[i] * z[i], 0.5); }
}
"""


def test_transformed_data_flat_and_heavy_tailed_priors():
    """A model written the Stan way (data `let`s, constant indices, flat and Laplace priors):
    the transformed response is observed data, the other `let`s constant data, the prior
    factor adds no log-likelihood, and prediction from the InferenceData recomputes the `let`s
    from new inputs without their responses."""
    rng = np.random.default_rng(4)
    n = 40
    x, z = rng.uniform(0, 1, n), (rng.uniform(0, 1, n) < 0.5).astype(float)
    earn = np.exp(1.0 + 0.8 * (x - 0.5) + 0.5 * rng.normal(size=n))
    idata = gpmc.Model(STAN_STYLE).sample({"N": n, "earn": earn, "x": x, "z": z}, draws=300)
    assert list(idata.observed_data.data_vars) == ["log_earn"]
    np.testing.assert_allclose(idata.observed_data["log_earn"].values, np.log(earn))
    np.testing.assert_allclose(idata.constant_data["x_c"].values, x - 0.5)
    assert idata.log_likelihood["log_earn"].shape[-1] == n
    assert abs(float(idata.posterior["b0"].mean()) - np.log(earn).mean()) < 0.3
    new = {"N": 3, "x": np.array([0.1, 0.5, 0.9]), "z": np.array([0.0, 1.0, 1.0])}
    p = gpmc.predict(idata, new)
    assert len(p) == 3 and np.isfinite(p.filter(like="_mean").values).all()
