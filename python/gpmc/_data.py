"""Data from Python into the compiled model: dicts of numbers and arrays, or a pandas DataFrame
with a column mapping, normalised to float64 arrays the extension reads in place."""

from __future__ import annotations

import numpy as np

try:  # pandas is a dependency, but keep the import cheap and optional here
    import pandas as pd
except ImportError:  # pragma: no cover
    pd = None


class Data(dict):
    """The normalised data (name -> float or float64 array) and, in ``labels``, the mapping of
    each datum given as text labels: name -> {number in the model: the label given}."""

    def __init__(self, values=(), labels=None):
        super().__init__(values)
        self.labels = dict(labels or {})


def normalise(data, columns=None, declared=None, label_sets=None, labels=None):
    """A :class:`Data`: name -> float or C-contiguous float64 array.

    ``label_sets`` (name -> the declared label set, as ``check`` prints it: ``"{-1, 1}"``,
    ``"1..C"``) lets a datum of text labels — a pandas Categorical (its categories in order) or
    an array of strings (sorted) — be mapped onto the set's numbers in increasing order;
    ``labels`` (name -> {number: label}) is a fit's mapping, for new data (a datum it does not
    name was given as numbers).
    Without either, text labels are a DataError that says how to give them.

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
    out, made = Data(), {}
    for name, value in data.items():
        if isinstance(value, (bool, int, float, np.integer, np.floating)):
            out[str(name)] = float(value)
            continue
        text = _text_labels(value)
        if text is not None and (label_sets or labels):
            value, made[str(name)] = _mapped(name, text, data, label_sets or {}, labels)
        else:
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
    out.labels = made
    return out


def _text_labels(value):
    """``(labels in order, values)`` for a Categorical of text categories or an array of
    strings; None for anything else (numbers are read as numbers)."""
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "name", None) == "category":
        categories = list(dtype.categories)
        if all(isinstance(c, (bool, int, float, np.integer, np.floating)) for c in categories):
            return None
        return categories, np.asarray(value, dtype=object)
    if getattr(dtype, "kind", None) in ("b", "i", "u", "f"):
        # Numbers already (a numpy array or Series): no object copy of every value (2·10⁶
        # Python floats for a 2·10⁵ × 10 matrix, 60 ms).
        return None
    if isinstance(value, (list, tuple, np.ndarray)) or (pd is not None and isinstance(value, pd.Series)):
        arr = np.asarray(value, dtype=object)
        if arr.ndim == 1 and arr.size and all(isinstance(v, str) for v in arr):
            return sorted(set(arr)), arr
    return None


def _label_numbers(name, label_set, data, count):
    """The numbers of a declared label set, in increasing order: ``{-1, 1}`` as written; a
    range ``lo..hi`` from ``lo`` to ``hi`` (a number, or a datum given as one; else ``count``
    numbers); None for a range open above (counts, not labels)."""
    from ._gpmc import DataError

    label_set = label_set or ""
    if label_set.startswith("{"):
        return sorted(float(v) for v in label_set.strip("{}").split(","))
    lo, dots, hi = (part.strip() for part in label_set.partition(".."))
    try:
        low = float(lo) if dots else None
    except ValueError:
        low = None
    if low is None:
        raise DataError(
            f"`{name}` is given as text labels, but the model declares it "
            f"{'in ' + label_set if label_set else 'without a label set'}: text labels map onto "
            "a declared label set (`in {0, 1}`, `in {-1, 1}`, `in 1..C`); give numbers otherwise"
        )
    if not hi:
        return None
    top = data.get(hi, hi)
    try:
        top = float(top)
    except (TypeError, ValueError):
        return [low + k for k in range(count)]
    return [low + k for k in range(int(top - low) + 1)]


def _mapped(name, text, data, label_sets, labels):
    """Text labels as the numbers of the model's label set, and the mapping {number: label}."""
    from ._gpmc import DataError

    order, values = text
    if labels is not None and name in labels:
        to_number = {label: number for number, label in labels[name].items()}
    elif labels is not None:
        raise DataError(
            f"`{name}` is given as text labels, but the fit was given numbers for it: give "
            "numbers, as at fitting"
        )
    else:
        numbers = _label_numbers(name, label_sets.get(name), data, len(order))
        if numbers is None or len(order) > len(numbers):
            raise DataError(
                f"`{name}` has {len(order)} labels {order[:6]} but its declared label set "
                f"`{label_sets.get(name)}` has {len(numbers or [])}: give one label per number "
                "of the set, or numbers"
            )
        if len(order) < len(numbers) and len(numbers) == 2:
            raise DataError(
                f"`{name}` has only the label {order}, so which of the two numbers of "
                f"`{label_sets.get(name)}` it is cannot be decided: give numbers, or a pandas "
                "Categorical whose categories name both labels"
            )
        to_number = dict(zip(order, numbers))
    unknown = sorted({str(v) for v in values if v not in to_number})
    if unknown:
        raise DataError(
            f"`{name}` has the labels {unknown[:6]}, which the fit's mapping "
            f"{ {v: k for k, v in to_number.items()} } does not have: give the labels the model "
            "was fitted with"
        )
    numbers = np.array([to_number[v] for v in values], dtype=np.float64)
    return numbers, {number: label for label, number in to_number.items()}


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
