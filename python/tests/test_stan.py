"""Stan programs from Python (issue 49): ``gpmc.Model("m.stan")`` and ``Model.from_stan(text)``
compile through the Stan front end, report which parameters became latents, sample the same
posterior as the equivalent ``.gpm`` model (the same draws, bit for bit, for the same seed), and
predict from the InferenceData."""

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
