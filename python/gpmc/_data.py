"""Data from Python into the compiled model: dicts of numbers and arrays, or a pandas DataFrame
with a column mapping, normalised to float64 arrays the extension reads in place."""

from __future__ import annotations

import numpy as np

try:  # pandas is a dependency, but keep the import cheap and optional here
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None


def normalise(data, columns=None, declared=None):
    """A dict name -> float or C-contiguous float64 array.

    ``data`` is a dict of numbers, lists, numpy arrays or pandas Series, or a pandas DataFrame.
    With a DataFrame, ``columns`` maps each datum to a column name (a vector) or a list of
    column names (a matrix, rows = the frame's rows); data not mapped are taken from the columns
    of the same name (only the model's ``declared`` data, when given: other columns, text ones
    included, are ignored), and sizes (``N``, ``D``) are inferred from the arrays.
    """
    if pd is not None and isinstance(data, pd.DataFrame):
        frame = data
        out = {}
        mapping = dict(columns or {})
        for name, cols in mapping.items():
            wanted = list(cols) if isinstance(cols, (list, tuple)) else [cols]
            missing = [c for c in wanted if c not in frame.columns]
            if missing:
                from ._gpmc import DataError

                raise DataError(
                    f"`{name}` is mapped to the column(s) {missing}, which the frame does not "
                    f"have (its columns: {[str(c) for c in frame.columns][:20]}): "
                    "correct `columns` or the frame"
                )
            if isinstance(cols, (list, tuple)):
                out[name] = frame[list(cols)].to_numpy(dtype=np.float64)
            else:
                # A Series: converted below with the dict's values (categoricals, messages).
                out[name] = frame[cols]
        used = {c for v in mapping.values() for c in (v if isinstance(v, (list, tuple)) else [v])}
        for c in frame.columns:
            if c in used or str(c) in out or (declared is not None and str(c) not in declared):
                continue
            out[str(c)] = frame[c]
        data = out
    elif columns:
        raise TypeError("`columns` maps the columns of a pandas DataFrame; data is a dict")
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict or a pandas DataFrame, not {type(data).__name__}")
    out = {}
    for name, value in data.items():
        if isinstance(value, (bool, int, float, np.integer, np.floating)):
            out[str(name)] = float(value)
            continue
        value = _categorical_values(name, value)
        try:
            arr = np.ascontiguousarray(np.asarray(value, dtype=np.float64))
        except (TypeError, ValueError) as e:
            from ._gpmc import DataError

            kind = getattr(getattr(value, "dtype", None), "kind", None)
            what = "an object array" if kind == "O" else type(value).__name__
            raise DataError(
                f"`{name}` is {what} that is not numbers ({e}): give numbers (int or float), "
                "as a list, a numpy array or a pandas Series"
            ) from None
        out[str(name)] = float(arr) if arr.ndim == 0 else arr
    return out


def _categorical_values(name, value):
    """A pandas Categorical as numbers: its values where its categories are numbers; where they
    are labels such as strings, a DataError that says how to give them (the model's label sets
    are numbers: `in 1..C`, `{0, 1}`, `{-1, 1}`)."""
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "name", None) != "category":
        return value
    categories = list(dtype.categories)
    if all(isinstance(c, (bool, int, float, np.integer, np.floating)) for c in categories):
        return np.asarray(value, dtype=object).astype(np.float64)
    from ._gpmc import DataError

    shown = categories[:6] + (["…"] if len(categories) > 6 else [])
    raise DataError(
        f"`{name}` is a pandas Categorical of the labels {shown}: the model's labels are numbers. "
        f"For a label set `in 1..C` give `{name}.cat.codes + 1` (the mapping: "
        f"`dict(enumerate({name}.cat.categories, start=1))`); for `{{0, 1}}` or `{{-1, 1}}` map "
        "the two categories to those numbers"
    )


def handover(data):
    """The dict the extension reads: numbers as they are, arrays as (address, shape) of their
    values (read in place, once, while the arrays are kept alive by ``data``)."""
    out = {}
    for name, value in data.items():
        if isinstance(value, float):
            out[name] = value
        else:
            assert value.dtype == np.float64 and value.flags["C_CONTIGUOUS"]
            out[name] = (value.ctypes.data, tuple(value.shape))
    return out
