"""CAVI of sparse-GP models over partitioned data, in this process or on a Dask cluster.

Every statistic a CAVI step of a sparse GP needs is a sum over observations, so the data stay
where they are, in partitions: each step the driver sends the global state (the inducing
inputs and ``q(u)``, a few hundred kilobytes at ``M = 100``) to every partition, each returns
``O(M²)`` numbers computed from its own rows (``gpmc::cluster``, the same Rust step as a
single-process fit), and the driver sums them in partition order into the next state. The
result does not depend on which worker computed which partition, nor on how many workers there
are. See docs/cluster.md.

>>> from dask.distributed import Client, LocalCluster           # doctest: +SKIP
>>> import dask.dataframe as dd, gpmc                            # doctest: +SKIP
>>> frame = dd.read_parquet("points/*.parquet")                  # doctest: +SKIP
>>> model = gpmc.Model("models/sparse_gp_classification.gpm")    # doctest: +SKIP
>>> fit = gpmc.cluster.cavi(model, frame, client=Client(LocalCluster(n_workers=2)),
...                         columns={"X": ["x1", "x2"], "y": "y"})   # doctest: +SKIP
>>> fit.predict(test_frame, columns={"X": ["x1", "x2"]})         # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import uuid

import numpy as np

from . import _data
from ._gpmc import DataError

__all__ = ["cavi", "svi", "sample", "ClusterFit", "ClusterSamples"]

# On each worker process: the compiled models.
_MODELS: dict = {}


def _compiled_of(name, source, generic):
    """The model compiled once per worker process."""
    key = (name, source, generic)
    if key not in _MODELS:
        from ._gpmc import compile as _compile

        _MODELS[key] = _compile(name, source, generic)
    return _MODELS[key]


def _cluster_of(name, source, generic):
    return _compiled_of(name, source, generic).cluster()


def _chain_task(spec, data, first_chain, settings, init):
    """One chain of a Gibbs run (runs on a worker): the chain ``first_chain`` of the run, from
    its own random stream."""
    chains, draws, warmup, thin, seed, log_lik, ppc = settings
    return _compiled_of(*spec).sample(
        _data.handover(data), 1, draws, warmup, thin, seed, log_lik, ppc, init, None, first_chain
    )


def _chains_as_tasks(model, client, data, settings, init, progress=None):
    """``model.sample`` with each chain a task on ``client``'s workers, joined into the run of
    all of them (chain ``k`` draws from stream ``k`` wherever it runs, so the chains are the
    single-process run's). ``progress(done, total)`` as chains finish."""
    chains = settings[0]
    if chains < 1:
        raise ValueError("sample needs at least one chain")
    spec = (model.name, model.source, model.generic)
    [shared] = client.scatter([data], broadcast=True, hash=False)
    futures = [
        client.submit(_chain_task, spec, shared, k, settings, init, pure=False)
        for k in range(chains)
    ]
    if progress is not None:
        from distributed import as_completed

        progress(0, chains, "chains done")
        for done, _ in enumerate(as_completed(futures), start=1):
            progress(done, chains, "chains done")
    results = client.gather(futures)
    cols, hypers = results[0][0], results[0][5]
    parts = [(rows, nchains, ndraws, summary) for _c, rows, nchains, ndraws, summary, _h in results]
    rows, nchains, ndraws, summary = model._compiled.merge_samples(cols, parts)
    return cols, rows, nchains, ndraws, summary, hypers


def _normalise_task(part, index, columns=None, declared=None):
    """A partition converted to the model's arrays (runs on a worker, once per fit: the
    result stays there, in place of the partition, for every step); a partition that cannot
    be is a ``DataError`` naming it (``index``, from 1)."""
    try:
        return _data.normalise(part, columns, declared)
    except DataError as e:
        raise DataError(f"partition {index}: {e}") from None


def _layout(norm):
    """A normalised partition's rows and each array's trailing shape (what every partition
    must share: a matrix's columns)."""
    shapes = {k: tuple(v.shape[1:]) for k, v in norm.items() if isinstance(v, np.ndarray)}
    return _rows(norm), shapes


def _shape_words(trailing):
    """A partition's array in words: missing, a vector, or its shape by rows."""
    if trailing is None:
        return "missing"
    if not trailing:
        return "a vector"
    return f"of shape (rows, {', '.join(map(str, trailing))})"


def _same_layout(layouts):
    """The partitions kept (those with rows: an empty one contributes nothing), or a
    ``DataError`` naming the partition whose arrays differ from the first's."""
    kept = [k for k, (rows, _s) in enumerate(layouts) if rows > 0]
    if not kept:
        raise DataError(
            "the partitions hold no rows: give at least one partition with data"
        )
    first, reference = kept[0], layouts[kept[0]][1]
    for k in kept[1:]:
        shapes = layouts[k][1]
        for name in sorted(set(reference) | set(shapes)):
            a, b = reference.get(name), shapes.get(name)
            if a != b:
                raise DataError(
                    f"partition {k + 1}: `{name}` is {_shape_words(b)}, in partition "
                    f"{first + 1} {_shape_words(a)}: every partition must hold the same data "
                    "with the same columns"
                )
    return kept


def _rows_asked(norm, subset, sizes):
    """The rows ``subset`` of a normalised partition as one of their own (``None``: all of
    them), so that a minibatch step binds its batch's rows only."""
    return norm if subset is None else _take(norm, np.asarray(subset, dtype=np.int64), sizes)


def _shard_task(norm, subset, shared):
    """One partition's statistics (runs on a worker) over its rows ``subset`` (``None``: all):
    ``shared`` is the step's (model as (name, source, generic), row sizes, hyperparameters,
    state)."""
    model, sizes, hypers, state = shared
    rows = _rows_asked(norm, subset, sizes)
    return _cluster_of(*model).shard(hypers, state, _data.handover(rows))


def _gradient_task(norm, subset, shared):
    """One partition's gradient of its local ELBO terms in the learned hyperparameters (runs
    on a worker), over its rows ``subset``."""
    model, sizes, hypers, state = shared
    rows = _rows_asked(norm, subset, sizes)
    return _cluster_of(*model).gradient(hypers, state, _data.handover(rows))


def _tree(items, add):
    """``items`` summed pairwise, level by level — ((0 + 1) + (2 + 3)) + 4 — a shape fixed by
    their number alone, so the sums are the same wherever each addition runs."""
    items = list(items)
    while len(items) > 1:
        pairs = [add(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        items = pairs + items[len(items) - len(items) % 2 :]
    return items[0]


def _add_task(a, b, kind, model):
    """Two partitions' statistics added (runs on a worker: the tree reduction)."""
    cluster = _cluster_of(*model)
    return cluster.add_shards(a, b) if kind == "shards" else cluster.add_blocks(a, b)


def _on_cluster(client, task, futures, subsets, shared, reduce, attempts=3):
    """One step's results from the workers, in partition order — or, with ``reduce``, their
    tree sum made on the workers, so that one partition's worth of statistics reaches the
    driver. The step's state travels once (a future the workers fetch), not with every task.
    A worker lost meanwhile loses the partitions it held (Dask recomputes them from their
    graph) and maybe that future: the step is then asked again — a pure function of the
    state, so its result is the same."""
    from distributed import CancelledError

    for attempt in range(attempts):
        [state] = client.scatter([shared], hash=False)
        try:
            results = client.map(task, futures, subsets, [state] * len(futures), pure=False)
            if reduce is None:
                return client.gather(results)
            root = _tree(
                results,
                lambda a, b: client.submit(_add_task, a, b, reduce, shared[0], pure=False),
            )
            return [client.gather(root)]
        except (CancelledError, OSError) as e:  # a lost worker's data
            if attempt + 1 == attempts:
                raise RuntimeError(f"a CAVI step failed on the cluster {attempts} times: {e}") from e
    raise AssertionError("unreachable")


def _partitions(data):
    """The partitions of ``data`` as a list (pandas DataFrames or dicts; a Dask DataFrame's as
    its delayed partitions; Parquet paths — a path, a glob or a list of them — read by
    ``dask.dataframe.read_parquet``, one partition per file or row group as Dask makes them),
    and whether they are Dask objects."""
    if isinstance(data, (str, os.PathLike)) or (
        isinstance(data, (list, tuple))
        and data
        and all(isinstance(p, (str, os.PathLike)) for p in data)
    ):
        import dask.dataframe as dd

        paths = [os.fspath(p) for p in data] if isinstance(data, (list, tuple)) else os.fspath(data)
        data = dd.read_parquet(paths)
    try:
        import dask.dataframe as dd

        if isinstance(data, dd.DataFrame):
            return list(data.to_delayed()), True
    except ImportError:  # pragma: no cover - dask is optional on one machine
        pass
    if isinstance(data, (list, tuple)) and data:
        return list(data), False
    raise TypeError(
        "data must be a Dask DataFrame, Parquet paths or a non-empty list of partitions "
        f"(pandas DataFrames or dicts of arrays), not {type(data).__name__}"
    )


def _rows(norm):
    """The number of rows of a normalised partition (its longest array)."""
    lengths = [v.shape[0] for v in norm.values() if isinstance(v, np.ndarray) and v.ndim >= 1]
    return max(lengths, default=0)


def _take(norm, rows, sizes):
    """The rows ``rows`` of a normalised partition, the sizes ``sizes`` (``N``) set to their
    count."""
    out = {}
    n = _rows(norm)
    for name, v in norm.items():
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == n:
            out[name] = np.ascontiguousarray(v[rows])
        else:
            out[name] = v
    for s in sizes:
        out[s] = float(len(rows))
    return out


def _concat(parts, sizes):
    out = {}
    for name in parts[0]:
        v = parts[0][name]
        if isinstance(v, np.ndarray):
            out[name] = np.ascontiguousarray(np.concatenate([p[name] for p in parts]))
        else:
            out[name] = v
    n = _rows(out)
    for s in sizes:
        out[s] = float(n)
    return out


class ClusterFit:
    """A distributed fit: ``method`` (``"cavi"`` or ``"svi"``), ``elbo`` (the trace; SVI: its
    minibatch estimates), ``hypers`` (the values used; learned ones at their final values),
    ``report`` (per hyperparameter: name, value, how it was set), ``partitions``, ``rows``,
    ``state`` and :meth:`predict`."""

    def __init__(self, model, run, state, elbo):
        self.model, self._cluster = model, run.cluster
        self._hypers, self._state, self._sample = run.hypers, state, run.sample
        self.elbo, self.partitions, self.rows = elbo, run.partitions, run.total
        self.method = "cavi"
        names = [n for n, kind, _d in model._compiled.declarations() if kind == "hyper"]
        self.hypers = dict(zip(names, json.loads(run.hypers)["scalars"]))
        learned = dict(run.cluster.learned(run.hypers, state))
        self.hypers.update(learned)
        self.report = [(n, learned.get(n, v), how) for n, v, how in run.report]

    def __repr__(self):
        return (
            f"<gpmc.cluster.ClusterFit: {self.method} over {self.partitions} partitions, {self.rows} rows, "
            f"{len(self.elbo)} steps, ELBO {self.elbo[-1]:.6f}>"
        )

    @property
    def state(self):
        """The global state (inducing inputs and ``q(u)`` per block) as a dict."""
        return json.loads(self._state)

    def to_inference_data(self, draws=1000, seed=1):
        """``draws`` draws of each sparse latent's whitened inducing values from ``q(u)`` as
        ``arviz.InferenceData`` (one chain; ``posterior`` only: the data stay where they are)."""
        columns, rows = self._cluster.q_draws(
            self._hypers, self._state, _data.handover(self._sample), draws, seed
        )
        rows = np.frombuffer(rows, dtype=np.float64).reshape(1, draws, len(columns))
        return _posterior(self.model, columns, rows, {"gpmc_method": self.method, "gpmc_seed": seed})

    def predict(self, new_data, *, columns=None):
        """Predictions at new inputs, as :meth:`gpmc.Fit.predict` gives them."""
        from . import _frame

        norm = self.model._data(new_data, columns, text_labels=False)
        csv, metrics = self._cluster.predict(
            self._hypers, self._state, _data.handover(self._sample), _data.handover(norm)
        )
        return _frame(csv, metrics)


def cavi(
    model,
    data,
    *,
    client=None,
    iterations=200,
    tol=1e-9,
    sample_rows=20000,
    seed=1,
    columns=None,
    callback=None,
    hyper_rate=None,
    progress=True,
):
    """CAVI of a model whose latents are sparse GPs over ``data``'s partitions.

    ``data``: a Dask DataFrame (its partitions are the shards) or a list of partitions (pandas
    DataFrames or dicts of arrays); ``columns`` maps data names to columns as in
    :meth:`gpmc.Model.sample`. ``client``: a ``dask.distributed.Client`` — the partitions are
    computed and kept on its workers, each converted once for all the steps; without one, the
    partitions are worked through in this process. The inducing inputs are chosen by k-means++ on
    ``sample_rows`` rows drawn (``seed``) from all partitions by their global positions, so the
    fit depends on the data and the seed, not on the partitioning's layout or the workers.
    Stops after ``iterations`` steps or when the ELBO changes by less than ``tol`` (relative).
    ``callback(step, elbo)`` is called after each step (progress; a worker lost meanwhile is
    replaced by Dask, which recomputes its partitions from their graph). The positive scalar
    ``learn()`` hyperparameters are learned as single-process SVI learns them: after each step
    of ``q(u)``, one Adam step of size ``hyper_rate`` on their logarithms along the gradient of
    the ELBO, summed over the partitions (``fit.hypers`` holds the final values). ``progress``:
    a bar (tqdm where installed, else a line on stderr every few seconds) with the steps, the
    ELBO and the time left.
    """

    run = _Loaded(model, data, client, columns, sample_rows, seed, hyper_rate)
    return _fit_loaded("cavi", run, _full_batch, iterations, tol, callback, progress)


def _full_batch(step, total):
    """CAVI's plan: every row at every step, counted once, the whole step taken."""
    return None, 1.0, 1.0


def _fit_loaded(method, run, plan, iterations, tol, callback, progress):
    """A variational fit on loaded partitions: the warnings a single-process fit gives, the
    steps (with progress), and the partitions let go whatever happens."""
    from . import _Progress, _warn

    _warn(run.warnings)
    bar = _Progress(progress, f"gpmc.cluster.{method}")

    def report(step, value):
        bar(step, iterations, f"ELBO {value:.6g}")
        if callback is not None:
            callback(step, value)

    try:
        fit = _fit(run, plan, iterations, tol, report)
    finally:
        bar.close()
        run.forget()
    fit.method = method
    return fit


def svi(
    model,
    data,
    *,
    client=None,
    batch=None,
    iterations=None,
    forgetting=None,
    delay=None,
    sample_rows=20000,
    seed=1,
    columns=None,
    callback=None,
    hyper_rate=None,
    progress=True,
):
    """Stochastic CAVI (natural-gradient steps on minibatches, thesis ch. 5 Algorithm 3) over
    ``data``'s partitions, as :func:`cavi` takes them. Step ``t`` draws ``batch`` global row
    positions from a stream keyed by (``seed``, ``t``) — so the batches, and the fit, do not
    depend on the layout — each partition computes its statistics over its share, counted
    ``N/batch`` times, and ``q(u)`` moves a fraction ``ρ_t = (t + 1 + delay)^(−forgetting)``
    of the way to the batch's optimum. ``elbo`` holds the minibatch estimates; ``learn()``
    hyperparameters are learned as :func:`cavi` learns them, on the same batch. ``batch``,
    ``iterations``, ``forgetting`` and ``delay`` left ``None`` take :data:`gpmc.SVI_DEFAULTS`."""
    from . import SVI_DEFAULTS

    batch = SVI_DEFAULTS["batch"] if batch is None else batch
    iterations = SVI_DEFAULTS["iterations"] if iterations is None else iterations
    forgetting = SVI_DEFAULTS["forgetting"] if forgetting is None else forgetting
    delay = SVI_DEFAULTS["delay"] if delay is None else delay
    if batch < 1 or not (0.5 < forgetting <= 1.0):
        raise ValueError("SVI needs a batch of at least 1 and a forgetting rate in (0.5, 1]")

    def plan(step, total):
        b = min(batch, total)
        rows = np.sort(np.random.default_rng([seed, step + 1]).choice(total, b, replace=False))
        return rows, total / b, (step + 1.0 + delay) ** (-forgetting)

    run = _Loaded(model, data, client, columns, sample_rows, seed, hyper_rate)
    return _fit_loaded("svi", run, plan, iterations, 0.0, callback, progress)


class _Loaded:
    """The partitions of a distributed run, loaded: on the cluster (computed and kept on the
    workers, each converted there once) or in this process; their row counts; the sample of
    rows drawn by global position; and the start (hyperparameters and state) from it."""

    def __init__(self, model, data, client, columns, sample_rows, seed, hyper_rate=None):
        parts, lazy = _partitions(data)
        compiled = model._compiled
        self.model, self.client, self.columns = model, client, columns
        self.declared = {n for n, kind, _d in compiled.declarations() if kind == "data"}
        self.sizes = sizes = _sizes_of_rows(compiled)
        self.spec = (model.name, model.source, model.generic)
        self.fit_id = uuid.uuid4().hex
        declared = self.declared
        if client is not None:
            raw = client.compute(parts) if lazy else client.scatter(parts, broadcast=False)
            # The converted arrays replace the partitions on the workers (Dask frees a
            # partition once converted; it can compute it again from its graph).
            futures = client.map(
                _normalise_task,
                raw,
                list(range(1, len(parts) + 1)),
                columns=columns,
                declared=declared,
            )
            del raw
            kept = _same_layout(client.gather(client.map(_layout, futures)))
            self.futures = [futures[k] for k in kept]
            lengths = client.gather(client.map(_rows, self.futures))
        else:
            if lazy:
                import dask

                parts = list(dask.compute(*parts))
            local = [
                _normalise_task(p, k + 1, columns, declared) for k, p in enumerate(parts)
            ]
            kept = _same_layout([_layout(n) for n in local])
            self.local = [local[k] for k in kept]
            lengths = [_rows(n) for n in self.local]
        # Empty partitions (an empty Parquet file, a filtered frame) add nothing: left out.
        self.partitions = len(kept)
        self.total = int(sum(lengths))
        # The sample: global row positions drawn once, independent of the layout.
        chosen = np.sort(
            np.random.default_rng(seed).permutation(self.total)[: min(sample_rows, self.total)]
        )
        self.starts = np.concatenate([[0], np.cumsum(lengths)])
        picks = [chosen[(chosen >= a) & (chosen < b)] - a for a, b in self._bounds()]
        if client is not None:
            pieces = client.gather(client.map(_take, self.futures, picks, sizes=sizes))
        else:
            pieces = [_take(n, r, sizes) for n, r in zip(self.local, picks)]
        self.sample = _concat([p for p, r in zip(pieces, picks) if len(r)], sizes)
        self.cluster = compiled.cluster()
        if hyper_rate is None:
            from . import SVI_DEFAULTS

            hyper_rate = SVI_DEFAULTS["hyper_rate"]
        start = self.cluster.start(_data.handover(self.sample), hyper_rate)
        # What a single-process variational fit warns of (priors held at their start): the
        # variational methods say it (`warn`), Gibbs refuses a sampled prior instead.
        self.hypers, self.state, self.report, self.warnings = start

    def _bounds(self):
        return list(zip(self.starts[:-1], self.starts[1:]))

    def subsets(self, rows):
        """Each partition's share of the global row positions ``rows`` (``None``: all)."""
        if rows is None:
            return [None] * self.partitions
        return [[int(i) for i in rows[(rows >= a) & (rows < b)] - a] for a, b in self._bounds()]

    def shared(self, state):
        """What every task of a step reads besides its partition."""
        return (self.spec, self.sizes, self.hypers, state)

    def each(self, task, local, subsets, state, reduce=None):
        """``task`` on every partition's rows ``subsets`` at ``state``, in partition order: on
        the cluster, or ``local`` (the same call of the model's) in this process. A partition
        none of whose rows are asked for adds nothing and is not asked. With ``reduce``
        (``"shards"``), the results' tree sum, as a list of one."""
        asked = [k for k, r in enumerate(subsets) if r is None or len(r)]
        subsets = [subsets[k] for k in asked]
        if self.client is not None:
            futures = [self.futures[k] for k in asked]
            return _on_cluster(self.client, task, futures, subsets, self.shared(state), reduce)
        out = []
        for n, r in zip([self.local[k] for k in asked], subsets):
            rows = _rows_asked(n, r, self.sizes)  # alive while the extension reads it
            out.append(local(self.hypers, state, _data.handover(rows)))
        if reduce is None:
            return out
        return [_tree(out, self.cluster.add_shards)]

    def forget(self):
        """Let the workers drop the run's partitions (Dask frees them once no future refers
        to them)."""
        self.futures = None


def _fit(run, plan, iterations, tol, callback):
    """The loop CAVI and SVI share over loaded partitions: per step the plan's rows of each
    partition, their statistics gathered in partition order and the step of ``q(u)``; then,
    when hyperparameters are learned, their gradients over the same rows and Adam's step."""
    cluster, state = run.cluster, run.state
    learning = json.loads(state).get("learning") is not None
    elbo = []
    for step in range(iterations):
        rows, scale, rho = plan(step, run.total)
        subsets = run.subsets(rows)
        stats = run.each(_shard_task, cluster.shard, subsets, state, reduce="shards")
        wire = [(s[0], [tuple(b) for b in s[1]]) for s in stats]
        state, value = cluster.step(state, wire, scale, rho)
        if learning:
            grads = run.each(_gradient_task, cluster.gradient, subsets, state)
            state = cluster.hyper_step(state, grads, scale)
        elbo.append(value)
        if callback is not None:
            callback(len(elbo), value)
        if len(elbo) > 1 and abs(elbo[-1] - elbo[-2]) <= tol * abs(elbo[-1]):
            break
    return ClusterFit(run.model, run, state, elbo)


def _gibbs_task(norm, previous, inducing, round_key, first_row, shared):
    """One partition's part of a sparse Gibbs round (runs on a worker): its chain moved by the
    driver's last ``inducing`` values, the round's statistics. ``previous`` is what its previous
    round returned (``None`` before the first); ``first_row`` the global position of its first
    row (each row's random numbers are keyed by its position)."""
    model, _sizes, hypers, state = shared
    chain = None if previous is None else previous[1]
    return _cluster_of(*model).gibbs_round(
        hypers, state, _data.handover(norm), chain, inducing, round_key, first_row
    )


def _statistics(result):
    return result[0]


def _identity(x):
    return x


def sample(
    model,
    data,
    *,
    client=None,
    chains=4,
    warmup=200,
    draws=1000,
    seed=1,
    sample_rows=20000,
    columns=None,
    callback=None,
    hyper_rate=None,
    learn_iterations=500,
    progress=True,
):
    """Sparse Gibbs (exact, under the FITC prior) of a model whose latents are sparse GPs with
    fixed hyperparameters, over ``data``'s partitions as :func:`cavi` takes them; a
    :class:`ClusterSamples`.

    A sweep is one round per sparse block: every partition draws its rows' auxiliaries (and
    the block's values given the ``v`` drawn last round) and returns the block's ``O(M²)``
    FITC statistics; the driver sums them in partition order and draws the block's whitened
    inducing values ``v``. Each partition keeps its rows' latent values and auxiliaries between
    rounds as a Dask result on its worker; every random number comes from a stream keyed by
    (``seed``, chain, sweep, round) and, for a row's, its global position — so the draws are
    bit for bit the same on any number of workers, over another partitioning of the rows they
    differ only by the rounding of the partitions' sums, and a worker lost mid-run is
    recomputed by Dask from the run's task graph (the rounds of the partitions it held, from
    the first) to the same draws. Chains run
    side by side, their rounds in the same tasks' waves. ``callback(sweep)`` after each sweep.
    ``learn()`` hyperparameters are learned first, as single-process Gibbs learns them, by a
    distributed CAVI fit (:func:`cavi`, at most ``learn_iterations`` steps; ``hyper_rate``), and
    sampled at their learned values (``ClusterSamples.hypers``). ``progress``: a bar with the
    sweeps and the time left. The run's summary (each inducing value's mean, sd, ESS and
    R-hat, ``ClusterSamples.summary``) and warnings (chains that have not mixed, in the words
    and at the thresholds of a single-process run) come with the draws; each warning is
    raised as a :class:`gpmc.GpmcWarning`.
    """
    from . import _Progress, _warn

    if chains < 1 or draws < 1 or warmup < 0:
        raise ValueError("sample needs at least one chain and one draw, and warmup >= 0")
    run = _Loaded(model, data, client, columns, sample_rows, seed, hyper_rate)
    bar = _Progress(progress, "gpmc.cluster.sample")

    def report(sweep):
        bar(sweep, warmup + draws, "warm-up" if sweep <= warmup else "sampling")
        if callback is not None:
            callback(sweep)

    try:
        samples = _sample(run, chains, warmup, draws, seed, report, learn_iterations)
    finally:
        bar.close()
        run.forget()
    _warn(samples.summary["warnings"])
    return samples


def _sample(run, chains, warmup, draws, seed, callback, learn_iterations):
    """:func:`sample` on loaded partitions."""
    client = run.client
    if json.loads(run.state).get("learning") is not None:
        fit = _fit(run, _full_batch, learn_iterations, 1e-9, None)
        run.hypers, run.state = run.cluster.settle(run.hypers, fit._state)
        run.report = fit.report
    cluster, state = run.cluster, run.state
    sizes, at, names = cluster.gibbs_rounds(run.hypers, state, _data.handover(run.sample))
    out = np.empty((chains, draws, len(names)))
    previous = [[None] * run.partitions for _ in range(chains)]
    inducing = [None] * chains
    shared = None
    if client is not None:
        # A task's result, not scattered data: Dask can recompute it when a worker leaves.
        shared = client.submit(_identity, run.shared(state), key=f"gpmc-shared-{run.fit_id}")
    for sweep in range(warmup + draws):
        for r, (m, offset) in enumerate(zip(sizes, at)):
            keys = [(seed, c, sweep, r) for c in range(chains)]
            previous, stats = _round(run, shared, previous, inducing, keys)
            for c in range(chains):
                inducing[c] = cluster.gibbs_draw([tuple(stats[c])], keys[c])
                if sweep >= warmup:
                    out[c, sweep - warmup, offset : offset + m] = inducing[c]
        if callback is not None:
            callback(sweep + 1)
    return ClusterSamples(run.model, run, names, out, seed)


def _round(run, shared, previous, inducing, keys):
    """One round of every chain on every partition: per chain, per partition, what the round
    returned (on the cluster: its future, kept on the worker for the next round) and its
    statistics."""
    shards = range(run.partitions)
    if run.client is None:
        results = [
            [
                run.cluster.gibbs_round(
                    run.hypers,
                    run.state,
                    _data.handover(run.local[k]),
                    None if previous[c][k] is None else previous[c][k][1],
                    inducing[c],
                    key,
                    int(run.starts[k]),
                )
                for k in shards
            ]
            for c, key in enumerate(keys)
        ]
        add = run.cluster.add_blocks
        return results, [_tree([res[0] for res in row], add) for row in results]
    client = run.client
    results = [
        [
            client.submit(
                _gibbs_task,
                run.futures[k],
                previous[c][k],
                inducing[c],
                key,
                int(run.starts[k]),
                shared,
                key=f"gpmc-gibbs-{run.fit_id}-{c}-{key[2]}-{key[3]}-{k}",
            )
            for k in shards
        ]
        for c, key in enumerate(keys)
    ]
    def add(a, b):
        return client.submit(_add_task, a, b, "blocks", run.spec, pure=False)

    roots = [
        _tree([client.submit(_statistics, f, key=f.key + "-stats") for f in row], add)
        for row in results
    ]
    return results, client.gather(roots)


class ClusterSamples:
    """A distributed sparse Gibbs run's draws: ``draws`` (chain, draw, column) of each sparse
    latent's whitened inducing values, ``columns`` their names (``<latent>_inducing.k``, as
    a single-process run names them), :meth:`to_inference_data` and :meth:`predict`. The
    latent values at the training rows stay on the workers."""

    def __init__(self, model, run, columns, draws, seed):
        self.model, self._cluster = model, run.cluster
        self._hypers, self._state, self._sample = run.hypers, run.state, run.sample
        self.columns, self.draws, self.seed = columns, draws, seed
        self.partitions, self.rows = run.partitions, run.total
        names = [n for n, kind, _d in model._compiled.declarations() if kind == "hyper"]
        self.hypers = dict(zip(names, json.loads(run.hypers)["scalars"]))
        self.report = run.report
        chains, kept, _ = draws.shape
        #: ``variables`` (per inducing value: mean, sd, quantiles, ESS, R-hat) and ``warnings``,
        #: as a single-process run's ``summary.json`` has them.
        self.summary = json.loads(
            self._cluster.gibbs_summary(
                list(columns), np.ascontiguousarray(draws, dtype=np.float64).tobytes(), chains, kept
            )
        )

    def __repr__(self):
        c, d, _ = self.draws.shape
        return (
            f"<gpmc.cluster.ClusterSamples: sparse Gibbs over {self.partitions} partitions, "
            f"{self.rows} rows, {c} chains x {d} draws>"
        )

    def to_inference_data(self):
        """The draws as ``arviz.InferenceData`` (``posterior`` only: the data stay on the
        cluster)."""
        return _posterior(self.model, self.columns, self.draws, {"gpmc_seed": self.seed, "gpmc_rows": self.rows})

    def predict(self, new_data, *, columns=None, seed=None):
        """Predictions at new inputs from the draws, as :meth:`gpmc.Model.predict` gives them
        for a single-process run."""
        from . import _frame

        norm = self.model._data(new_data, columns, text_labels=False)
        csv, metrics = self._cluster.predict_draws(
            self._hypers,
            self._state,
            _data.handover(self._sample),
            _data.handover(norm),
            self.draws.tolist(),
            self.seed if seed is None else seed,
        )
        return _frame(csv, metrics)


def _posterior(model, columns, rows, attrs):
    """InferenceData whose ``posterior`` holds the (chain, draw, column) ``rows`` by variable."""
    import arviz as az

    from . import _idata

    posterior, dims = {}, {}
    for base, v in _idata._variables(columns).items():
        posterior[base] = _idata._values(rows, v["positions"], v["shape"])
        dims[base] = [f"{base}_dim_{k}" for k in range(len(v["shape"]))]
    idata = az.from_dict(posterior=posterior, dims=dims)
    idata.posterior.attrs.update({"gpmc_model": model.name, **attrs})
    return idata


def _sizes_of_rows(compiled):
    """The data sizes that count rows (``N``): the first dimension of the declared vectors and
    matrices."""
    sizes = set()
    for _name, kind, dims in compiled.declarations():
        if kind == "data" and dims and dims[0] is not None:
            sizes.add(dims[0])
    return sizes
