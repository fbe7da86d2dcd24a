"""Stan programs from Python (issue 49): ``gpmc.Model("m.stan")`` and ``Model.from_stan(text)``
compile through the Stan front end, report which parameters became latents, sample the same
posterior as the equivalent ``.gpm`` model (the same draws, bit for bit, for the same seed), and
predict from the InferenceData."""

import json
import numpy as np
import pytest

import gpmc

STAN = """
data { int<lower=0> N; vector[N] x; vector[N] y; }
parameters { real a; real b; real<lower=0> sigma; }
model {
  a ~ normal(0, 1);
  b ~ normal(0, 1);
  sigma ~ gamma(2, 2);
  y ~ normal(a + b * x, sigma);
}
"""

# The same model in .gpm, as the front end translates it.
GPM = """
data { N : int in 0..; x : vector[N]; y : vector[N]; }
hyper { sigma : real in 0.. ~ gamma(2, 2); }
latent { a : real ~ normal(0, 1); b : real ~ normal(0, 1); }
model { for i in 1..N { y[i] ~ normal(a + b * x[i], sigma); } }
"""


def data(n=25):
    rng = np.random.default_rng(3)
    x = np.linspace(-1, 1, n)
    return {"x": x, "y": 0.5 - 1.2 * x + 0.3 * rng.standard_normal(n)}


def test_from_stan_decides_latents_and_matches_the_gpm_model(tmp_path):
    m = gpmc.Model.from_stan(STAN)
    roles = {p["name"]: p["role"] for p in m.stan_parameters()}
    assert roles == {"a": "latent", "b": "latent", "sigma": "hyper"}
    assert gpmc.Model(GPM).stan_parameters() is None
    d = data()
    a = m.sample(d, chains=2, draws=300, warmup=100, seed=4, progress=False)
    b = gpmc.Model(GPM).sample(d, chains=2, draws=300, warmup=100, seed=4, progress=False)
    for v in ("a", "b", "sigma"):
        np.testing.assert_array_equal(a.posterior[v].values, b.posterior[v].values)
    # A .stan path compiles the same way, and predictions come back from the InferenceData.
    path = tmp_path / "regression.stan"
    path.write_text(STAN)
    idata = gpmc.Model(str(path)).sample(d, chains=2, draws=200, warmup=100, seed=4, progress=False)
    pred = gpmc.predict(idata, {"x": np.array([0.0, 1.0])})
    assert len(pred) == 2, pred
    assert "y_rep_1_mean" in pred.columns, list(pred.columns)
    assert abs(float(pred["y_rep_1_mean"].iloc[1]) - (0.5 - 1.2)) < 0.5


def test_a_stan_program_gpmc_cannot_translate_raises_with_the_construct():
    with pytest.raises(gpmc.ModelError, match="user-defined functions"):
        gpmc.Model.from_stan("functions { real f(real x) { return x; } } model { }")


# Outside the Gaussian-latent class (a lag and a mixture weight on a simplex): NUTS on the
# whole log density, its generated quantities as InferenceData groups.
AR1 = """
data { int<lower=2> T; vector[T] y; }
parameters { real<lower=-1, upper=1> phi; simplex[2] w; }
model {
  w ~ dirichlet([2, 3]');
  for (t in 2:T) y[t] ~ normal(phi * y[t - 1], 0.7);
}
generated quantities {
  vector[T - 1] log_lik;
  vector[T - 1] y_rep;
  for (t in 2:T) {
    log_lik[t - 1] = normal_lpdf(y[t] | phi * y[t - 1], 0.7);
    y_rep[t - 1] = normal_rng(phi * y[t - 1], 0.7);
  }
}
"""


def test_a_stan_program_outside_the_class_runs_nuts_on_its_log_density():
    import arviz as az

    y = [0.3, 0.9, 0.4, 1.1, 0.2, -0.5, -0.1, 0.6, 0.8, 0.1]
    m = gpmc.Model.from_stan(AR1)
    assert m.whole_log_density
    assert "NUTS on the whole log density" in str(m)
    assert m.check()["method"] == "nuts"
    idata = m.sample({"T": len(y), "y": np.array(y)}, chains=2, draws=1000, progress=False)
    assert set(idata.groups()) >= {"posterior", "sample_stats", "log_likelihood", "posterior_predictive"}
    assert idata.posterior["w"].shape == (2, 1000, 2)
    assert idata.log_likelihood["log_lik"].shape == (2, 1000, len(y) - 1)
    # The exact posterior of phi by quadrature on (-1, 1); w's is Dirichlet(2, 3).
    grid = np.linspace(-1, 1, 4001)[1:-1]
    yy = np.array(y)
    lp = np.array([-0.5 * np.sum((yy[1:] - g * yy[:-1]) ** 2) / 0.49 for g in grid])
    p = np.exp(lp - lp.max())
    mean = np.sum(grid * p) / np.sum(p)
    assert abs(float(idata.posterior["phi"].mean()) - mean) < 0.05
    assert abs(float(idata.posterior["w"].sel(w_dim_0=0).mean()) - 0.4) < 0.03
    loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo)
    # The same seed gives the same draws.
    again = m.sample({"T": len(y), "y": np.array(y)}, chains=2, draws=1000, progress=False)
    assert np.array_equal(idata.posterior["phi"].values, again.posterior["phi"].values)
    with pytest.raises(gpmc.InferenceError, match="whole log density"):
        m.cavi({"T": len(y), "y": np.array(y)})
    with pytest.raises(gpmc.InferenceError, match="not available yet"):
        gpmc.predict(idata, {"T": len(y), "y": np.array(y)})
    with pytest.raises(gpmc.DataError, match="`y`"):
        m.sample({"T": len(y), "y": np.array(y[:3])}, chains=1, draws=10, progress=False)
    # Stan's controls: a higher target acceptance adapts a smaller step; out of range is refused.
    data = {"T": len(y), "y": np.array(y)}
    careful = m.nuts(data, chains=2, draws=200, adapt_delta=0.99, max_treedepth=6, progress=False)
    steps = [c["step_size"] for c in json.loads(careful.posterior.attrs["gpmc_summary"])["nuts"]]
    default = [c["step_size"] for c in json.loads(idata.posterior.attrs["gpmc_summary"])["nuts"]]
    assert max(steps) < min(default), (steps, default)
    with pytest.raises(ValueError, match="adapt_delta must be in"):
        m.nuts(data, chains=1, draws=10, adapt_delta=1.5, progress=False)
    with pytest.raises(ValueError, match="max_treedepth must be from 1"):
        m.sample(data, chains=1, draws=10, max_treedepth=0, progress=False)
    # The low-rank metric reaches the same posterior (phi's mean by quadrature, above).
    low_rank = m.nuts(data, chains=2, draws=1000, metric="low-rank", progress=False)
    assert abs(float(low_rank.posterior["phi"].mean()) - mean) < 0.05
    with pytest.raises(ValueError, match="unknown metric `dense`"):
        m.nuts(data, chains=1, draws=10, metric="dense", progress=False)
