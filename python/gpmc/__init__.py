"""gpmc from Python: compile a ``.gpm`` model, then sample it by exact blocked Gibbs
(:meth:`Model.sample`, an ArviZ ``InferenceData``) or fit it by CAVI, SVI or Gaussian particle
flow (:meth:`Model.cavi`, :meth:`Model.svi`, :meth:`Model.gpf`, a :class:`Fit`), and predict at
new inputs (:func:`predict`). Everything runs in the same Rust library as the ``gpmc`` command
line; see docs/python.md.

>>> import gpmc
>>> model = gpmc.Model("models/gp_classification.gpm")          # doctest: +SKIP
>>> idata = model.sample({"X": X, "y": y}, chains=4, draws=1000) # doctest: +SKIP
"""

from __future__ import annotations

import io
import json
import os
import sys
import time

import numpy as np

from . import _data, _idata
from ._gpmc import DataError, InferenceError, ModelError, compile as _compile
from ._gpmc import compile_density as _compile_density
from ._gpmc import __version__ as _extension_version
from ._gpmc import svi_defaults as _svi_defaults

#: SVI's defaults (batch, iterations, forgetting, delay, hyper_rate, class_batch): the Rust
#: library's, which the command line uses too — read, not restated.
SVI_DEFAULTS = dict(_svi_defaults())

# The errors are gpmc's: named so, they pickle by reference — an error raised on a Dask
# worker reaches the driver as the same class (`except gpmc.DataError` catches it), not as an
# unpicklable `_gpmc.DataError`.
for _error in (DataError, InferenceError, ModelError):
    _error.__module__ = "gpmc"
del _error

__all__ = [
    "Model", "Fit", "predict", "rao_blackwell", "ModelError", "DataError", "InferenceError",
    "GpmcWarning", "cluster", "sbc", "SbcResult", "SVI_DEFAULTS",
]
#: The version: the Cargo workspace's, compiled into the extension (the wheel's metadata carries
#: the same; read from the extension, a checkout without installed metadata imports too).
__version__ = _extension_version
#: The name to install: `pip install gpmc-ppl` (PyPI's `gpmc` is another project).
DISTRIBUTION = "gpmc-ppl"


class _Progress:
    """A progress callable for the extension: a tqdm bar (notebooks and terminals) when tqdm is
    installed, else a line on stderr every few seconds; nothing when disabled."""

    def __init__(self, enabled, what):
        self.enabled, self.what, self.bar, self.last = enabled, what, None, 0.0
        # The (done, total) last printed: a count the extension reports again (it does at the
        # end, while the draws are gathered) is not printed again.
        self.shown = None
        self.start = time.monotonic()
        if enabled:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(desc=what, unit="step", leave=False)
            except ImportError:
                self.bar = None

    def __call__(self, done, total, note=None):
        """``done`` of ``total`` steps; ``note`` (the ELBO, say) shown beside them."""
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.total = total
            self.bar.n = done
            if note:
                self.bar.set_postfix_str(note, refresh=False)
            self.bar.refresh()
            return
        now = time.monotonic()
        if (done, total) != self.shown and (now - self.last >= 3.0 or done >= total):
            self.last, self.shown = now, (done, total)
            beside = f", {note}" if note else ""
            if done:
                beside += f", about {(now - self.start) / done * (total - done):.0f} s left"
            print(
                f"{self.what}: {done}/{total}{beside}",
                file=sys.stderr,
                flush=True,
            )

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _read_source(path_or_source):
    if isinstance(path_or_source, os.PathLike) or (
        isinstance(path_or_source, str)
        and "\n" not in path_or_source
        and path_or_source.endswith((".gpm", ".stan"))
    ):
        path = os.fspath(path_or_source)
        with open(path, encoding="utf-8") as f:
            return os.path.basename(path), f.read()
    return "<model>", str(path_or_source)


