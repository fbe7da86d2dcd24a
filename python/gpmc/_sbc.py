"""Simulation-based calibration (Talts et al. 2018; Modrák et al. 2023): is a method's posterior
the model's, across the prior?

Draw parameters from the prior and data from the likelihood (``simulate``), fit, and take each
parameter's rank among its posterior draws. When the fit is exact the rank is uniform whatever
the prior draw; a missing Jacobian, a wrong acceptance ratio or a sampler that does not mix
shows up as a rank distribution that is not. Uniformity is judged by the ECDF-difference
simultaneous bands of Säilynoja, Bürkner & Vehtari (2022) — the ECDF of the ranks against the
uniform's, a band that every ECDF of uniform ranks stays inside with probability ``1 − alpha``
— and by a χ² test of the rank histogram.

``simulate(rng) -> (truth, data)``: ``truth`` maps parameter names (hyperparameters and
latents, as the fit names them) to values, ``data`` is what ``Model.sample`` takes. It is the
user's: gpmc does not draw from a model's prior itself, and a simulator written apart from the
model is what makes the check independent of the code under test.

>>> result = gpmc.sbc(model, simulate, simulations=200)    # doctest: +SKIP
>>> result.table()                                          # doctest: +SKIP
>>> result.plot("sbc.png")                                  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

#: Points at which the rank ECDF is compared with the uniform's (Säilynoja et al.: K ≤ L + 1).
ECDF_POINTS = 50
#: Uniform samples simulated to adjust the simultaneous band's level (and to give each
#: parameter's band p-value, resolved to 1/4000 — enough for a Bonferroni level over 36
#: parameters, 0.05/36 ≈ 1.4e-3).
BAND_SIMULATIONS = 4000


class SbcResult:
    """The ranks of a calibration run: ``ranks`` (name -> array of ranks in ``0..draws``, one
    per simulation), ``draws`` (the thinned draws each rank is among), ``failures`` (simulations
    whose fit raised, with the message) and :meth:`table` / :meth:`plot`."""

    def __init__(self, ranks, draws, failures, method, alpha=0.05, seed=0):
        self.ranks = {k: np.asarray(v, dtype=np.int64) for k, v in ranks.items()}
        self.draws, self.failures, self.method, self.alpha = draws, failures, method, alpha
        self._seed = seed

    def band_gamma(self, n):
        """The pointwise level γ of the simultaneous band for ``n`` ranks."""
        return float(np.quantile(_uniform_lows(n, self.draws, self._seed), self.alpha))

    def band_p(self, low, n):
        """The probability that uniform ranks leave a band as far as ``low`` (the smallest
        pointwise tail probability): the parameter's p-value for the simultaneous test."""
        lows = _uniform_lows(n, self.draws, self._seed)
        return float((np.sum(lows <= low) + 1) / (len(lows) + 1))

    def table(self):
        """Per parameter: simulations, the ECDF test (``ecdf_outside``: whether the rank ECDF
        leaves the 1 − alpha simultaneous band; ``ecdf_p``: the smallest pointwise tail
        probability against the band's γ; ``band_p``: the p-value of the band test), the same
        test at the family's level (``family_outside``: ``band_p`` below alpha over the number
        of parameters, Bonferroni — with many parameters, a GP's values, some leave their own
        95 % band by chance alone) and the χ² test of the histogram, as a pandas DataFrame."""
        import pandas as pd
        from scipy import stats

        rows = []
        for name, r in self.ranks.items():
            n = len(r)
            gamma = self.band_gamma(n)
            low = _smallest_tail(r, self.draws)
            bins = _bins(self.draws)
            counts = np.bincount(r * bins // (self.draws + 1), minlength=bins)
            chi2 = stats.chisquare(counts).pvalue
            band_p = self.band_p(low, n)
            rows.append(
                {
                    "parameter": name,
                    "simulations": n,
                    "ecdf_p": low,
                    "band_gamma": gamma,
                    "ecdf_outside": bool(low < gamma),
                    "band_p": band_p,
                    "family_outside": bool(band_p < self.alpha / len(self.ranks)),
                    "chi2_p": chi2,
                }
            )
        return pd.DataFrame(rows)

    def calibrated(self, family=True):
        """Whether no parameter's rank ECDF leaves its band: at the family's level (the
        default: the chance that any of uniform parameters fails is at most alpha), or, with
        ``family=False``, each at its own."""
        return not self.table()["family_outside" if family else "ecdf_outside"].any()

    def plot(self, path, parameters=None):
        """Rank histograms and ECDF-difference plots with their bands, one row per parameter,
        written to ``path`` (any format matplotlib writes)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(parameters or self.ranks)
        fig, axes = plt.subplots(len(names), 2, figsize=(9, 2.4 * len(names)), squeeze=False)
        z = np.arange(1, ECDF_POINTS + 1) / (ECDF_POINTS + 1)
        for (hist, ecdf), name in zip(axes, names):
            r = self.ranks[name]
            n = len(r)
            bins = _bins(self.draws)
            hist.hist(r, bins=bins, range=(0, self.draws + 1), color="0.6", edgecolor="white")
            hist.axhline(n / bins, color="k", lw=0.8)
            hist.set_title(f"{name}: ranks", fontsize=9)
            lo, hi = _band(n, self.draws, self.band_gamma(n))
            f, p = _ecdf(r, self.draws, z), _uniform_ecdf(self.draws, z)
            ecdf.fill_between(z, lo / n - p, hi / n - p, color="0.85", step="post")
            ecdf.plot(z, f - p, color="C0", drawstyle="steps-post")
            ecdf.axhline(0, color="k", lw=0.5)
            ecdf.set_title(f"{name}: ECDF − uniform, {1 - self.alpha:.0%} band", fontsize=9)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)


def _bins(draws):
    """Histogram bins that hold equally many rank values (`draws + 1` of them): the largest
    divisor of `draws + 1` up to 20 — bins of 2 and 3 values alternately fail a χ² test of
    uniform ranks."""
    return max(b for b in range(1, 21) if (draws + 1) % b == 0)


def _uniform_ecdf(draws, z):
    """``P(rank / (draws + 1) < z)`` for uniform ranks in ``0..draws``."""
    return np.ceil(z * (draws + 1)) / (draws + 1)


def _ecdf(ranks, draws, z):
    """The ECDF of the fractional ranks ``rank / (draws + 1)`` at ``z``."""
    u = np.asarray(ranks) / (draws + 1)
    return (u[None, :] < z[:, None]).mean(axis=1)


def _smallest_tail(ranks, draws):
    """The smallest two-sided binomial tail probability of the ECDF counts over the points
    (a sample leaves the simultaneous band of level γ exactly when it is below γ)."""
    from scipy import stats

    n = len(ranks)
    z = np.arange(1, ECDF_POINTS + 1) / (ECDF_POINTS + 1)
    # The ranks are discrete: a point z sees P(u < z) = ceil(z (L + 1)) / (L + 1).
    p = _uniform_ecdf(draws, z)
    k = np.round(_ecdf(ranks, draws, z) * n)
    tails = np.minimum(stats.binom.cdf(k, n, p), stats.binom.sf(k - 1, n, p))
    return float(np.min(2 * tails))


@functools.lru_cache(maxsize=64)
def _uniform_lows(n, draws, seed):
    """Säilynoja et al.'s simulation: the smallest pointwise tail probability of ``n`` uniform
    ranks, ``BAND_SIMULATIONS`` times — its ``alpha`` quantile is the band's γ (simulated once
    per run size, not per parameter and again per plot)."""
    rng = np.random.default_rng([seed, n, draws])
    lows = [
        _smallest_tail(rng.integers(0, draws + 1, size=n), draws) for _ in range(BAND_SIMULATIONS)
    ]
    return np.sort(np.asarray(lows))


def _band(n, draws, gamma):
    """The band's counts at the ECDF points: binomial quantiles at γ/2 and 1 − γ/2."""
    from scipy import stats

    p = _uniform_ecdf(draws, np.arange(1, ECDF_POINTS + 1) / (ECDF_POINTS + 1))
    return stats.binom.ppf(gamma / 2, n, p), stats.binom.ppf(1 - gamma / 2, n, p)


