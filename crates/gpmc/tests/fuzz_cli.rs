//! Mutation fuzzing of the `gpmc` binary, as part of the tests: seeded, some 1 300 cases,
//! each run as its own process under a memory limit and a time limit. Whatever the input, the
//! process must end by itself, in time, with exit code 0 (valid), 1 (a diagnosed error) or 2
//! (unreadable input or a bad command line) — never a panic (101), an abort (134: stack
//! overflow, failed allocation) or a hang.
//!
//! The corpus: every model in models/, every broken model in tests/broken/ and every ```gpm
//! example in docs/. The mutations are those of the fuzzer run that found issue 18's crashes —
//! deleting, duplicating, swapping and inserting pieces — plus the amplifiers it showed matter:
//! a token repeated thousands of times (nesting), a number replaced by an extreme one (1e308,
//! 1e18, 0), a line moved past column 65 536, a byte-order mark, a declaration repeated
//! thousands of times, bytes that are not UTF-8 — and issue 32's families: every library
//! function nested around and past the call limit, integer literals beyond any size, tens of
//! thousands of declarations, devices and FIFOs as paths, test inputs of another shape than
//! the training data. Long runs on purpose: `fuzz/` (cargo fuzz), or `GPMC_FUZZ_CASES=N`.

use rand::{Rng, SeedableRng};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address-space limit of each child (a failed allocation aborts, exit 134).
const MEMORY_LIMIT: u64 = 2 << 30;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every model text of the corpus.
fn corpus() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["models", "tests/broken"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "gpm"))
            .collect();
        files.sort();
        out.extend(files.iter().map(|p| std::fs::read_to_string(p).unwrap()));
    }
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    for p in docs {
        let text = std::fs::read_to_string(p).unwrap();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("```gpm\n") {
            let body = &rest[i + 7..];
            let end = body.find("```").unwrap_or(body.len());
            out.push(body[..end].to_string());
            rest = &body[end..];
        }
    }
    assert!(out.len() > 40, "corpus of {} texts", out.len());
    out
}

#[rustfmt::skip]
const TOKENS: &[&str] = &[
    "(", ")", "[", "]", "{", "}", ";", ",", "~", "=", "+", "-", "*", "/", "^", "..",
    "in", "for", "let", "learn", "data", "model", "latent", "hyper",
    "vector[N]", "int", "real",
    "gp(x, sqexp(1.0))", "logistic(", "exp(", "log(", "normal(", "poisson(", "f[i]",
    "1e308", "-1", "0",
    "\n", "//", "/*", "#",
];

const EXTREME_NUMBERS: &[&str] = &[
    "1e308", "1e400", "1e18", "1e9", "3e4", "1e-300", "0", "0.0", "1e-8", "1e12", "1e100",
];

/// Integer literals far beyond any size a machine holds (issue 32: `inducing = 4294967296`,
/// `1..1000000000`, a billion classes).
const HUGE_SIZES: &[&str] = &[
    "1000000000",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999999",
    "65537",
];

