"""The newcomer's path of issue 37, as one script: the package installed into a fresh virtualenv
(./run-tests does that), a GP classifier with priors and one with learned hyperparameters
compared by LOO, prediction at new inputs, a multi-class GP predicted from its InferenceData
with the class count left out of the new data, and posterior predictive checks drawn as bars
for labels."""

import json
import pathlib
import warnings

import arviz as az
import matplotlib

matplotlib.use("Agg")
import numpy as np

import gpmc

MODELS = pathlib.Path(__file__).resolve().parents[2] / "models"

CLASSIFIER = """
data {{ N : int; D : int; X : matrix[N, D]; y : int[N] in {{-1, 1}}; }}
hyper {{ {hypers} }}
latent {{ f : vector[N] ~ gp(X, variance * sqexp(lengthscale)); }}
model {{ y ~ bernoulli_logit(f); }}
"""

PRIORS = "lengthscale : real in 0.. ~ gamma(2.0, 2.0); variance : real in 0.. ~ gamma(2.0, 0.5);"
LEARNED = "lengthscale : real in 0.. = learn(1.0); variance : real in 0.. = learn(2.0);"


def test_the_newcomer_path_runs_end_to_end():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(80, 2))
    y = np.where(np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(80) > 0, 1, -1)
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpmc.GpmcWarning)  # short chains: said, not failed
        for name, hypers in [("priors", PRIORS), ("learned", LEARNED)]:
            model = gpmc.Model(CLASSIFIER.format(hypers=hypers))
            fits[name] = model.sample({"X": X, "y": y}, chains=2, draws=300, warmup=200, seed=1,
                                      progress=False)
    # LOO comparison, as with any PPL's InferenceData.
    table = az.compare(fits)
    assert list(table.index) and set(table.index) == {"priors", "learned"}
    assert np.all(np.isfinite(table["elpd_loo"]))
    # Prediction at new inputs, no responses needed.
    new = np.array([[0.0, 0.0], [2.0, 1.0], [-2.0, -1.0]])
    pred = gpmc.predict(fits["priors"], {"X": new})
    assert len(pred) == 3 and np.all((pred["p_1_1"] >= 0) & (pred["p_1_1"] <= 1))
    # Labels stay integers: ArviZ draws the PPC as a discrete distribution.
    idata = fits["priors"]
    assert idata.observed_data["y"].dtype.kind == "i"
    assert idata.posterior_predictive["y"].dtype.kind == "i"
    axes = az.plot_ppc(idata, num_pp_samples=20)
    assert axes is not None
    # A multi-class GP whose class count is data, predicted from the InferenceData (also
    # through netCDF) with only the new inputs.
    d = json.loads((MODELS / "multiclass_gp.data.json").read_text())
    data = {k: (np.array(v) if isinstance(v, list) else v) for k, v in d.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpmc.GpmcWarning)
        multi = gpmc.Model(MODELS / "multiclass_gp.gpm").sample(
            data, chains=1, draws=100, warmup=100, seed=2, progress=False
        )
    test = json.loads((MODELS / "multiclass_gp.test.json").read_text())
    probs = gpmc.predict(multi, {"X": np.array(test["X"])})
    p = probs[[c for c in probs.columns if c.startswith("p_1_")]].to_numpy()
    assert p.shape[1] == d["C"]
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)  # 6 decimals in the table