# The name a Stan program given as text is compiled under: the front end is chosen by a name
# ending in `.stan` (gpmc::is_stan), here as on the command line.
_STAN_TEXT = "<model>.stan"


def _frame(csv, metrics):
    import pandas as pd

    df = pd.read_csv(io.StringIO(csv))
    df.attrs["metrics"] = json.loads(metrics)
    return df


class Model:
    """A compiled model.

    ``Model(path_or_source)`` reads a ``.gpm`` file or a Stan program (a path ending in ``.gpm``
    or ``.stan``) or takes ``.gpm`` text itself, parses, type-checks and augments it;
    :meth:`from_stan` takes a Stan program's text. A model that fails raises
    :class:`ModelError` whose message is the rendered diagnostic.
    """

    def __init__(self, path_or_source, *, generic=False, name=None):
        self.name, self.source = _read_source(path_or_source)
        if name is not None:
            self.name = name
        self.generic = bool(generic)
        # A Stan program the Gaussian-latent path refuses runs under NUTS on its whole log
        # density (docs/stan_models.md); `_density` is then that program, `_compiled` None.
        self._density = None
        try:
            self._compiled = _compile(self.name, self.source, self.generic)
        except ModelError:
            if not self.name.endswith(".stan"):
                raise
            self._density = _compile_density(self.name, self.source)
            self._compiled = None

    @property
    def whole_log_density(self):
        """Whether this Stan program runs under NUTS on its whole log density (it is outside
        the Gaussian-latent class: ``str(model)`` says why) rather than by augmentation."""
        return self._density is not None

    @classmethod
    def from_stan(cls, text, *, generic=False):
        """A model from the text of a Stan program (docs/stan_models.md: which parameters
        become Gaussian latents, and what is translated): the same as ``Model("m.stan")``."""
        return cls(str(text), generic=generic, name=_STAN_TEXT)

    def stan_parameters(self):
        """For a Stan program, each parameter's role as the compiler decided it: a list of
        ``{"name", "role", "why"}`` (``role`` is ``"latent"`` or ``"hyper"``); ``None`` for a
        ``.gpm`` model."""
        stan = self.check().get("stan")
        return None if stan is None else stan["parameters"]

    def check(self):
        """The derivation and schedule, as ``gpmc check --format json`` prints them (a dict)."""
        return json.loads((self._density or self._compiled).report_json())

    def __str__(self):
        return (self._density or self._compiled).report_text()

    def _data(self, data, columns, labels=None, text_labels=True):
        """The data normalised; text labels mapped onto the declared label sets unless
        ``text_labels`` is False (the cluster, whose partitions could order them differently),
        by ``labels`` when a fit's mapping is given."""
        names = {n for n, kind, _d in self._compiled.declarations() if kind == "data"}
        sets = self._label_sets() if text_labels else None
        return _data.normalise(data, columns, names, sets, labels if text_labels else None)

    def _label_sets(self):
        """Each integer datum's declared label set (``"{-1, 1}"``, ``"1..C"``), onto which text
        labels are mapped (docs/python.md, "Data")."""
        if self._density is not None:
            return {}
        return dict(self._compiled.label_sets())

    def sample(
        self,
        data,
        chains=4,
        draws=1000,
        warmup=None,
        seed=1,
        *,
        thin=1,
        log_lik=True,
        ppc=True,
        init=None,
        progress=True,
        columns=None,
        client=None,
        adapt_delta=None,
        max_treedepth=None,
        metric=None,
    ):
        """Exact blocked Gibbs sampling; returns ``arviz.InferenceData`` with ``posterior``
        (dimensions named from the declared shapes), ``sample_stats`` (``lp``),
        ``log_likelihood`` and ``posterior_predictive`` (one variable per response, named after
        it), ``observed_data`` and ``constant_data``. The same seed gives the same draws as
        ``gpmc infer --seed``. ``init``: initial values of latents (a dict, as ``--init``).
        ``columns``: with a pandas DataFrame as ``data``, datum name -> column(s). ``client``: a
        ``dask.distributed.Client`` to run each chain as a task on its workers (the data sent
        to every worker once); the chains, summaries and warnings are those of the same call
        without it, bit for bit (no progress bar: the chains run elsewhere). ``warmup``: 200
        sweeps by default. A Stan program outside the Gaussian-latent class
        (:attr:`whole_log_density`) runs NUTS on its whole log density instead (warm-up 1000
        by default; ``log_lik``, ``ppc``, ``init``, ``columns`` and ``client`` do not apply: its
        own generated quantities ``log_lik`` and ``y_rep`` become the ``log_likelihood`` and
        ``posterior_predictive`` groups; ``adapt_delta``, ``max_treedepth`` and ``metric`` as in
        :meth:`nuts`)."""
        control = (adapt_delta, max_treedepth, metric)
        if self._density is not None:
            return self._density_run(
                data, chains, draws, warmup, thin, seed, progress, client, control
            )
        if control != (None, None, None):
            raise InferenceError(
                "adapt_delta, max_treedepth and metric are NUTS's controls: Gibbs has no step size; "
                "use Model.nuts(...) for NUTS"
            )
        warmup = 200 if warmup is None else warmup
        norm = self._data(data, columns)
        settings = (chains, draws, warmup, thin, seed, log_lik, ppc)
        init_json = None if init is None else json.dumps(_jsonable(init))
        if client is not None:
            from . import cluster

            bar = _Progress(progress, "gpmc sample on the cluster")
            try:
                cols, rows, nchains, ndraws, summary, hypers = cluster._chains_as_tasks(
                    self, client, norm, settings, init_json, bar
                )
            finally:
                bar.close()
            return self._draws_data(cols, rows, nchains, ndraws, summary, hypers, norm, seed)
        return self._run_chains(norm, settings, init_json, progress, "gibbs")

    def nuts(
        self,
        data,
        chains=4,
        draws=1000,
        warmup=1000,
        seed=1,
        *,
        thin=1,
        log_lik=True,
        ppc=True,
        progress=True,
        columns=None,
        augmented=False,
        adapt_delta=None,
        max_treedepth=None,
        metric=None,
    ):
        """NUTS (the nuts-rs sampler nutpie is built on) on the original model, the latents
        whitened by their priors, sampled hyperparameters on unconstrained scales and the
        gradients from the compiled model (``gpmc infer --method nuts``): the same
        ``arviz.InferenceData`` as :meth:`sample`; divergences are warned of as Stan does.
        ``augmented=True`` samples the augmented model instead, each auxiliary of a scale
        mixture a coordinate ``log ω`` (``--augmented``; fixed hyperparameters).
        ``adapt_delta`` (default 0.8) and ``max_treedepth`` (default 10) are Stan's controls
        (``--adapt-delta``, ``--max-treedepth``): raise ``adapt_delta`` towards 0.99 when there
        are divergences. ``metric``: ``"diag"`` (default, Stan's ``diag_e``) or ``"low-rank"``
        (``--metric low-rank``: nutpie's low-rank modified mass matrix, for strongly correlated
        parameters such as a collinear regression's)."""
        control = (adapt_delta, max_treedepth, metric)
        if self._density is not None:
            return self._density_run(
                data, chains, draws, warmup, thin, seed, progress, None, control
            )
        norm = self._data(data, columns)
        settings = (chains, draws, warmup, thin, seed, log_lik, ppc)
        return self._run_chains(norm, settings, None, progress, "nuts", augmented, control)

    def _run_chains(
        self, norm, settings, init_json, progress, method, augmented=False, control=(None, None, None)
    ):
        bar = _Progress(progress, method)
        try:
            cols, rows, nchains, ndraws, summary, hypers = self._compiled.sample(
                _data.handover(norm), *settings, init_json, bar, nuts=(method == "nuts"),
                augmented=augmented, adapt_delta=control[0], max_treedepth=control[1], metric=control[2],
            )
        finally:
            bar.close()
        return self._draws_data(cols, rows, nchains, ndraws, summary, hypers, norm, settings[4])

    def _draws_data(self, cols, rows, nchains, ndraws, summary, hypers, norm, seed):
        rows = np.frombuffer(rows, dtype=np.float64).reshape(nchains, ndraws, len(cols))
        declared = self._declared()
        params = [c for c in cols if _idata._pointwise(c.split(".")[0], declared) is None]
        attrs = {
            "gpmc_model": self.name,
            "gpmc_source": self.source,
            "gpmc_generic": int(self.generic),
            "gpmc_hypers": hypers,
            "gpmc_seed": seed,
            "gpmc_columns": json.dumps(params),
            "gpmc_summary": summary,
        }
        # The run's warnings (the CLI prints the same ones), kept with the draws too.
        found = json.loads(summary).get("warnings", [])
        attrs["gpmc_warnings"] = json.dumps(found)
        _warn(found)
        return _idata.build(self._compiled, cols, rows, norm, attrs)

    def _density_run(
        self, data, chains, draws, warmup, thin, seed, progress, client, control=(None, None, None)
    ):
        if client is not None:
            raise InferenceError(
                "a Stan program run on its whole log density does not run on Dask yet: drop client="
            )
        warmup = 1000 if warmup is None else warmup
        bar = _Progress(progress, "nuts")
        try:
            cols, rows, nchains, ndraws, summary = self._density.sample(
                json.dumps(_jsonable(dict(data))), chains, draws, warmup, thin, seed, bar,
                adapt_delta=control[0], max_treedepth=control[1], metric=control[2],
            )
        finally:
            bar.close()
        rows = np.frombuffer(rows, dtype=np.float64).reshape(nchains, ndraws, len(cols))
        attrs = {
            "gpmc_model": self.name,
            "gpmc_source": self.source,
            "gpmc_seed": seed,
            "gpmc_density": 1,
            "gpmc_summary": summary,
        }
        found = json.loads(summary).get("warnings", [])
        attrs["gpmc_warnings"] = json.dumps(found)
        _warn(found)
        return _idata.build_density(cols, rows, attrs)

    def _declared(self):
        return {name for name, _k, _d in self._compiled.declarations()}

    def _variational(self, method, data, columns, progress, **options):
        if self._density is not None:
            raise InferenceError(
                f"this Stan program runs under NUTS on its whole log density (str(model) says why): {method} needs the Gaussian-latent structure it lacks; use Model.sample or Model.nuts"
            )
        norm = self._data(data, columns)
        bar = _Progress(progress, method)
        try:
            fit = self._compiled.variational(method, _data.handover(norm), progress=bar, **options)
        finally:
            bar.close()
        return Fit(self, fit, norm)

    def cavi(self, data, iterations=1000, *, progress=True, columns=None):
        """Closed-form coordinate-ascent variational inference (at most ``iterations``); a
        :class:`Fit`."""
        return self._variational("cavi", data, columns, progress, iterations=iterations, seed=1)

    def svi(
        self,
        data,
        batch=None,
        iterations=None,
        seed=1,
        *,
        forgetting=None,
        delay=None,
        hyper_rate=None,
        class_batch=None,
        progress=True,
        columns=None,
    ):
        """Stochastic CAVI with natural-gradient steps on minibatches (sparse GPs); a :class:`Fit`.
        Options left ``None`` take :data:`gpmc.SVI_DEFAULTS` (the command line's)."""
        if iterations is None:
            iterations = SVI_DEFAULTS["iterations"]
        return self._variational(
            "svi",
            data,
            columns,
            progress,
            iterations=iterations,
            seed=seed,
            batch=batch,
            forgetting=forgetting,
            delay=delay,
            hyper_rate=hyper_rate,
            class_batch=class_batch,
        )

    def gpf(
        self, data, particles=None, iterations=1000, seed=1, *, progress=True, columns=None,
        precondition=False, particle_map=None,
    ):
        """Gaussian particle flow; a :class:`Fit`. ``particle_map`` is ``"symmetric"`` (the
        default: the particles stay the symmetric image of their first draws, the free energy
        minimised by L-BFGS) or ``"affine"`` (the thesis' Algorithm 2, Euler steps);
        ``precondition=True`` scales the affine flow's steps by the thesis' dimension-wise
        RMSProp (Appendix H; ``--precondition``) and makes ``"affine"`` the default."""
        return self._variational(
            "gpf", data, columns, progress, iterations=iterations, seed=seed, particles=particles,
            precondition=precondition, particle_map=particle_map,
        )


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return x


