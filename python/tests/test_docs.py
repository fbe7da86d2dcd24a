"""Issue 53: every code block of README.md and docs/*.md runs as printed, so a stale command,
model, option or output fails here rather than in a user's hands.

A block is treated by its fence's language and, where needed, a directive: an HTML comment
`<!-- doc-test: ... -->` on the line right above the fence (invisible when rendered).
- gpm, stan: written to a file (named by the directive `file NAME`, for a later block to use)
  and `gpmc check`ed; it must pass or, when its first line is `// error: CODE`, fail with that
  diagnostic code.
- sh: each command (backslash continuations joined) runs in the document's scratch directory,
  where `gpmc` and `cargo run --release -p gpmc --` both mean the binary ./run-tests built; each
  must exit 0.
- python: runs with this interpreter in the scratch directory; `continues` runs the document's
  earlier python blocks first (a tutorial split by prose); a text block marked `printed` shows
  what the last one printed (compared as `output` is, below) — the place for a number the prose
  quotes.
- text, json, untagged: prose (a diagram, a grammar, a generated table), unless the directive says
  `output of CMD` — every line shown appears in CMD's output in order, `...` eliding (a block
  whose first line is `$ CMD` is that command's output: directive `output`) — or `synopsis of
  SUBCOMMAND...`: every `--option` shown exists in `gpmc SUBCOMMAND --help`.
- `skip: REASON` for what a test must not run (installs, the test suite itself); a reason is
  required, and the skipped blocks are few and named in the test below.
The scratch directory links models/ and tests/, so paths read as from the checkout's root; the
blocks of one document run in order in one directory (a command's output is the next block's
input, as for a reader).
"""

import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GPMC = pathlib.Path(os.environ.get("GPMC_BIN", str(ROOT / "target" / "release" / "gpmc")))
DOCS = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))
DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
TIMEOUT = 900


class Block:
    def __init__(self, doc, line, language, body, directive):
        self.doc, self.line, self.language = doc, line, language
        self.body, self.directive = body, directive

    @property
    def where(self):
        return f"{self.doc}:{self.line}"


def blocks_of(doc):
    """The fenced blocks of a document, each with its language, text and directive."""
    lines = (ROOT / doc).read_text().split("\n")
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        body = "\n".join(line[indent:] for line in lines[i + 1:end]) + "\n"
        above = DIRECTIVE.match(lines[i - 1].strip()) if i > 0 else None
        found.append(Block(doc, i + 1, m.group(2), body, above.group(1) if above else ""))
        i = end + 1
    return found


