//! Issue 18's reproducers, one by one: each input that crashed, hung or exhausted gpmc now gives
//! a result or a clear error, quickly. Each runs the binary as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model_text(name: &str) -> String {
    std::fs::read_to_string(root().join("models").join(name)).unwrap()
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpmc-hardening-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

thread_local! {
    /// An address-space limit for the children this test's thread runs ([`limit_children`]).
    static AS_LIMIT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// From now on, this test's children run under an address-space limit of `bytes`
/// (`RLIMIT_AS`): an allocation beyond it fails, and the child aborts instead of exiting
/// with the error the test expects. (A child's peak RSS from `getrusage` or `wait4` is no
/// measure here: on Linux it starts from the peak of this test process, which holds every
/// test of the suite.)
fn limit_children(bytes: u64) {
    AS_LIMIT.with(|l| l.set(Some(bytes)));
}

/// Run gpmc; its output and how long it took.
fn gpmc(args: &[&str]) -> (Output, Duration) {
    let t0 = Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpmc"));
    command.args(args).env("RUST_BACKTRACE", "0");
    if let Some(bytes) = AS_LIMIT.with(|l| l.get()) {
        use std::os::unix::process::CommandExt;
        let limit = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: bytes,
        };
        // SAFETY: setrlimit(2) is async-signal-safe, as a pre_exec closure must be.
        unsafe {
            command.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    let out = command.output().unwrap();
    (out, t0.elapsed())
}

/// The arguments of `gpmc infer MODEL --data DATA --output OUT --quiet EXTRA…`.
fn infer_args(model: &Path, data: &Path, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "infer".into(),
        model.display().to_string(),
        "--data".into(),
        data.display().to_string(),
        "--output".into(),
        out.display().to_string(),
        "--quiet".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Run `gpmc infer` (see [`infer_args`]).
fn infer(model: &Path, data: &Path, out: &Path, extra: &[&str]) -> (Output, Duration) {
    let args = infer_args(model, data, out, extra);
    gpmc(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// `gpmc check` on a text: exit code, stdout, stderr.
fn check(tag: &str, src: &str, json: bool) -> (i32, String, String) {
    let dir = tempdir(tag);
    let path = dir.join("m.gpm");
    std::fs::write(&path, src).unwrap();
    let p = path.to_str().unwrap();
    let args: Vec<&str> = if json {
        vec!["check", p, "--format", "json"]
    } else {
        vec!["check", p]
    };
    let (out, t) = gpmc(&args);
    assert!(t < Duration::from_secs(20), "{tag}: {t:?}");
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

#[test]
fn deep_nesting_is_a_diagnostic_not_a_stack_overflow() {
    let base = model_text("gp_classification.gpm");
    let deep = |inner: String| base.replace("learn(1.0)", &format!("learn({inner})"));
    for (tag, src) in [
        (
            "parens",
            deep(format!("{}2.0{}", "(".repeat(7_000), ")".repeat(7_000))),
        ),
        (
            "parens45k",
            deep(format!("{}2.0{}", "(".repeat(45_000), ")".repeat(45_000))),
        ),
        ("minus", deep(format!("{}1.0", "-".repeat(12_000)))),
        ("power", deep(format!("{}1.0", "1^".repeat(12_000)))),
        ("sum", deep(format!("{}1.0", "1+".repeat(131_000)))),
    ] {
        for json in [false, true] {
            let (code, stdout, stderr) = check(tag, &src, json);
            assert_eq!(code, 1, "{tag}: {stderr}");
            let said = if json { &stdout } else { &stderr };
            assert!(
                said.contains("nested more than 256"),
                "{tag}: {}",
                &said[..said.len().min(500)]
            );
            // The message shows a window of the line, not 500 KB of brackets.
            assert!(
                said.len() < 20_000,
                "{tag}: {} bytes of diagnostics",
                said.len()
            );
        }
    }
    // Nesting a real model might use is fine.
    let ok = deep(format!("{}2.0{}", "(".repeat(100), ")".repeat(100)));
    assert_eq!(check("ok", &ok, false).0, 0);
}

#[test]
fn an_error_past_column_65536_is_rendered() {
    let src = model_text("gp_classification.gpm")
        .replace("learn(1.0)", &format!("learn({}zz)", " ".repeat(70_000)));
    let (code, _, stderr) = check("col", &src, false);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("must be a numeric constant"), "{stderr}");
    assert!(stderr.contains("line 11"), "{stderr}");
}

#[test]
fn a_byte_order_mark_is_whitespace() {
    let src = format!("\u{feff}{}", model_text("gp_classification.gpm"));
    let (code, _, stderr) = check("bom", &src, false);
    assert_eq!(code, 0, "{stderr}");
    // Initial values are read as the data files are, past a byte-order mark.
    let dir = tempdir("bom-init");
    let init = dir.join("init.json");
    std::fs::write(&init, "\u{feff}{\"b\": 0.5}").unwrap();
    let model = root().join("models/logistic_regression.gpm");
    let data = root().join("models/logistic_regression.data.json");
    let extra = [
        "--init",
        init.to_str().unwrap(),
        "--draws",
        "5",
        "--warmup",
        "5",
    ];
    let (o, _) = infer(&model, &data, &dir.join("out"), &extra);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn many_errors_are_counted_not_all_rendered() {
    let src =
        model_text("gp_classification.gpm").replace("  N : int;\n", &"  N : int;\n".repeat(4_000));
    let (code, _, stderr) = check("dups", &src, false);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("and 3949 more errors"),
        "{}",
        &stderr[stderr.len().saturating_sub(400)..]
    );
    assert!(stderr.len() < 200_000, "{} bytes", stderr.len());
    let (code, stdout, _) = check("dups-json", &src, true);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 3_999);
}

/// The augmentation line of `gpmc check` for a model's only factor.
fn augmentation(stdout: &str) -> String {
    stdout
        .lines()
        .skip_while(|l| !l.contains("augmentation:"))
        .take(4)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn count_likelihoods_are_certified_at_any_rate_or_refused_with_a_reason() {
    let poisson = model_text("poisson_gp.gpm");
    let hetero = model_text("heteroscedastic_gp.gpm");
    for (tag, src, certified) in [
        ("p3e4", poisson.replace("10.0;", "3e4;"), true),
        ("p1e6", poisson.replace("10.0;", "1e6;"), true),
        ("p1e7", poisson.replace("10.0;", "1e7;"), true),
        ("p1e8", poisson.replace("10.0;", "1e8;"), true),
        ("p1e9", poisson.replace("10.0;", "1e9;"), true),
        ("p1e12", poisson.replace("10.0;", "1e12;"), false),
        ("p1e18", poisson.replace("10.0;", "1e18;"), false),
        ("p1e300", poisson.replace("10.0;", "1e300;"), false),
        ("h1e6", hetero.replace("20.0;", "1e6;"), true),
        ("h1e18", hetero.replace("20.0;", "1e18;"), false),
    ] {
        let t0 = Instant::now();
        let (code, stdout, stderr) = check(tag, &src, false);
        assert_eq!(code, 0, "{tag}: {stderr}");
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{tag}: {:?}",
            t0.elapsed()
        );
        let aug = augmentation(&stdout);
        if certified {
            assert!(!aug.contains("no augmentation"), "{tag}: {aug}");
        } else {
            // A reason, not "internal error … please report".
            assert!(
                aug.contains("not certified:") && aug.contains("double precision"),
                "{tag}: {aug}"
            );
        }
    }
}

#[test]
fn student_t_is_certified_at_extreme_degrees_of_freedom_and_scales() {
    let t = model_text("student_t_regression.gpm");
    for (tag, src) in [
        (
            "nu0.01",
            t.replace("nu : real in 0.. = 4.0", "nu : real in 0.. = 0.01"),
        ),
        (
            "nu1e5",
            t.replace("nu : real in 0.. = 4.0", "nu : real in 0.. = 1e5"),
        ),
        (
            "nu1e8",
            t.replace("nu : real in 0.. = 4.0", "nu : real in 0.. = 1e8"),
        ),
        (
            "sigma1e8",
            t.replace("sigma : real in 0.. = 0.3", "sigma : real in 0.. = 1e8"),
        ),
    ] {
        let (code, stdout, stderr) = check(tag, &src, false);
        assert_eq!(code, 0, "{tag}: {stderr}");
        let aug = augmentation(&stdout);
        assert!(!aug.contains("no augmentation"), "{tag}: {aug}");
    }
}

#[test]
fn two_hundred_categorical_statements_certify_quickly() {
    let m = model_text("multiclass_gp.gpm").replace(
        "  y ~ categorical_logistic_softmax(F);\n",
        &"  y ~ categorical_logistic_softmax(F);\n".repeat(200),
    );
    let t0 = Instant::now();
    let (code, _, stderr) = check("cat200", &m, false);
    assert_eq!(code, 0, "{stderr}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
}

#[test]
fn huge_poisson_counts_are_sampled_quickly() {
    let dir = tempdir("counts");
    let mut d: serde_json::Value =
        serde_json::from_str(&model_text("poisson_gp.data.json")).unwrap();
    for count in [1e7, 1e8] {
        d["y"][0] = serde_json::json!(count as u64);
        let data = dir.join("d.json");
        std::fs::write(&data, d.to_string()).unwrap();
        let out = dir.join("out");
        let (o, t) = infer(
            &root().join("models/poisson_gp.gpm"),
            &data,
            &out,
            &["--draws", "100", "--warmup", "100"],
        );
        assert!(o.status.success(), "{count}: {}", text(&o.stderr));
        assert!(t < Duration::from_secs(20), "count {count}: {t:?}");
    }
}

fn infer_gp_classification(extra: &[&str], out: &Path) -> (i32, String) {
    let (o, t) = infer(
        &root().join("models/gp_classification.gpm"),
        &root().join("models/gp_classification.data.json"),
        out,
        extra,
    );
    assert!(t < Duration::from_secs(60), "{extra:?}: {t:?}");
    (o.status.code().unwrap_or(-1), text(&o.stderr))
}

#[test]
fn counts_on_the_command_line_are_bounded() {
    let dir = tempdir("cli");
    let out = dir.join("out");
    for (args, says) in [
        (
            vec!["--draws", "18446744073709551615"],
            "--draws must be at most",
        ),
        (vec!["--draws", "1000000000000"], "--draws must be at most"),
        (vec!["--chains", "100000"], "--chains must be at most"),
        (vec!["--thin", "100000000"], "--thin must be at most"),
        (
            vec!["--method", "svi", "--hyper-rate", "inf"],
            "--hyper-rate must be a finite positive",
        ),
    ] {
        let (code, stderr) = infer_gp_classification(&args, &out);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?} wrote output");
    }
    // Within the bounds but beyond the disk: refused before sampling, nothing written.
    let (code, stderr) =
        infer_gp_classification(&["--draws", "1000000000", "--chains", "1024"], &out);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("free"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn a_second_run_into_the_same_directory_is_refused_and_leftovers_are_cleaned() {
    let dir = tempdir("lock");
    let out = dir.join("out");
    // A killed run's staging directory (its pid no longer exists) is removed by the next run.
    let stale = dir.join(".out.partial-4194303");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("chain-1.csv"), "x").unwrap();
    let mut first = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .args(infer_args(
            &root().join("models/gp_classification.gpm"),
            &root().join("models/gp_classification.data.json"),
            &out,
            &["--draws", "20000"],
        ))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first run holds the lock (its staging directory exists).
    let t0 = Instant::now();
    let staged = |d: &Path| {
        std::fs::read_dir(d).unwrap().flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!(".out.partial-{}", first.id()))
        })
    };
    while !staged(&dir) && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, stderr) = infer_gp_classification(&["--draws", "10"], &out);
    // Issue 32: through a symbolic link to the directory (not there yet: the first run is
    // still staging it), the second writer is refused too.
    let alias = dir.join("alias");
    std::os::unix::fs::symlink("out", &alias).unwrap();
    let (alias_code, alias_stderr) = infer_gp_classification(&["--draws", "10"], &alias);
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("another gpmc run"), "{stderr}");
    assert_eq!(alias_code, 1, "{alias_stderr}");
    assert!(alias_stderr.contains("another gpmc run"), "{alias_stderr}");
    assert!(
        !stale.exists(),
        "the stale staging directory is still there"
    );
    // With the first run gone (killed), the lock is free again.
    let (code, stderr) = infer_gp_classification(&["--draws", "10"], &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.join("summary.json").is_file());
}