class GpmcWarning(UserWarning):
    """What a run found doubtful (chains that have not mixed, a hyperparameter the data barely
    identify, a prior a variational method held fixed), with what to do instead: the warnings
    the command line prints."""


def _warn(messages):
    """Each message as a GpmcWarning attributed to the user's line: the first frame outside
    this package (a fixed stacklevel pointed into gpmc itself from some callers)."""
    import warnings

    for m in messages:
        warnings.warn(m, GpmcWarning, stacklevel=_user_stacklevel())


def _user_stacklevel():
    """The stacklevel, for a `warnings.warn` called from `_warn`, of the first caller frame
    whose file is not in this package."""
    # The package's folder with its separator: a user's `gpmc_scripts/` beside it is not ours.
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


class Fit:
    """A variational fit: ``elbo`` (the trace; SVI: its minibatch estimates; GPF: the free
    energy's negative), ``hypers`` (name -> value), ``summary`` (what ``summary.json`` holds),
    :meth:`to_inference_data` and :meth:`predict`."""

    def __init__(self, model, fit, data):
        self.model, self._fit, self._data = model, fit, data
        self.summary = json.loads(fit.summary_json())
        self.method = self.summary["method"]
        self.warnings = list(self.summary.get("warnings", []))
        _warn(self.warnings)
        self.hypers = {h["name"]: h["value"] for h in self.summary["hyperparameters"]}
        if self.method == "cavi":
            self.elbo = list(self.summary["elbo"])
        elif self.method == "svi":
            self.elbo = [p["elbo_estimate"] for p in self.summary["trace"]]
        else:
            self.elbo = [-f for f in self.summary["free_energy"]]

    def __repr__(self):
        return f"<gpmc.Fit {self.method}: {self._fit.headline}>"

    def to_inference_data(self, draws=1000, seed=1, *, log_lik=True, ppc=True):
        """``draws`` draws from q as ``arviz.InferenceData`` (one chain), with the groups of
        :meth:`Model.sample` — so ``az.loo`` and ``az.plot_ppc`` work on a variational fit."""
        cols, rows = self._fit.draws(draws, seed, log_lik, ppc)
        rows = np.frombuffer(rows, dtype=np.float64).reshape(1, draws, len(cols))
        attrs = {"gpmc_model": self.model.name, "gpmc_method": self.method}
        return _idata.build(self.model._compiled, cols, rows, self._data, attrs)

    def predict(self, new_data, *, columns=None):
        """Predictions at new inputs (responses optional): a pandas DataFrame, one row per
        point (predictive mean and sd of every predictor, of a new response with its 5/50/95 %
        quantiles, label probabilities), with the test metrics in ``.attrs["metrics"]``."""
        norm = self.model._data(new_data, columns, getattr(self._data, "labels", None))
        return _frame(*self._fit.predict(_data.handover(norm)))


