"""Draw rows (CmdStan columns ``name``, ``name.i``, ``name.i.j``, matrices column-major) into
ArviZ InferenceData, and back into rows for prediction."""

from __future__ import annotations

import json
import re

import numpy as np

def _split(column):
    """``"F.2.1"`` -> ``("F", (2, 1))``."""
    parts = column.split(".")
    return parts[0], tuple(int(p) for p in parts[1:])


def _variables(columns):
    """Per base name (in order): its column positions and its shape."""
    out = {}
    for pos, col in enumerate(columns):
        base, idx = _split(col)
        entry = out.setdefault(base, {"positions": [], "shape": [0] * len(idx)})
        entry["positions"].append(pos)
        entry["shape"] = [max(s, i) for s, i in zip(entry["shape"], idx)]
    return out


def _values(rows, positions, shape):
    """The (chain, draw, *shape) array of a variable whose columns, first index fastest, are
    ``positions``."""
    block = rows[:, :, positions]
    c, d = rows.shape[:2]
    if not shape:
        return block[:, :, 0]
    k = len(shape)
    arr = block.reshape((c, d) + tuple(reversed(shape)))
    return arr.transpose((0, 1) + tuple(range(k + 1, 1, -1)))


def _pointwise(base, declared):
    """``"log_lik"`` or ``"y_rep"`` for the pointwise columns (named with ``_`` appended while
    the model declares the name), else None."""
    m = re.fullmatch(r"(log_lik|y_rep)_*", base)
    return m.group(1) if m and base not in declared else None


def build(compiled, columns, rows, data, attrs):
    """InferenceData of draws: ``rows`` is (chain, draw, column)."""
    import arviz as az

    # The transformed data (`let`s of the data block), computed from the data given, join
    # them: a transformed response is observed data, the others constant data.
    from . import _data

    declarations = compiled.declarations()
    labels = getattr(data, "labels", {})
    data = dict(data)
    # Computing them checks the data once more: only for a model that has any.
    if any(kind == "transformed" for _name, kind, _dims in declarations):
        for name, values, shape in compiled.transformed(_data.handover(data)):
            data.setdefault(name, np.asarray(values).reshape(shape) if shape else values[0])
    decl = {name: dims for name, _kind, dims in declarations}
    kinds = {name: kind for name, kind, _dims in declarations}
    responses = [r for r in compiled.responses() if r is not None]

    def dims_of(name, ndim):
        declared = decl.get(name, [])
        if len(declared) == ndim:
            return [d if d is not None else f"{name}_dim_{k}" for k, d in enumerate(declared)]
        return [f"{name}_dim_{k}" for k in range(ndim)]

    posterior, stats, loglik, pp, dims = {}, {}, {}, {}, {}
    for base, v in _variables(columns).items():
        values = _values(rows, v["positions"], v["shape"])
        if base == "lp__":
            stats["lp"] = values
            continue
        kind = _pointwise(base, decl)
        if kind is not None:
            target = loglik if kind == "log_lik" else pp
            # One variable per response when the columns split by the responses' lengths (the
            # factors' observations in order), else one variable for all.
            lengths = [np.size(data[r]) for r in responses if r in data]
            if lengths and sum(lengths) == values.shape[-1]:
                start = 0
                for r, n in zip(responses, lengths):
                    target[r] = values[..., start : start + n]
                    dims[r] = dims_of(r, 1)
                    start += n
            else:
                target[kind] = values
            continue
        posterior[base] = values
        if base.endswith("_inducing") and base not in decl:
            dims[base] = [f"{base}_dim_{k}" for k in range(len(v["shape"]))]
        else:
            dims[base] = dims_of(base, len(v["shape"]))
    # Copies the InferenceData owns: the caller's arrays may change after sampling, and
    # prediction from the InferenceData reads these (issue 32).
    observed = {r: np.array(data[r], copy=True) for r in responses if r in data}
    constant = {
        k: np.array(v, copy=True)
        for k, v in data.items()
        if k not in observed and kinds.get(k) in ("data", "transformed")
    }
    # Data declared `int` (labels, counts) stay integers, and so do their replicates: ArviZ
    # then draws bars for them (`plot_ppc`), not a smooth density over 0/1 labels.
    integers = set(compiled.integer_data())

    def as_declared(name, values):
        values = np.asarray(values)
        if name in integers and np.all(np.isfinite(values)):
            return np.rint(values).astype(np.int64)
        return values

    observed = {k: as_declared(k, v) for k, v in observed.items()}
    constant = {k: as_declared(k, v) for k, v in constant.items()}
    pp = {k: as_declared(k, v) for k, v in pp.items()}
    for k, v in list(observed.items()) + list(constant.items()):
        dims.setdefault(k, dims_of(k, np.ndim(v)))
    groups = dict(posterior=posterior, sample_stats=stats, dims=dims)
    if loglik:
        groups["log_likelihood"] = loglik
    if pp:
        groups["posterior_predictive"] = pp
    if observed:
        groups["observed_data"] = observed
    if constant:
        groups["constant_data"] = constant
    idata = az.from_dict(**groups)
    idata.posterior.attrs.update(attrs)
    if labels:
        # Text labels given for integer data: {name: [[number, label], ...]} (JSON: netCDF
        # attributes are strings and numbers); prediction maps new labels the same way.
        mapping = json.dumps({k: [[_number(n), str(lab)] for n, lab in sorted(v.items())]
                              for k, v in labels.items()})
        idata.posterior.attrs["gpmc_labels"] = mapping
        if "observed_data" in idata.groups():
            idata.observed_data.attrs["gpmc_labels"] = mapping
    return idata