def commands_of(body):
    """Shell commands: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    commands = []
    for line in joined.split("\n"):
        words = shlex.split(line, comments=True)
        if words:
            commands.append(words)
    return commands


def as_run(words):
    """`cargo run --release -p gpmc -- ARGS` and `gpmc ARGS` both run the built binary."""
    if words[:2] == ["cargo", "run"] and "--" in words:
        return [str(GPMC)] + words[words.index("--") + 1:]
    if words[0] == "gpmc":
        return [str(GPMC)] + words[1:]
    return words


def run(words, cwd):
    return subprocess.run(as_run(words), cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT)


def first_line_missing(shown, output):
    """The first line of `shown` not found, in order, among the lines of `output` (None when all
    are). Runs of blanks compare as one space; `...` in a line matches anything."""
    out = [" ".join(line.split()) for line in output.split("\n")]
    k = 0
    for line in shown.split("\n"):
        s = " ".join(line.split())
        if not s or s == "...":
            continue
        pattern = ".*".join(re.escape(part) for part in s.split("..."))
        while k < len(out) and not re.fullmatch(pattern, out[k]):
            k += 1
        if k == len(out):
            return line
        k += 1
    return None


def check_model(block, cwd):
    name = block.directive[len("file"):].strip() if block.directive.startswith("file") else ""
    path = cwd / (name or f"block_{block.line}.{block.language}")
    path.write_text(block.body)
    r = run(["gpmc", "check", str(path)], cwd)
    expected = re.match(r"//\s*error:\s*(\S+)", block.body)
    if expected:
        assert r.returncode != 0 and expected.group(1) in r.stderr, \
            f"{block.where}: expected the error {expected.group(1)}; got\n{r.stderr[-2000:]}"
    else:
        assert r.returncode == 0, f"{block.where}: gpmc check failed:\n{r.stderr[-2000:]}"


def check_shell(block, cwd):
    for words in commands_of(block.body):
        r = run(words, cwd)
        assert r.returncode == 0, \
            f"{block.where}: `{' '.join(words)}` exited {r.returncode}:\n{r.stderr[-2000:]}"


def check_python(block, cwd, earlier):
    code = "".join(b.body for b in earlier) if block.directive == "continues" else ""
    r = subprocess.run([sys.executable, "-c", code + block.body], cwd=cwd, capture_output=True,
                       text=True, timeout=TIMEOUT, env={**os.environ, "MPLBACKEND": "Agg"})
    assert r.returncode == 0, f"{block.where}: the Python block failed:\n{r.stderr[-3000:]}"
    return r.stdout


def check_printed(block, printed):
    assert printed is not None, f"{block.where}: `printed` follows no Python block"
    missing = first_line_missing(block.body, printed)
    assert missing is None, \
        f"{block.where}: shown as printed by the Python block above but not printed: {missing!r}"


def check_output(block, cwd):
    body, command = block.body, block.directive[len("output of"):].strip()
    if not command:
        first, _, body = body.partition("\n")
        assert first.startswith("$ "), f"{block.where}: `output` needs `$ CMD` as the first line"
        command = first[2:]
    r = run(shlex.split(command), cwd)
    missing = first_line_missing(body, r.stdout + r.stderr)
    assert missing is None, \
        f"{block.where}: shown as the output of `{command}` but not printed by it: {missing!r}"


def check_synopsis(block, cwd):
    subcommands = block.directive[len("synopsis of"):].split()
    help_text = "".join(run(["gpmc", s, "--help"], cwd).stdout for s in subcommands)
    help_text += run(["gpmc", "--help"], cwd).stdout  # --version, --help
    for option in sorted(set(re.findall(r"(--[a-z][a-z-]*)", block.body))):
        assert re.search(rf"{option}\b", help_text), \
            f"{block.where}: `{option}` is not an option of `gpmc {' or '.join(subcommands)}`"


def check_block(block, cwd, earlier_python, printed=None):
    """Checks one block; returns what a Python block printed (for a `printed` block after it)."""
    d, language = block.directive, block.language
    if d == "printed":
        check_printed(block, printed)
    elif d.startswith("skip"):
        assert d.startswith("skip:") and len(d) > len("skip:") + 10, \
            f"{block.where}: a skipped block says why (`skip: REASON`)"
    elif d.startswith("output"):
        check_output(block, cwd)
    elif d.startswith("synopsis of"):
        check_synopsis(block, cwd)
    elif language in ("gpm", "stan") and (d == "" or d.startswith("file ")):
        check_model(block, cwd)
    elif language == "sh" and d == "":
        check_shell(block, cwd)
    elif language == "python" and d in ("", "continues"):
        return check_python(block, cwd, earlier_python)
    else:
        assert language in ("", "text", "json"), \
            f"{block.where}: a ```{language} block has no doc-test rule for {d!r}"
        assert d == "", f"{block.where}: unknown directive {d!r}"


@pytest.fixture(scope="module")
def binary():
    if not GPMC.exists():
        pytest.skip("the CLI binary is built by ./run-tests")
    return GPMC


@pytest.mark.parametrize("doc", DOCS)
def test_every_block_runs_as_printed(doc, binary, tmp_path):
    for name in ("models", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    earlier_python, failures, printed = [], [], None
    for block in blocks_of(doc):
        try:
            printed = check_block(block, tmp_path, earlier_python, printed) or printed
        except (AssertionError, subprocess.TimeoutExpired) as e:
            failures.append(str(e))
        if block.language == "python":
            earlier_python.append(block)
    assert not failures, "\n\n".join(failures)


def test_few_blocks_are_skipped_and_each_says_why():
    skipped = [b.where for doc in DOCS for b in blocks_of(doc) if b.directive.startswith("skip")]
    # The install commands (pip install ., the wheel for workers), the test suite itself, the
    # build, and the hour-long fuzzing run: these run in ./run-tests' own steps or on purpose.
    assert len(skipped) <= 8, skipped


def test_the_checker_fails_on_a_stale_block(tmp_path):
    """The rules can fail: a removed option, a model with a typo and an output line that the
    command no longer prints are each caught."""
    if not GPMC.exists():
        pytest.skip("the CLI binary is built by ./run-tests")
    (tmp_path / "models").symlink_to(ROOT / "models")
    cases = [
        Block("x.md", 1, "text", "gpmc infer MODEL --no-such-flag\n", "synopsis of infer"),
        Block("x.md", 2, "gpm", "data { N : int; }\nmodel { y ~ normal(0, 1); }\n", ""),
        Block("x.md", 3, "text", "model models/gp_classification.gpm: wrong\n",
              "output of gpmc check models/gp_classification.gpm"),
        Block("x.md", 4, "sh", "gpmc check models/no_such_model.gpm\n", ""),
    ]
    for block in cases:
        with pytest.raises(AssertionError):
            check_block(block, tmp_path, [])
    assert first_line_missing("a\n...\nc 1.5 ... d\n", "a\nb\nc 1.5 and d\n") is None


def test_the_python_reference_states_each_default_the_code_has():
    """docs/python.md writes the signatures out (`model.sample(data, chains=4, ...)`): each
    default shown is the function's, or — where the function takes `None` to mean the library's
    default — `gpmc.SVI_DEFAULTS`' value."""
    import ast
    import inspect

    import gpmc

    text = (ROOT / "docs" / "python.md").read_text()
    roots = {"gpmc": gpmc, "model": gpmc.Model, "Model": gpmc.Model}
    checked = 0
    for m in re.finditer(r"`((?:gpmc|model|Model)[\w.]*)\(([^`]*)\)`", text):
        obj = roots[m.group(1).split(".")[0]]
        for attribute in m.group(1).split(".")[1:]:
            obj = getattr(obj, attribute, None)
            assert obj is not None, f"docs/python.md: `{m.group(1)}` does not exist"
        parameters = inspect.signature(obj).parameters
        for name, shown in re.findall(r"(\w+)=([^,()]+)", m.group(2)):
            shown = shown.strip()
            if shown == name:  # `client=client`: an argument, not a default
                continue
            assert name in parameters, f"docs/python.md: `{m.group(1)}` has no `{name}`"
            default = parameters[name].default
            if default is None and shown != "None":
                default = gpmc.SVI_DEFAULTS.get(name)
            try:
                value = ast.literal_eval(shown)
            except (ValueError, SyntaxError):
                value = shown
            assert value == default, \
                f"docs/python.md: `{m.group(1)}(..., {name}={shown})` but the default is {default!r}"
            checked += 1
    assert checked > 40, checked