def _fitted_classifier():
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(30, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = gpmc.Model(CLASSIFIER.format(hypers=PRIORS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpmc.GpmcWarning)
        idata = model.sample({"X": X, "y": y}, chains=1, draws=20, warmup=20, progress=False)
    return model, X, y, idata


def test_messages_name_the_newcomers_actual_mistake():
    """Issue 53's misleading messages: each names the datum and the fix."""
    import pytest

    model, X, y, idata = _fitted_classifier()
    # A single test point as a 1-D array: the matrix is named (not the optional response).
    with pytest.raises(gpmc.DataError) as e:
        gpmc.predict(idata, {"X": X[0]})
    text = str(e.value)
    assert "`X` is declared `matrix[N, D]`" in text and "reshape(1, -1)" in text, text
    assert "`y` is missing" not in text
    # A response as a one-column matrix is its column (as scikit-learn reads it).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpmc.GpmcWarning)
        column = model.sample({"X": X, "y": y[:, None]}, chains=1, draws=20, warmup=20,
                              progress=False, seed=4)
        flat = model.sample({"X": X, "y": y}, chains=1, draws=20, warmup=20, progress=False,
                            seed=4)
    np.testing.assert_array_equal(column.posterior["f"].values, flat.posterior["f"].values)
    # Two columns where a vector is declared: its declared type, not "vector".
    with pytest.raises(gpmc.DataError) as e:
        model.sample({"X": X, "y": np.stack([y, y], axis=1)}, chains=1, draws=5, warmup=5,
                     progress=False)
    assert "`y` is declared `int[N]`" in str(e.value), str(e.value)
    # A dict where a fit is expected.
    with pytest.raises(TypeError, match="gpmc.predict takes what a fit returned"):
        gpmc.predict({"posterior": 1}, {"X": X})


def test_a_warning_points_at_the_users_line():
    model, X, y, _ = _fitted_classifier()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", gpmc.GpmcWarning)
        model.sample({"X": X, "y": y}, chains=1, draws=10, warmup=5, progress=False)
    ours = [w for w in caught if issubclass(w.category, gpmc.GpmcWarning)]
    assert ours, "short chains warn"
    assert all(w.filename == __file__ for w in ours), [(w.filename, w.lineno) for w in ours]


def test_pandas_categorical_labels():
    """Numeric categories are their values; text labels are mapped onto the declared label set
    in the categories' order, the mapping kept in the InferenceData and used for new data
    (issue 53)."""
    import pandas as pd
    import pytest

    model = gpmc.Model(str(MODELS / "multiclass_gp.gpm"))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    codes = rng.choice([1, 2, 3], 30)
    kw = dict(chains=1, draws=5, warmup=5, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpmc.GpmcWarning)
        as_numbers = model.sample({"X": X, "y": codes, "C": 3}, **kw)
        as_categorical = model.sample({"X": X, "y": pd.Categorical(codes), "C": 3}, **kw)
    np.testing.assert_array_equal(as_numbers.posterior["F"].values,
                                  as_categorical.posterior["F"].values)
    # Categories in an order of their own: owl is 1, cat 2, dog 3.
    names = pd.Categorical(np.array(["owl", "cat", "dog"])[codes - 1],
                           categories=["owl", "cat", "dog"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpmc.GpmcWarning)
        as_text = model.sample({"X": X, "y": names, "C": 3}, **kw)
    np.testing.assert_array_equal(as_numbers.posterior["F"].values, as_text.posterior["F"].values)
    stored = json.loads(as_text.posterior.attrs["gpmc_labels"])
    assert stored == {"y": [[1, "owl"], [2, "cat"], [3, "dog"]]}
    assert "gpmc_labels" not in as_numbers.posterior.attrs
    # New data with text labels take the fit's mapping; labels it does not know are refused.
    new = {"X": X[:4], "y": np.array(["owl", "cat", "dog"])[codes[:4] - 1]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpmc.GpmcWarning)
        by_text = gpmc.predict(as_text, new)
        by_numbers = gpmc.predict(as_text, {"X": X[:4], "y": codes[:4]})
    assert by_text.attrs["metrics"] == by_numbers.attrs["metrics"]
    with pytest.raises(gpmc.DataError, match="does not have"):
        gpmc.predict(as_text, {"X": X[:2], "y": ["owl", "emu"]})
    with pytest.raises(gpmc.DataError, match="the fit was given numbers"):
        gpmc.predict(as_numbers, new)


def test_text_labels_map_onto_a_binary_label_set():
    """Strings for `y in {-1, 1}` map in sorted order (as scikit-learn's LabelEncoder); one
    label alone, or more labels than the set has, is refused with the reason."""
    import pytest

    model = gpmc.Model(str(MODELS / "gp_classification.gpm"))
    d = json.loads((MODELS / "gp_classification.data.json").read_text())
    y = np.array(d["y"])
    text = np.where(y > 0, "spam", "ham")  # ham < spam: ham is -1, spam 1
    kw = dict(chains=1, draws=5, warmup=5, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpmc.GpmcWarning)
        a = model.sample({"X": np.array(d["X"]), "y": y}, **kw)
        b = model.sample({"X": np.array(d["X"]), "y": list(text)}, **kw)
    np.testing.assert_array_equal(a.posterior["f"].values, b.posterior["f"].values)
    assert json.loads(b.posterior.attrs["gpmc_labels"]) == {"y": [[-1, "ham"], [1, "spam"]]}
    with pytest.raises(gpmc.DataError, match="only the label"):
        model.sample({"X": np.array(d["X"]), "y": ["ham"] * len(y)}, **kw)
    three = np.array(["ham", "spam", "eggs"])[np.arange(len(y)) % 3]
    with pytest.raises(gpmc.DataError, match="has 2"):
        model.sample({"X": np.array(d["X"]), "y": three}, **kw)


def test_progress_without_tqdm_prints_each_count_once(capsys):
    """Without tqdm the progress is a line on stderr; a count the extension reports again (a
    10⁶-row `Model.sample` reported 300/300 about 900 times while it gathered its draws) is
    printed once."""
    bar = gpmc._Progress(True, "gibbs")
    bar.bar = None  # the line printer, whether or not tqdm is installed here
    bar(0, 300)
    for _ in range(50):
        bar(300, 300)
    bar(10, 10)  # another phase's end is printed
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "gibbs: 0/300", lines
    assert sum(line.startswith("gibbs: 300/300") for line in lines) == 1, lines
    assert lines[-1].startswith("gibbs: 10/10"), lines