def _number(x):
    return int(x) if float(x).is_integer() else float(x)


def label_mapping(idata):
    """The text labels a fit was given: {name: {number: label}} (empty when there were none)."""
    stored = json.loads(idata.posterior.attrs.get("gpmc_labels", "{}"))
    return {k: {float(n): lab for n, lab in pairs} for k, pairs in stored.items()}


def parameter_rows(idata):
    """The draws' parameter columns (those of a run without log_lik / y_rep) as a
    (chain * draw, column) C-contiguous float64 array, and the number of chains."""
    columns = json.loads(idata.posterior.attrs["gpmc_columns"])
    post = idata.posterior
    c, d = post.sizes["chain"], post.sizes["draw"]
    out = np.empty((c, d, len(columns)))
    for pos, col in enumerate(columns):
        base, idx = _split(col)
        if base == "lp__":
            out[:, :, pos] = idata.sample_stats["lp"].values
            continue
        values = post[base].values
        out[:, :, pos] = values[(slice(None), slice(None)) + tuple(i - 1 for i in idx)]
    return np.ascontiguousarray(out.reshape(c * d, len(columns))), c


# Generated quantities a Stan user names so, and the InferenceData group each feeds.
_DENSITY_GROUPS = {"log_lik": "log_likelihood", "y_rep": "posterior_predictive", "yrep": "posterior_predictive"}


def build_density(cols, rows, attrs):
    """InferenceData of a Stan program run on its whole log density: each output column
    ``name.i.j`` (CmdStan's names) into its variable's array; ``lp__`` into ``sample_stats``,
    generated ``log_lik`` into ``log_likelihood`` and ``y_rep`` into ``posterior_predictive``
    (what LOO and PPC read), the rest into ``posterior``."""
    import arviz as az

    entries = {}
    for j, c in enumerate(cols):
        base, *idx = c.split(".")
        entries.setdefault(base, []).append((tuple(int(i) for i in idx), j))
    nchains, ndraws = rows.shape[0], rows.shape[1]
    groups = {"posterior": {}, "sample_stats": {}, "log_likelihood": {}, "posterior_predictive": {}}
    for base, items in entries.items():
        if not items[0][0]:
            arr = rows[:, :, items[0][1]]
        else:
            dims = tuple(max(i[0][k] for i in items) for k in range(len(items[0][0])))
            arr = np.full((nchains, ndraws) + dims, np.nan)
            for idx, j in items:
                arr[(slice(None), slice(None)) + tuple(i - 1 for i in idx)] = rows[:, :, j]
        if base == "lp__":
            groups["sample_stats"]["lp"] = arr
        else:
            groups[_DENSITY_GROUPS.get(base, "posterior")][base] = arr
    kwargs = {k: v for k, v in groups.items() if v}
    idata = az.from_dict(**kwargs)
    for g in idata.groups():
        idata[g].attrs.update(attrs)
    return idata