/// One mutation of `src`.
fn mutate(src: &str, rng: &mut impl Rng) -> Vec<u8> {
    let mut s: Vec<char> = src.chars().collect();
    let n = s.len().max(1);
    let at = rng.gen_range(0..n).min(s.len());
    match rng.gen_range(0..14) {
        // Delete, duplicate, swap, insert a token: the plain mutations.
        0 => {
            let end = (at + rng.gen_range(1..40)).min(s.len());
            s.drain(at..end);
        }
        1 => {
            let end = (at + rng.gen_range(1..60)).min(s.len());
            let piece: Vec<char> = s[at..end].to_vec();
            let to = rng.gen_range(0..=s.len());
            s.splice(to..to, piece);
        }
        2 => {
            if !s.is_empty() {
                let b = rng.gen_range(0..s.len());
                let a = at.min(s.len() - 1);
                s.swap(a, b);
            }
        }
        3 => {
            let t = TOKENS[rng.gen_range(0..TOKENS.len())];
            s.splice(at..at, t.chars());
        }
        // A number made deep: wrapped in brackets, unary minuses, a power tower, a long sum
        // (balanced, so that the parser goes all the way down); or a token repeated raw.
        4 => {
            let times = [300, 3_000, 20_000, 150_000][rng.gen_range(0..4)];
            let text: String = s.iter().collect();
            if let Some((i, len)) = a_number(&text, rng) {
                let num = &text[i..i + len];
                let deep = match rng.gen_range(0..5) {
                    0 => format!("{}{num}{}", "(".repeat(times), ")".repeat(times)),
                    1 => format!("{}{num}", "-".repeat(times)),
                    2 => format!("{}{num}", "1^".repeat(times)),
                    3 => format!("{}{num}", "1 + ".repeat(times)),
                    _ => format!(
                        "{}{num}{}",
                        "exp(".repeat(times.min(3_000)),
                        ")".repeat(times.min(3_000))
                    ),
                };
                return format!("{}{deep}{}", &text[..i], &text[i + len..]).into_bytes();
            }
            let t = ["(", "-", "[", "{", "f["][rng.gen_range(0..5)];
            s.splice(at..at, t.repeat(times).chars());
        }
        // A number replaced by an extreme one.
        5 => {
            let text: String = s.iter().collect();
            if let Some((i, len)) = a_number(&text, rng) {
                let new = EXTREME_NUMBERS[rng.gen_range(0..EXTREME_NUMBERS.len())];
                return format!("{}{}{}", &text[..i], new, &text[i + len..]).into_bytes();
            }
        }
        // Past column 65 536.
        6 => {
            s.splice(at..at, std::iter::repeat_n(' ', 70_000));
        }
        // A byte-order mark, first or anywhere.
        7 => {
            let to = if rng.gen_bool(0.5) { 0 } else { at };
            s.insert(to, '\u{feff}');
        }
        // A line repeated thousands of times (duplicated declarations, many statements).
        8 => {
            let text: String = s.iter().collect();
            let lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let k = rng.gen_range(0..lines.len());
                let times = rng.gen_range(100..3_000);
                let mut out = String::new();
                for (j, l) in lines.iter().enumerate() {
                    let reps = if j == k { times } else { 1 };
                    for _ in 0..reps {
                        out.push_str(l);
                        out.push('\n');
                    }
                }
                return out.into_bytes();
            }
        }
        // Random characters, multi-byte ones among them.
        9 => {
            for _ in 0..rng.gen_range(1..20) {
                let c = ['é', 'λ', '∑', '\0', '\t', '"', '\\', '😀', 'ω', '\u{202e}']
                    [rng.gen_range(0..10)];
                let to = rng.gen_range(0..=s.len());
                s.insert(to, c);
            }
        }
        // Issue 32's families: a library function nested around the call limit and far
        // past it (each function: the symbolic passes cost differ by function).
        11 => {
            let text: String = s.iter().collect();
            if let Some((i, len)) = a_number(&text, rng) {
                let (f, arity) =
                    gpm_ir::MATH_FUNCTIONS[rng.gen_range(0..gpm_ir::MATH_FUNCTIONS.len())];
                let times = [8, 31, 32, 33, 250][rng.gen_range(0..5)];
                let num = &text[i..i + len];
                let extra = ", 1".repeat(arity.saturating_sub(1));
                let deep = format!(
                    "{}{num}{}",
                    format!("{f}(").repeat(times),
                    format!("{extra})").repeat(times)
                );
                return format!("{}{deep}{}", &text[..i], &text[i + len..]).into_bytes();
            }
        }
        // An integer literal far beyond any size (`vector[1000000000]`, `inducing = 2^32`).
        12 => {
            let text: String = s.iter().collect();
            if let Some((i, len)) = a_number(&text, rng) {
                let new = HUGE_SIZES[rng.gen_range(0..HUGE_SIZES.len())];
                return format!("{}{}{}", &text[..i], new, &text[i + len..]).into_bytes();
            }
        }
        // Many declarations, each with its own name (a repeated line is one name many times).
        13 => {
            let text: String = s.iter().collect();
            if let Some(k) = text.find("latent {").or_else(|| text.find("data {")) {
                let at = k + text[k..].find('{').unwrap_or(0) + 1;
                let n = [1_000, 10_000, 40_000][rng.gen_range(0..3)];
                let decls: String = if text[k..].starts_with("latent") {
                    (0..n)
                        .map(|j| format!(" z{j} : real ~ normal(0, 1);"))
                        .collect()
                } else {
                    (0..n).map(|j| format!(" d{j} : real;")).collect()
                };
                return format!("{}{decls}{}", &text[..at], &text[at..]).into_bytes();
            }
        }
        // Bytes that are not UTF-8.
        _ => {
            let mut b: Vec<u8> = s.iter().collect::<String>().into_bytes();
            for _ in 0..rng.gen_range(1..8) {
                let to = rng.gen_range(0..=b.len());
                b.insert(to, rng.gen_range(0x80..=0xff));
            }
            return b;
        }
    }
    s.into_iter().collect::<String>().into_bytes()
}