def test_the_json_reference_names_every_field_check_writes():
    """docs/cli.md's table of `gpmc check --format json` fields: every top-level field, every
    field of the schedule, and every field of each top-level array's objects, has its row
    (`data[].name`, or `.dims` in a row of the same array)."""
    import json

    if not GPMC.exists():
        pytest.skip("the CLI binary is built by ./run-tests")
    rows = [line for line in (ROOT / "docs" / "cli.md").read_text().split("\n")
            if line.startswith("| `")]
    table = "\n".join(rows)
    for model in ("models/gp_classification.gpm", "models/eight_schools.stan"):
        out = subprocess.run([str(GPMC), "check", model, "--format", "json"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        document = json.loads(out)
        # The schedule's own fields too (its learning phase went unlisted for a session).
        for field in (document.get("schedule") or {}):
            assert f"`schedule.{field}`" in table or f"`schedule.{field}[]`" in table, \
                f"{model}: `schedule.{field}` has no row"
        for key, value in document.items():
            assert f"`{key}`" in table or f"`{key}[]`" in table, f"{model}: `{key}` has no row"
            if isinstance(value, list) and value and isinstance(value[0], dict):
                own = [r for r in rows if r.startswith(f"| `{key}[]")]
                for field in value[0]:
                    names = (f"`{key}[].{field}`", f"`{key}[].{field}[]`", f"`.{field}`")
                    assert any(name in r for r in own for name in names), \
                        f"{model}: `{key}[].{field}` has no row"