/// `gpmc infer` of the GP classifier on a data file; exit code and stderr.
fn infer_with_data(tag: &str, file: &str, content: &[u8]) -> (i32, String) {
    let dir = tempdir(tag);
    let data = dir.join(file);
    std::fs::write(&data, content).unwrap();
    let out = dir.join("out");
    let (o, _) = infer(
        &root().join("models/gp_classification.gpm"),
        &data,
        &out,
        &["--draws", "10", "--warmup", "10"],
    );
    assert!(
        !out.exists() || o.status.success(),
        "{tag}: output written on failure"
    );
    (o.status.code().unwrap_or(-1), text(&o.stderr))
}

#[test]
fn bad_data_is_named() {
    let d: serde_json::Value =
        serde_json::from_str(&model_text("gp_classification.data.json")).unwrap();
    let rows = |cols: &str, f: &dyn Fn(&[serde_json::Value], i64) -> String| {
        let mut s = format!("{cols}\n");
        for (x, y) in d["X"]
            .as_array()
            .unwrap()
            .iter()
            .zip(d["y"].as_array().unwrap())
        {
            s.push_str(&f(x.as_array().unwrap(), y.as_i64().unwrap()));
            s.push('\n');
        }
        s
    };
    let gap = rows("X.1,X.3,y", &|x, y| format!("{},{},{y}", x[0], x[1]));
    let dup = rows("X.1,X.2,y,y", &|x, y| {
        format!("{},{},{y},{}", x[0], x[1], -y)
    });
    let mut big = d.clone();
    big["X"][0][0] = serde_json::json!(1e300);
    let zero = serde_json::json!({"N": 0, "D": 2, "X": [], "y": []});
    // The data fuzzer's find (a capacity-overflow panic before the fix): a size of 3·10⁵⁸.
    let huge_size =
        r#"{"D":29999999999999999999999999999999999999999999999999999999999,"X":[[3]],"y":[1]}"#;
    let binary: Vec<u8> = (0..=255u8).cycle().take(1024).collect();
    for (tag, file, content, says) in [
        ("gap", "d.csv", gap.into_bytes(), "`X.2` is missing"),
        ("dup", "d.csv", dup.into_bytes(), "names `y` twice"),
        ("empty", "d.csv", vec![], "is empty"),
        ("binary", "d.csv", binary, "is not a CSV data file"),
        (
            "big",
            "d.json",
            big.to_string().into_bytes(),
            "beyond ±1e150",
        ),
        (
            "zero",
            "d.json",
            zero.to_string().into_bytes(),
            "the size `N` is 0",
        ),
        (
            "huge size",
            "d.json",
            huge_size.as_bytes().to_vec(),
            "the size `D` is",
        ),
    ] {
        let (code, stderr) = infer_with_data(tag, file, &content);
        assert_eq!(code, 1, "{tag}: {stderr}");
        assert!(stderr.contains(says), "{tag}: {stderr}");
    }
}

