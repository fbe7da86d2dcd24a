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
import uuid

import numpy as np

from . import _data

__all__ = ["cavi", "svi", "ClusterFit"]

# On each worker process: the compiled models and the partitions' arrays, converted once.
_MODELS: dict = {}
_PARTS: dict = {}


def _cluster_of(name, source, generic):
    key = (name, source, generic)
    if key not in _MODELS:
        from ._gpmc import compile as _compile

        _MODELS[key] = _compile(name, source, generic).cluster()
    return _MODELS[key]


def _shard_task(part, key, subset, shared):
    """One partition's statistics (runs on a worker) over its rows ``subset`` (``None``: all):
    ``shared`` is the step's (model as (name, source, generic), columns, declared data,
    hyperparameters, state)."""
    model, columns, declared, hypers, state = shared
    cluster = _cluster_of(*model)
    if key not in _PARTS:
        _PARTS[key] = _data.normalise(part, columns, declared)
    norm = _PARTS[key]
    return cluster.shard(hypers, state, _data.handover(norm), subset)


def _forget_task(prefix):
    """Drop a finished fit's cached partitions (runs on each worker)."""
    for k in [k for k in _PARTS if k[0] == prefix]:
        del _PARTS[k]
    return True


def _on_cluster(client, futures, keys, subsets, shared, attempts=3):
    """One step's statistics from the workers, in partition order. The step's state travels
    once (a future the workers fetch), not with every task. A worker lost meanwhile loses the
    partitions it held (Dask recomputes them from their graph) and maybe that future: the step
    is then asked again — a pure function of the state, so its result is the same."""
    from distributed import CancelledError

    for attempt in range(attempts):
        [state] = client.scatter([shared], hash=False)
        try:
            return client.gather(
                client.map(
                    _shard_task, futures, keys, subsets, [state] * len(futures), pure=False
                )
            )
        except (CancelledError, OSError) as e:  # a lost worker's data
            if attempt + 1 == attempts:
                raise RuntimeError(f"a CAVI step failed on the cluster {attempts} times: {e}") from e
    raise AssertionError("unreachable")


def _partitions(data):
    """The partitions of ``data`` as a list (pandas DataFrames or dicts; a Dask DataFrame's as
    its delayed partitions), and whether they are Dask objects."""
    try:
        import dask.dataframe as dd

        if isinstance(data, dd.DataFrame):
            return list(data.to_delayed()), True
    except ImportError:  # pragma: no cover - dask is optional on one machine
        pass
    if isinstance(data, (list, tuple)) and data:
        return list(data), False
    raise TypeError(
        "data must be a Dask DataFrame or a non-empty list of partitions (pandas DataFrames "
        f"or dicts of arrays), not {type(data).__name__}"
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
    minibatch estimates), ``hypers`` (the values used), ``partitions``, ``rows``, ``state`` and
    :meth:`predict`."""

    def __init__(self, model, cluster, hypers, state, sample, elbo, partitions, rows):
        self.model, self._cluster = model, cluster
        self._hypers, self._state, self._sample = hypers, state, sample
        self.elbo, self.partitions, self.rows = elbo, partitions, rows
        self.method = "cavi"
        names = [n for n, kind, _d in model._compiled.declarations() if kind == "hyper"]
        self.hypers = dict(zip(names, json.loads(hypers)["scalars"]))

    def __repr__(self):
        return (
            f"<gpmc.cluster.ClusterFit: {self.method} over {self.partitions} partitions, {self.rows} rows, "
            f"{len(self.elbo)} steps, ELBO {self.elbo[-1]:.6f}>"
        )

    @property
    def state(self):
        """The global state (inducing inputs and ``q(u)`` per block) as a dict."""
        return json.loads(self._state)

    def predict(self, new_data, *, columns=None):
        """Predictions at new inputs, as :meth:`gpmc.Fit.predict` gives them."""
        from . import _frame

        norm = self.model._data(new_data, columns)
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
    replaced by Dask, which recomputes its partitions from their graph).
    """

    def plan(step, total):
        return None, 1.0, 1.0

    fit = _fit(model, data, client, plan, iterations, tol, sample_rows, seed, columns, callback)
    fit.method = "cavi"
    return fit