def _flat(value):
    return np.ravel(np.asarray(value, dtype=float))


def _fit_draws(model, data, method, draws, warmup, thin, seed, options):
    """The posterior of one simulated data set as InferenceData with ``draws`` draws."""
    if method == "gibbs":
        return model.sample(
            data, chains=1, draws=draws, warmup=warmup, thin=thin, seed=seed,
            log_lik=False, ppc=False, progress=False, **options,
        )
    if method == "nuts":
        return model.nuts(
            data, chains=1, draws=draws, warmup=warmup, thin=thin, seed=seed,
            log_lik=False, ppc=False, progress=False, **options,
        )
    if method in ("cavi", "gpf", "svi"):
        fit = getattr(model, method)(data, progress=False, **options)
        return fit.to_inference_data(draws=draws, seed=seed, log_lik=False, ppc=False)
    raise ValueError(f"method must be gibbs, nuts, cavi, gpf or svi, not {method!r}")


def sbc(
    model,
    simulate,
    simulations=200,
    *,
    method="gibbs",
    draws=99,
    warmup=200,
    thin=5,
    seed=1,
    parameters=None,
    alpha=0.05,
    progress=True,
    **options,
):
    """Simulation-based calibration of ``model`` fitted by ``method`` on ``simulations`` data
    sets from ``simulate(rng) -> (truth, data)``. Each fit keeps ``draws`` draws (thinned by
    ``thin`` so that they are near independent: autocorrelated draws make even an exact
    sampler's ranks non-uniform); each entry of each parameter in ``truth`` (or in
    ``parameters``) gets its rank among them. ``options`` go to the fit. Returns an
    :class:`SbcResult`. A simulation whose fit raises is recorded in ``failures`` and left
    out (a sampler that fails on part of the prior is itself a finding)."""
    ranks, failures = {}, []
    for s in range(simulations):
        rng = np.random.default_rng([seed, s])
        truth, data = simulate(rng)
        names = list(parameters or truth)
        try:
            with warnings.catch_warnings():
                # One chain per fit: its convergence warnings are expected and not the test.
                warnings.simplefilter("ignore")
                idata = _fit_draws(
                    model, data, method, draws, warmup, thin, seed * 100003 + s, options
                )
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on
            failures.append((s, f"{type(e).__name__}: {e}"))
            continue
        post = idata.posterior
        for name in names:
            if name not in post:
                raise KeyError(
                    f"`{name}` is in the simulator's truth but not in the fit's posterior "
                    f"(its variables: {list(post.data_vars)})"
                )
            values = post[name].values.reshape(-1, *post[name].shape[2:])
            values = values.reshape(values.shape[0], -1)
            true = _flat(truth[name])
            if true.size != values.shape[1]:
                raise ValueError(
                    f"`{name}`: the simulator gives {true.size} values, the fit {values.shape[1]}"
                )
            for k in range(true.size):
                key = name if true.size == 1 else f"{name}[{k + 1}]"
                ranks.setdefault(key, []).append(int(np.sum(values[:, k] < true[k])))
        if progress:
            print(f"\rSBC: {s + 1}/{simulations} simulations", end="", flush=True)
    if progress:
        print()
    return SbcResult(ranks, draws, failures, method, alpha, seed)