def predict(posterior, new_data, *, columns=None, seed=None):
    """Predictions at new inputs (responses optional) from a :class:`Fit` or from the
    InferenceData :meth:`Model.sample` returned (it carries the model, the training data and
    the hyperparameter values, also after ``to_netcdf``/``from_netcdf``): a pandas DataFrame
    as :meth:`Fit.predict` gives, from at most 1000 draws, evenly thinned."""
    if isinstance(posterior, Fit):
        return posterior.predict(new_data, columns=columns)
    if not hasattr(posterior, "posterior"):
        raise TypeError(
            "gpmc.predict takes what a fit returned — the InferenceData of Model.sample or "
            "Model.nuts (or one read back with az.from_netcdf), or a gpmc.Fit from "
            f"Model.cavi/svi/gpf — not a {type(posterior).__name__}"
        )
    attrs = posterior.posterior.attrs
    if "gpmc_source" not in attrs:
        raise TypeError("not the result of gpmc.Model.sample (no gpmc_source attribute)")
    if attrs.get("gpmc_density"):
        raise InferenceError(
            "these draws are of a Stan program run on its whole log density: prediction from them is not available yet (its generated quantities are in the InferenceData)"
        )
    model = Model(
        attrs["gpmc_source"],
        generic=bool(attrs.get("gpmc_generic", 0)),
        name=attrs.get("gpmc_model"),
    )
    # The data given at training; transformed data (`let`s) are computed again from them.
    declared = {n: (kind, dims) for n, kind, dims in model._compiled.declarations()}
    train = {}
    for group in ("observed_data", "constant_data"):
        if group in posterior.groups():
            for k, v in posterior[group].data_vars.items():
                kind, dims = declared.get(k, ("data", [None]))
                if kind == "transformed":
                    continue
                values = v.values
                # ArviZ stores a scalar (a size such as a class count `C`) as a 1-element array.
                if not dims and np.size(values) == 1:
                    values = float(np.asarray(values).reshape(-1)[0])
                train[k] = values
    train = _data.normalise(train)
    rows, chains = _idata.parameter_rows(posterior)
    test = model._data(new_data, columns, _idata.label_mapping(posterior))
    seed = int(attrs.get("gpmc_seed", 1)) if seed is None else seed
    csv, metrics = model._compiled.predict_draws(
        _data.handover(train),
        _data.handover(test),
        (rows.ctypes.data, rows.shape),
        chains,
        attrs["gpmc_hypers"],
        seed,
    )
    return _frame(csv, metrics)


