"""Issue 51: each default once. SVI's defaults live in the Rust library (`SviConfig::default()`);
Python reads them (`gpmc.SVI_DEFAULTS`), the command line uses them, and every number the docs
and the CLI's help state for them is checked against them here — a stale one fails."""

import pathlib
import re
import subprocess

import pytest

import gpmc

ROOT = pathlib.Path(__file__).resolve().parents[2]
GPMC = ROOT / "target" / "release" / "gpmc"


def test_svi_defaults_come_from_the_library():
    d = gpmc.SVI_DEFAULTS
    assert set(d) == {"batch", "iterations", "forgetting", "delay", "hyper_rate", "class_batch"}
    assert 0.5 < d["forgetting"] <= 1.0 and d["delay"] >= 0 and d["batch"] >= 1


@pytest.mark.parametrize("doc", ["docs/python.md", "docs/cluster.md", "README.md"])
def test_the_docs_state_the_library_defaults(doc):
    text = (ROOT / doc).read_text()
    for key in ("forgetting", "delay", "hyper_rate"):
        for value in re.findall(rf"\b{key}=([0-9.]+)", text):
            assert float(value) == gpmc.SVI_DEFAULTS[key], f"{doc}: {key}={value}"


def test_the_cli_help_states_the_library_defaults():
    if not GPMC.exists():
        pytest.skip("the CLI binary is built by ./run-tests")
    help_text = " ".join(subprocess.run([str(GPMC), "infer", "--help"], capture_output=True,
                                        text=True, check=True).stdout.split())
    for flag, key in [("--batch", "batch"), ("--forgetting", "forgetting"), ("--delay", "delay"),
                      ("--hyper-rate", "hyper_rate")]:
        m = re.search(rf"{flag} <[A-Z_]+> .*?\[default: ([0-9.]+)", help_text)
        assert m, flag
        assert float(m.group(1)) == gpmc.SVI_DEFAULTS[key], (flag, m.group(1))