def svi(
    model,
    data,
    *,
    client=None,
    batch=1000,
    iterations=1000,
    forgetting=0.6,
    delay=1.0,
    sample_rows=20000,
    seed=1,
    columns=None,
    callback=None,
):
    """Stochastic CAVI (natural-gradient steps on minibatches, thesis ch. 5 Algorithm 3) over
    ``data``'s partitions, as :func:`cavi` takes them. Step ``t`` draws ``batch`` global row
    positions from a stream keyed by (``seed``, ``t``) — so the batches, and the fit, do not
    depend on the layout — each partition computes its statistics over its share, counted
    ``N/batch`` times, and ``q(u)`` moves a fraction ``ρ_t = (t + 1 + delay)^(−forgetting)``
    of the way to the batch's optimum. ``elbo`` holds the minibatch estimates."""
    if batch < 1 or not (0.5 < forgetting <= 1.0):
        raise ValueError("SVI needs a batch of at least 1 and a forgetting rate in (0.5, 1]")

    def plan(step, total):
        b = min(batch, total)
        rows = np.sort(np.random.default_rng([seed, step + 1]).choice(total, b, replace=False))
        return rows, total / b, (step + 1.0 + delay) ** (-forgetting)

    fit = _fit(model, data, client, plan, iterations, 0.0, sample_rows, seed, columns, callback)
    fit.method = "svi"
    return fit


def _fit(model, data, client, plan, iterations, tol, sample_rows, seed, columns, callback):
    """The loop both methods share: partitions loaded (and cached on the workers), the sample
    and the start, then per step the plan's rows of each partition, their statistics gathered
    in partition order, and the step."""
    parts, lazy = _partitions(data)
    compiled = model._compiled
    declared = {n for n, kind, _d in compiled.declarations() if kind == "data"}
    sizes = _sizes_of_rows(compiled)
    spec = (model.name, model.source, model.generic)
    fit_id = uuid.uuid4().hex
    keys = [(fit_id, k) for k in range(len(parts))]
    if client is not None:
        futures = client.compute(parts) if lazy else client.scatter(parts, broadcast=False)
        lengths = client.gather(
            client.map(lambda p, c=columns, d=declared: _rows(_data.normalise(p, c, d)), futures)
        )
    else:
        if lazy:
            import dask

            parts = list(dask.compute(*parts))
        local = [_data.normalise(p, columns, declared) for p in parts]
        lengths = [_rows(n) for n in local]
    total = int(sum(lengths))
    if total == 0:
        raise ValueError("the partitions hold no rows")
    # The sample: global row positions drawn once, independent of the layout.
    chosen = np.sort(np.random.default_rng(seed).permutation(total)[: min(sample_rows, total)])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    picks = [chosen[(chosen >= a) & (chosen < b)] - a for a, b in zip(starts[:-1], starts[1:])]
    if client is not None:
        pieces = client.gather(
            client.map(
                lambda p, r, c=columns, d=declared: _take(_data.normalise(p, c, d), r, sizes),
                futures,
                picks,
            )
        )
    else:
        pieces = [_take(n, r, sizes) for n, r in zip(local, picks)]
    sample = _concat([p for p, r in zip(pieces, picks) if len(r)], sizes)
    cluster = compiled.cluster()
    hypers, state = cluster.start(_data.handover(sample))
    elbo = []
    try:
        for step in range(iterations):
            rows, scale, rho = plan(step, total)
            subsets = (
                [None] * len(parts)
                if rows is None
                else [rows[(rows >= a) & (rows < b)] - a for a, b in zip(starts[:-1], starts[1:])]
            )
            subsets = [None if r is None else [int(i) for i in r] for r in subsets]
            if client is not None:
                shared = (spec, columns, declared, hypers, state)
                stats = _on_cluster(client, futures, keys, subsets, shared)
            else:
                stats = [
                    cluster.shard(hypers, state, _data.handover(n), r)
                    for n, r in zip(local, subsets)
                ]
            wire = [(s[0], [tuple(b) for b in s[1]]) for s in stats]
            state, value = cluster.step(state, wire, scale, rho)
            elbo.append(value)
            if callback is not None:
                callback(len(elbo), value)
            if len(elbo) > 1 and abs(elbo[-1] - elbo[-2]) <= tol * abs(elbo[-1]):
                break
    finally:
        if client is not None:
            # Best effort: a worker that left meanwhile took its cache with it.
            try:
                client.run(_forget_task, fit_id)
            except (OSError, KeyError, ValueError, RuntimeError):  # pragma: no cover
                pass
    return ClusterFit(model, cluster, hypers, state, sample, elbo, len(parts), total)


def _sizes_of_rows(compiled):
    """The data sizes that count rows (``N``): the first dimension of the declared vectors and
    matrices."""
    sizes = set()
    for _name, kind, dims in compiled.declarations():
        if kind == "data" and dims and dims[0] is not None:
            sizes.add(dims[0])
    return sizes