def rao_blackwell(idata):
    """The Rao-Blackwellised posterior means of a Gibbs run's latents (docs/inference.md): a
    pandas DataFrame indexed by column name (``f.1``, ``w.2`` ...) with ``mean`` (the average of
    each entry's conditional mean given the auxiliaries, over the draws), ``mcse_mean`` (its
    batch-means Monte Carlo error) and, beside them, the plain average of the draws and its
    MCSE (``draws_mean``, ``draws_mcse_mean``). Latents drawn by the generic update or a sparse
    GP have none and are absent."""
    import pandas as pd

    attrs = idata.posterior.attrs
    if "gpmc_summary" not in attrs:
        raise TypeError("not the result of gpmc.Model.sample (no gpmc_summary attribute)")
    summary = json.loads(attrs["gpmc_summary"])
    plain = {v["name"]: v for v in summary.get("variables", [])}
    rows = []
    for r in summary.get("rao_blackwell", []):
        p = plain.get(r["name"], {})
        rows.append(
            {
                "name": r["name"],
                "mean": r["mean"],
                "mcse_mean": r["mcse_mean"],
                "draws_mean": p.get("mean"),
                "draws_mcse_mean": p.get("mcse_mean"),
            }
        )
    return pd.DataFrame(rows, columns=["name", "mean", "mcse_mean", "draws_mean", "draws_mcse_mean"]).set_index("name")


from . import cluster  # noqa: E402  (reads _frame above)
from ._sbc import SbcResult, sbc  # noqa: E402