/// A numeric literal of `text` at random: its byte offset and length.
fn a_number(text: &str, rng: &mut impl Rng) -> Option<(usize, usize)> {
    let starts: Vec<usize> = text
        .char_indices()
        .filter(|(i, c)| {
            c.is_ascii_digit()
                && !text[..*i]
                    .chars()
                    .last()
                    .is_some_and(|p| p.is_ascii_alphanumeric() || p == '_' || p == '.')
        })
        .map(|(i, _)| i)
        .collect();
    let &i = starts.get(rng.gen_range(0..starts.len().max(1)))?;
    let len = text[i..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e'))
        .unwrap_or(text.len() - i);
    Some((i, len))
}

/// Run `gpmc args…` under the memory limit; its exit code, or a description of how it ended
/// badly (killed by a signal, out of time).
fn run(args: &[&str], limit: Duration) -> Result<i32, String> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpmc"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env("RUST_BACKTRACE", "0");
    // SAFETY: setrlimit is async-signal-safe, and the closure touches nothing else.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY_LIMIT as libc::rlim_t,
                rlim_max: MEMORY_LIMIT as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return match status.code() {
                Some(c) => Ok(c),
                None => Err(format!("killed by signal {:?}", status.signal())),
            };
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Fuzz `gpmc check` over `cases` mutants (1 to 3 mutations each) from the seed.
fn fuzz_check(seed: u64, cases: usize, json: bool) {
    let corpus = corpus();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let dir = tempdir(&format!("check-{seed}"));
    let path = dir.join("case.gpm");
    let mut failures = Vec::new();
    let t0 = Instant::now();
    for case in 0..cases {
        let base = &corpus[rng.gen_range(0..corpus.len())];
        let mut text = mutate(base, &mut rng);
        for _ in 0..rng.gen_range(0..3) {
            let s = String::from_utf8_lossy(&text).to_string();
            text = mutate(&s, &mut rng);
        }
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&text))
            .unwrap();
        let p = path.to_str().unwrap();
        let args: Vec<&str> = if json {
            vec!["check", p, "--format", "json"]
        } else {
            vec!["check", p]
        };
        match run(&args, Duration::from_secs(10)) {
            Ok(0..=2) => {}
            other => {
                let keep = dir.join(format!("failure-{case}.gpm"));
                std::fs::write(&keep, &text).unwrap();
                failures.push(format!(
                    "case {case}: {other:?} (input kept in {})",
                    keep.display()
                ));
            }
        }
    }
    eprintln!(
        "fuzzed `gpmc check{}` with {cases} cases in {:.1} s",
        if json { " --format json" } else { "" },
        t0.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpmc-fuzz-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The number of cases: `default` in the test suite, `GPMC_FUZZ_CASES` for a long run (and
/// `GPMC_FUZZ_SEED` for another stream of cases).
fn cases(default: usize) -> usize {
    std::env::var("GPMC_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seed(default: u64) -> u64 {
    std::env::var("GPMC_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(default, |s| default ^ s.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

#[test]
fn check_survives_mutated_models() {
    fuzz_check(seed(0x18), cases(800), false);
}

#[test]
fn check_json_survives_mutated_models() {
    fuzz_check(seed(0x1818), cases(400), true);
}

/// Devices and FIFOs as the model or the data: an error or a result, never a hang or a
/// memory blow-up (a FIFO is fed by a writer that streams a bounded, broken text).
#[test]
fn devices_and_fifos_as_paths_end_with_an_error() {
    let dir = tempdir("devices");
    let model = root().join("models/gp_classification.gpm");
    let out = dir.join("out");
    let (m, o) = (model.to_str().unwrap(), out.to_str().unwrap());
    for dev in ["/dev/zero", "/dev/null", "/dev/urandom"] {
        let data = root().join("models/gp_classification.data.json");
        let d = data.to_str().unwrap();
        for args in [
            vec!["check", dev],
            vec!["infer", m, "--data", dev, "--output", o, "--quiet"],
            // Initial values are read within the data files' limits (/dev/zero grew memory
            // without end).
            vec![
                "infer", m, "--data", d, "--init", dev, "--output", o, "--quiet",
            ],
        ] {
            let code = run(&args, Duration::from_secs(20));
            assert!(matches!(code, Ok(1 | 2)), "{args:?}: {code:?}");
        }
    }
    let fifo = dir.join("data.csv");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) {
                let _ = f.write_all(b"X.1,X.2,y\n");
                for _ in 0..200_000 {
                    if f.write_all(b"0.5,0.25,1\n0.1,").is_err() {
                        break;
                    }
                }
            }
        })
    };
    let code = run(
        &[
            "infer",
            m,
            "--data",
            fifo.to_str().unwrap(),
            "--output",
            o,
            "--quiet",
        ],
        Duration::from_secs(30),
    );
    let _ = writer.join();
    assert!(matches!(code, Ok(1 | 2)), "FIFO: {code:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `gpmc infer` on the example models with one number (a hyperparameter, a constant) made
/// extreme, and on their data with one value made extreme, a size zeroed, a key dropped.
#[test]
fn infer_survives_extreme_numbers_and_data() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x1802);
    let models: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("models"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "gpm"))
            .collect();
        v.sort();
        v
    };
    let dir = tempdir("infer");
    let mut failures = Vec::new();
    for case in 0..40 {
        let model = &models[rng.gen_range(0..models.len())];
        let data_path = model.with_extension("data.json");
        let src = std::fs::read_to_string(model).unwrap();
        let mut data: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&data_path).unwrap()).unwrap();
        let text = if case % 2 == 0 {
            // An extreme number in the model.
            let mut t = src.clone();
            for _ in 0..10 {
                let m = String::from_utf8(mutate(&src, &mut rng)).unwrap_or_default();
                if m.len() < src.len() + 8 && m != src {
                    t = m;
                    break;
                }
            }
            t
        } else {
            src.clone()
        };
        if case % 2 == 1 {
            mutate_data(&mut data, &mut rng);
        }
        let mpath = dir.join("case.gpm");
        let dpath = dir.join("case.data.json");
        std::fs::write(&mpath, &text).unwrap();
        std::fs::write(&dpath, data.to_string()).unwrap();
        let out = dir.join("out");
        // Every third case predicts at test inputs of another shape (a column dropped from
        // each matrix, sizes as given): refused, never predicted from (issue 32).
        let tpath = dir.join("case.test.json");
        let mut test = serde_json::from_str::<serde_json::Value>(
            &std::fs::read_to_string(model.with_extension("test.json")).unwrap_or_default(),
        )
        .unwrap_or(serde_json::Value::Null);
        if let Some(map) = test.as_object_mut() {
            for v in map.values_mut() {
                for row in v.as_array_mut().into_iter().flatten() {
                    if let Some(r) = row.as_array_mut() {
                        r.pop();
                    }
                }
            }
        }
        std::fs::write(&tpath, test.to_string()).unwrap();
        let mut args = vec![
            "infer",
            mpath.to_str().unwrap(),
            "--data",
            dpath.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--quiet",
            "--chains",
            "1",
            "--draws",
            "5",
            "--warmup",
            "5",
        ];
        if case % 3 == 2 && test.is_object() {
            args.extend(["--predict", tpath.to_str().unwrap()]);
        }
        match run(&args, Duration::from_secs(60)) {
            Ok(0..=2) => {}
            other => {
                let keep = dir.join(format!("failure-{case}"));
                std::fs::create_dir_all(&keep).unwrap();
                std::fs::write(keep.join("model.gpm"), &text).unwrap();
                std::fs::write(keep.join("data.json"), data.to_string()).unwrap();
                failures.push(format!(
                    "case {case} ({}): {other:?} (kept in {})",
                    model.display(),
                    keep.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One change to a data object: a value made extreme, a size zeroed, a key dropped, a label
/// out of range, a value turned into a string.
fn mutate_data(v: &mut serde_json::Value, rng: &mut impl Rng) {
    let serde_json::Value::Object(map) = v else {
        return;
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    let key = &keys[rng.gen_range(0..keys.len())];
    let extreme = [1e300, -1e300, 1e200, 1e18, 0.0, -1.0, 1e-300, 7.0, 3.5][rng.gen_range(0..9)];
    match rng.gen_range(0..4) {
        0 => {
            map.remove(key);
        }
        1 => {
            map.insert(key.clone(), serde_json::json!("NaN"));
        }
        _ => {
            // A path of random indices down the nested arrays, then the leaf replaced.
            let mut path = Vec::new();
            let mut cell = &map[key.as_str()];
            while let Some(a) = cell.as_array().filter(|a| !a.is_empty()) {
                let k = rng.gen_range(0..a.len());
                path.push(k);
                cell = &a[k];
            }
            let mut slot = map.get_mut(key.as_str()).unwrap();
            for k in path {
                slot = &mut slot[k];
            }
            *slot = serde_json::json!(extreme);
        }
    }
}