#[test]
fn an_unreadable_model_is_a_usage_error_without_json() {
    let (o, _) = gpmc(&["check", "/nonexistent/missing.gpm", "--format", "json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("cannot read"));
}

/// The child's exit status, polled with a deadline after `signal` was sent at `signalled`: a
/// run that ignores the signal is killed and the test fails.
fn exit_within(
    child: &mut std::process::Child,
    signalled: Instant,
    deadline: Duration,
    signal: &str,
) -> std::process::ExitStatus {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if signalled.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running {deadline:?} after {signal}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Issue 32: SIGINT during type-II maximum likelihood (`learn()`) on a 1 500-point GP
/// classifier ends the run within a second, exit 130, with no output written (it ran on for
/// more than 400 s: only a second signal stopped it).
#[test]
fn sigint_during_learn_ends_the_run_within_a_second() {
    use std::io::BufRead;
    let dir = tempdir("sigint-learn");
    // 1 500 points in two dimensions, labels from a smooth boundary (a fixed LCG).
    let mut state: u64 = 12345;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64) / ((1u64 << 53) as f64) * 2.0 - 1.0
    };
    let n = 1500;
    let rows: Vec<[f64; 2]> = (0..n).map(|_| [2.0 * uniform(), 2.0 * uniform()]).collect();
    let labels: Vec<i32> = rows
        .iter()
        .map(|x| {
            if (2.0 * x[0]).sin() + x[1] + 0.3 * uniform() > 0.0 {
                1
            } else {
                -1
            }
        })
        .collect();
    let data = dir.join("big.json");
    std::fs::write(
        &data,
        serde_json::json!({"N": n, "D": 2, "X": rows, "y": labels}).to_string(),
    )
    .unwrap();
    let out = dir.join("out");
    // Not quiet: the test waits for the progress line of type-II ML.
    let mut args = infer_args(
        &root().join("models/gp_classification.gpm"),
        &data,
        &out,
        &[],
    );
    args.retain(|a| a != "--quiet");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .args(args)
        .env("GPMC_PROGRESS_SECONDS", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for type-II ML to be under way (its first evaluation reported).
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let t0 = Instant::now();
    while !line.contains("type-II ML: ELBO evaluation") {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 || t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("type-II ML never reported");
        }
    }
    // SAFETY: kill(2) on the child's pid, which has not been waited for yet.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let signalled = Instant::now();
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        rest
    });
    let status = exit_within(&mut child, signalled, Duration::from_secs(5), "SIGINT");
    let took = signalled.elapsed();
    let rest = reader.join().unwrap();
    assert!(
        took < Duration::from_secs(1),
        "exited {took:?} after SIGINT"
    );
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(
        rest.contains("type-II maximum likelihood (learn) was interrupted"),
        "{rest}"
    );
    assert!(!out.exists(), "no output is written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 50: a signal stops a run even inside a step with no stop point (a Stan program's own
/// `while` loop that never ends: SIGTERM printed "stopping" and the run went on). The
/// watchdog ends it `GPMC_STOP_GRACE_SECONDS` after the signal with SIGTERM's exit code, 143,
/// and the output directory as it was.
#[test]
fn sigterm_ends_a_run_stuck_in_a_programs_own_loop() {
    let dir = tempdir("sigterm-loop");
    let model = dir.join("hang.stan");
    std::fs::write(
        &model,
        "data { int N; vector[N] y; }
parameters { real mu; }
model {
  real s = 0;
  while (s < 1) { s = s * 1.0; }
  y ~ normal(mu, 1);
}",
    )
    .unwrap();
    let data = dir.join("d.json");
    std::fs::write(&data, r#"{"N": 3, "y": [1, 2, 3]}"#).unwrap();
    let out = dir.join("out");
    let args = infer_args(&model, &data, &out, &[]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .args(args)
        .env("GPMC_STOP_GRACE_SECONDS", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on the child's pid, which has not been waited for yet.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let signalled = Instant::now();
    let status = exit_within(&mut child, signalled, Duration::from_secs(20), "SIGTERM");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut rest);
    assert_eq!(status.code(), Some(143), "{rest}");
    assert!(rest.contains("did not stop within 1 s"), "{rest}");
    assert!(!out.exists(), "no output is written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// stderr with miette's wrapped lines joined again (`\n  │ ` between the words of a line).
fn flat(b: &[u8]) -> String {
    let t = text(b);
    let mut out = String::new();
    for line in t.lines() {
        match line.trim_start().strip_prefix('│') {
            Some(rest) => {
                out.push(' ');
                out.push_str(rest.trim());
            }
            None => {
                out.push('\n');
                out.push_str(line);
            }
        }
    }
    out
}

/// Issue 32: sizes that cannot fit are refused up front with the estimate and what to do,
/// never an abort in the allocator (exit 134): a billion inducing points, a full GP of 10⁶
/// points from a CSV (Gibbs and CAVI), 65 536 particles.
#[test]
fn sizes_that_cannot_fit_are_refused_before_anything_is_allocated() {
    // Each refusal below exits 1 within 1 GiB of address space (a whole run of the example
    // takes under 512 MiB): an allocation of the sizes refused would abort instead.
    limit_children(1 << 30);
    let dir = tempdir("memory");
    let sparse = model_text("sparse_gp_classification.gpm")
        .replace("inducing = 50", "inducing = 4294967296");
    std::fs::write(dir.join("inducing.gpm"), sparse).unwrap();
    let (o, took) = infer(
        &dir.join("inducing.gpm"),
        &root().join("models/sparse_gp_classification.data.json"),
        &dir.join("out"),
        &["--method", "cavi"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", flat(&o.stderr));
    assert!(
        flat(&o.stderr).contains("inducing = 4294967296 but the data have 4000 points"),
        "{}",
        flat(&o.stderr)
    );
    assert!(took < Duration::from_secs(10));
    // A full GP over a million rows read from CSV.
    let mut csv = String::from("x,y\n");
    for i in 0..1_000_000u64 {
        csv.push_str(&format!("{},{}\n", (i % 9973) as f64 / 997.0, i % 5));
    }
    std::fs::write(dir.join("big.csv"), csv).unwrap();
    for method in ["gibbs", "cavi"] {
        let (o, _) = infer(
            &root().join("models/poisson_gp.gpm"),
            &dir.join("big.csv"),
            &dir.join("out"),
            &["--method", method],
        );
        let err = flat(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{method}: {err}");
        assert!(
            err.contains("a full GP `f` of 1000000 points would need about"),
            "{err}"
        );
        assert!(err.contains("inducing = M"), "{err}");
    }
    let (o, _) = infer(
        &root().join("models/gp_classification.gpm"),
        &root().join("models/gp_classification.data.json"),
        &dir.join("out"),
        &["--method", "gpf", "--particles", "65536"],
    );
    let err = flat(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("particle flow with 65536 particles would need about"),
        "{err}"
    );
    assert!(!dir.join("out").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 32: a data file, device or stream that never ends is cut off while it is read — a
/// 2 GB sparse CSV (one 2 GB line of zero bytes), `/dev/zero` as JSON, a JSON string that never
/// closes — with an error, quickly and with little memory.
#[test]
fn data_that_never_ends_is_cut_off_while_read() {
    // Read within 1 GiB of address space, or the child aborts (see `limit_children`).
    limit_children(1 << 30);
    let dir = tempdir("endless");
    let sparse = dir.join("sparse.csv");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    let unclosed = dir.join("string.json");
    let mut text = String::from("{\"N\": \"");
    text.push_str(&"a".repeat(3 << 20));
    std::fs::write(&unclosed, text).unwrap();
    let model = root().join("models/gp_classification.gpm");
    for data in [sparse.as_path(), Path::new("/dev/zero"), unclosed.as_path()] {
        let (o, took) = infer(&model, data, &dir.join("out"), &[]);
        let err = flat(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}: {err}", data.display());
        assert!(
            took < Duration::from_secs(10),
            "{}: {took:?}",
            data.display()
        );
    }
    let (o, _) = infer(&model, &sparse, &dir.join("out"), &[]);
    assert!(
        flat(&o.stderr).contains("a CSV line longer than 64 MB"),
        "{}",
        flat(&o.stderr)
    );
    let (o, _) = infer(&model, &unclosed, &dir.join("out"), &[]);
    assert!(
        flat(&o.stderr).contains("a JSON value longer than 1 MB"),
        "{}",
        flat(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 32: costs a model's text controls stay near linear — 64 000 declarations (one
/// diagnostic each) in well under the 44 s they took, calls nested 250 deep refused at once
/// (35 s and 3.7 GB before), a literal class count of a billion refused.
#[test]
fn costs_the_model_text_controls_stay_near_linear() {
    let mut src =
        String::from("data { N : int; y : vector[N]; }\nlatent { f : vector[N] ~ normal(0, 1); ");
    for k in 0..64_000 {
        src.push_str(&format!("z{k} : real ~ normal(0, 1); "));
    }
    src.push_str("}\nmodel { y ~ normal(f, 1); }\n");
    let t0 = Instant::now();
    let (code, _, err) = check("decls", &src, false);
    assert_eq!(code, 1);
    assert!(
        err.contains("is not used by any likelihood"),
        "{}",
        &err[..err.len().min(500)]
    );
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    // The fuzz find of its first long run: 40 000 declarations on one 1.2 MB line, then 1 600
    // repeated blocks, whose diagnostics drew the long line as context, a character a write.
    let mut long = String::from("data { N : int; y : int[N] in {-1, 1}; }\nlatent {");
    for k in 0..40_000 {
        long.push_str(&format!(" z{k} : real ~ normal(0, 1);"));
    }
    long.push_str(" }\n");
    long.push_str(&"model { y ~ bernoulli_logit(f); }\n".repeat(1_600));
    let t0 = Instant::now();
    let (code, _, err) = check("long-line", &long, false);
    assert_eq!(code, 1);
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert!(err.len() < 200_000, "{} bytes of diagnostics", err.len());
    let deep = format!(
        "data {{ N : int; y : int[N] in {{0, 1}}; }}\nlatent {{ f : vector[N] ~ normal(0, 1); }}\nmodel {{ for i in 1..N {{ y[i] ~ bernoulli_logit({}f[i]{}); }} }}\n",
        "logistic(".repeat(250),
        ")".repeat(250)
    );
    let t0 = Instant::now();
    let (code, _, err) = check("calls", &deep, false);
    assert_eq!(code, 1);
    assert!(
        err.contains("function calls nested more than 32 deep"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(2));
    let classes = "data { N : int; D : int; X : matrix[N, D]; y : int[N] in 1..1000000000; }\nlatent { F : matrix[N, 1000000000] ~ gp(X, sqexp(1.0)); }\nmodel { y ~ categorical_logistic_softmax(F); }\n";
    let t0 = Instant::now();
    let (code, _, err) = check("classes", classes, false);
    assert_eq!(code, 1);
    assert!(err.contains("at most 1000 are supported"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(2));
}

/// Found by issue 32's fuzz generators: a Gamma prior with a shape of 1.8·10¹⁹ (its
/// distribution function never finished) and `min` nested 31 deep (4.7 GB, still running
/// after a minute) are refused at once.
#[test]
fn fuzz_finds_of_issue_32_are_refused_at_once() {
    let gamma = "data { N : int; y : vector[N]; }\nhyper { tau : real in 0.. ~ gamma(shape = 18446744073709551616, rate = 1.0); }\nlatent { f : vector[N] ~ normal(0, 1); }\nmodel { y ~ normal(f, 1 / sqrt(tau)); }\n";
    let (code, _, err) = check("huge-shape", gamma, false);
    assert_eq!(code, 1);
    assert!(err.contains("shape parameters above"), "{err}");
    let nested = format!(
        "data {{ N : int; y : vector[N]; }}\nlatent {{ f : vector[N] ~ normal(0, 1); }}\nmodel {{ y ~ normal(f, {}1{}); }}\n",
        "min(".repeat(31),
        ", 1)".repeat(31)
    );
    let t0 = Instant::now();
    let (code, _, err) = check("min-nesting", &nested, false);
    assert_eq!(code, 1);
    assert!(
        err.contains("`min`/`max` nested more than 12 deep"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(2));
}

/// A fuzz find of the long run with seed 3: a Gamma prior with rate 1e308 panicked inside
/// statrs (`x · rate = ∞`); prior parameters beyond 10^±30 are refused.
#[test]
fn prior_parameters_beyond_any_scale_are_refused_not_a_panic() {
    for prior in [
        "gamma(shape = 2.0, rate = 1e308)",
        "normal(0, 1e-40)",
        "lognormal(1e31, 1)",
    ] {
        let src = format!(
            "data {{ N : int; y : vector[N]; }}\nhyper {{ tau : real in 0.. ~ {prior}; }}\nlatent {{ f : vector[N] ~ normal(0, 1); }}\nmodel {{ y ~ normal(f, 1 / sqrt(tau)); }}\n"
        );
        let (code, _, err) = check("extreme-prior", &src, false);
        assert_eq!(code, 1, "{prior}: {err}");
        assert!(
            err.contains("prior parameters are refused"),
            "{prior}: {err}"
        );
    }
}

/// Issue 50: a particle flow that does not converge says so — a warning on the terminal and in
/// summary.json, `converged: false`, with how far from stationary it ended — and exits 0 with
/// its q (it returned the prior's draw with `warnings: []`).
#[test]
fn an_unconverged_particle_flow_is_a_warning_everywhere() {
    let dir = tempdir("gpf-unconverged");
    let model = dir.join("m.gpm");
    std::fs::write(
        &model,
        "data { N : int; x : vector[N]; y : vector[N]; }
latent { w : real ~ normal(0, 1e30); }
model { y ~ normal(x * w, 1e-3); }",
    )
    .unwrap();
    let data = dir.join("d.json");
    std::fs::write(
        &data,
        r#"{"N": 4, "x": [0.5, -1.0, 1.5, 2.0], "y": [1.2, -2.6, 3.9, 4.8]}"#,
    )
    .unwrap();
    let out = dir.join("run");
    let (o, _) = infer(
        &model,
        &data,
        &out,
        &["--method", "gpf", "--particle-map", "affine"],
    );
    let err = text(&o.stderr) + &text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("without converging"), "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["converged"], false);
    let warnings = summary["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("without converging")),
        "{summary}"
    );
    assert!(summary["stationarity"]["mean_shift_sd"].as_f64().unwrap() > 0.0);
}
