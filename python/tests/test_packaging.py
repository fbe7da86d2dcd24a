"""Issue 53: the distribution is ours — `gpmc-ppl` on PyPI (PyPI's `gpmc` is an unrelated
project), imported as `gpmc` — its version is the Cargo workspace's, and its extras exist."""

import importlib.metadata as metadata
import pathlib
import re

import gpmc

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_distribution_is_gpmc_ppl_with_the_workspace_version():
    meta = metadata.metadata("gpmc-ppl")
    assert meta["Name"] == "gpmc-ppl"
    cargo = (ROOT / "Cargo.toml").read_text()
    workspace_version = re.search(r'\[workspace\.package\][^\[]*?version = "([^"]+)"', cargo, re.S)
    assert workspace_version, "the workspace declares a version"
    assert gpmc.__version__ == meta["Version"] == workspace_version.group(1)
    assert gpmc.DISTRIBUTION == "gpmc-ppl"
    # The module comes from this distribution, not from PyPI's `gpmc`.
    files = [str(f) for f in metadata.files("gpmc-ppl") or []]
    assert any(f.startswith("gpmc/") and f.endswith("__init__.py") for f in files), files[:10]


def test_the_dask_extra_names_what_the_cluster_needs():
    requires = metadata.requires("gpmc-ppl") or []
    dask = [r for r in requires if re.search(r"extra == ['\"]dask['\"]", r)]
    assert any(r.startswith("dask[dataframe]") for r in dask), requires
    assert any(r.startswith("distributed") for r in dask), requires
