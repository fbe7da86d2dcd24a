//! After the draws: pointwise log-likelihoods and replicated responses in the chain CSVs, output
//! directories replaced as a whole, options checked before any work, a closed stdout.

use crate::workflow_support;
use workflow_support::*;

/// `log_lik.i` is the normal density of `y_i` at the draw's `w`, `b`; `y_rep.i` has the
/// posterior predictive mean and variance of `y_i`.
#[test]
fn log_lik_and_y_rep_columns_follow_the_model() {
    let dir = setup("pointwise");
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --log-lik --ppc --draws 2000 --quiet --output out",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("d.json")).unwrap()).unwrap();
    let (x, y): (Vec<f64>, Vec<f64>) = (
        serde_json::from_value(data["x"].clone()).unwrap(),
        serde_json::from_value(data["y"].clone()).unwrap(),
    );
    let mut mu_draws = vec![vec![]; 12];
    let mut rep_draws = vec![vec![]; 12];
    for chain in 1..=4 {
        let (h, rows) = read_csv(&dir.join(format!("out/chain-{chain}.csv")));
        let col = |n: &str| h.iter().position(|c| c == n).unwrap();
        assert_eq!(h.iter().filter(|c| c.starts_with("log_lik.")).count(), 12);
        assert_eq!(h.iter().filter(|c| c.starts_with("y_rep.")).count(), 12);
        for r in &rows {
            let (w, b) = (r[col("w")], r[col("b")]);
            for i in 0..12 {
                let mu = w * x[i] + b;
                let z = (y[i] - mu) / 0.5;
                let exact = -0.5 * z * z - (0.5f64).ln() - 0.5 * (2.0 * std::f64::consts::PI).ln();
                let got = r[col(&format!("log_lik.{}", i + 1))];
                assert!(
                    (got - exact).abs() < 1e-7 * (1.0 + exact.abs()),
                    "{got} vs {exact}"
                );
                mu_draws[i].push(mu);
                rep_draws[i].push(r[col(&format!("y_rep.{}", i + 1))]);
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / (v.len() - 1) as f64
    };
    for i in 0..12 {
        // E y_rep = E μ; Var y_rep = σ² + Var μ (8000 draws: 5 standard errors).
        let (m, v) = (mean(&rep_draws[i]), var(&rep_draws[i]));
        let target_var = 0.25 + var(&mu_draws[i]);
        let n = rep_draws[i].len() as f64;
        assert!(
            (m - mean(&mu_draws[i])).abs() < 5.0 * (target_var / n).sqrt(),
            "y_rep.{i}: mean {m}"
        );
        assert!(
            (v / target_var - 1.0).abs() < 5.0 * (2.0 / n).sqrt(),
            "y_rep.{i}: variance {v} vs {target_var}"
        );
    }
    // The summary covers parameters only.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = summary["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lp__", "w", "b"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Asking for `y_rep` leaves the chains' draws unchanged (their own random stream).
#[test]
fn replicated_responses_do_not_change_the_draws() {
    let dir = setup("stream");
    let base = [
        "infer", "m.gpm", "--data", "d.json", "--draws", "50", "--quiet", "--output",
    ];
    assert!(gpmc(&dir, &[&base[..], &["plain"]].concat())
        .status
        .success());
    assert!(gpmc(&dir, &[&base[..], &["rep", "--ppc"]].concat())
        .status
        .success());
    let (h, plain) = read_csv(&dir.join("plain/chain-2.csv"));
    let (_, rep) = read_csv(&dir.join("rep/chain-2.csv"));
    for (a, b) in plain.iter().zip(&rep) {
        assert_eq!(a[..], b[..h.len()]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rerun replaces the output directory as a whole (no stale chain files); a run that fails
/// leaves the previous output as it was; a directory that is not a gpmc output is not touched.
#[test]
fn output_directories_are_replaced_whole_or_not_at_all() {
    let dir = setup("output");
    let run = |extra: &[&str]| {
        gpmc(
            &dir,
            &[
                &[
                    "infer", "m.gpm", "--data", "d.json", "--draws", "20", "--quiet", "--output",
                    "out",
                ][..],
                extra,
            ]
            .concat(),
        )
    };
    assert!(run(&["--chains", "6"]).status.success());
    assert!(dir.join("out/chain-6.csv").exists());
    assert!(run(&["--chains", "2"]).status.success());
    assert!(
        !dir.join("out/chain-3.csv").exists(),
        "a stale chain file was left"
    );
    let before = std::fs::read_to_string(dir.join("out/summary.json")).unwrap();
    // A bad test file fails before sampling; the previous output stays.
    std::fs::write(dir.join("bad.json"), "{\"N\": 2, \"x\": [1, \"two\"]}").unwrap();
    let o = run(&["--chains", "3", "--predict", "bad.json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out/summary.json")).unwrap(),
        before
    );
    assert!(!dir.join("out/chain-3.csv").exists());
    // Nothing half-written beside it.
    let stray: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with(".out"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
    // A directory of the user's own is refused, and kept.
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/notes.txt"), "keep").unwrap();
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --draws 20 --quiet --output mine",
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("was not made by gpmc"));
    assert!(dir.join("mine/notes.txt").exists());
    // Issue 32: a `summary.json` of the user's own does not make it ours (a thesis beside one
    // was lost when it did).
    std::fs::write(dir.join("mine/summary.json"), "{}").unwrap();
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --draws 20 --quiet --output mine",
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(dir.join("mine/notes.txt").exists());
    // A gpmc output is marked as such, and a rerun into it replaces it.
    assert!(dir.join("out/.gpmc-output").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Options are checked before any work: a flag of another method, a zero count, `--ppc` on a
/// density formula.
#[test]
fn options_are_checked_first() {
    let dir = setup("options");
    for (args, message) in [
        (
            &["--method", "cavi", "--chains", "2"][..],
            "--chains is an option of --method gibbs / nuts, not of --method cavi",
        ),
        (
            &["--method", "nuts", "--iterations", "5"][..],
            "--iterations is an option of --method svi / cavi / gpf, not of --method nuts",
        ),
        (
            &["--iterations", "50"][..],
            "--iterations is an option of --method svi / cavi / gpf, not of --method gibbs",
        ),
        (&["--draws", "0"][..], "--draws must be at least 1"),
        (
            &["--method", "nuts", "--adapt-delta", "1.5"][..],
            "--adapt-delta must be in (0, 1), got 1.5",
        ),
        (
            &["--method", "nuts", "--max-treedepth", "40"][..],
            "--max-treedepth must be from 1 to 30, got 40",
        ),
        (
            &["--adapt-delta", "0.95"][..],
            "--adapt-delta, --max-treedepth and --metric control NUTS; this model runs --method gibbs",
        ),
        (
            &["--method", "nuts", "--metric", "dense_e"][..],
            "--metric: unknown metric `dense_e`: use `diag`",
        ),
        (
            &["--metric", "low-rank"][..],
            "--adapt-delta, --max-treedepth and --metric control NUTS; this model runs --method gibbs",
        ),
        (
            &["--method", "svi", "--forgetting", "0.3"][..],
            "--forgetting must be in (0.5, 1]",
        ),
    ] {
        let o = gpmc(
            &dir,
            &[
                &["infer", "m.gpm", "--data", "d.json", "--output", "out"][..],
                args,
            ]
            .concat(),
        );
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!dir.join("out").exists());
    }
    std::fs::write(
        dir.join("formula.gpm"),
        MODEL.replace(
            "y ~ normal(w * x + b, 0.5);",
            "for i in 1..N { target += -2 * (y[i] - w * x[i] - b)^2; }",
        ),
    )
    .unwrap();
    let o = gpmc_line(&dir, "infer formula.gpm --data d.json --ppc --output out");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a density formula"));
    assert!(!dir.join("out").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `gpmc infer … | head -1`: a closed stdout ends nothing badly.
#[test]
fn a_closed_stdout_is_not_a_crash() {
    let dir = setup("pipe");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .current_dir(&dir)
        .args([
            "infer", "m.gpm", "--data", "d.json", "--draws", "50", "--quiet", "--output", "out",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "exit {:?}: {err}", o.status.code());
    assert!(!err.contains("panicked"), "{err}");
    assert!(dir.join("out/summary.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// With stderr not a terminal, long phases print plain progress lines (here one per event:
/// `GPMC_PROGRESS_SECONDS=0`); `--quiet` silences them.
#[test]
fn progress_lines_when_stderr_is_not_a_terminal() {
    let dir = setup("progress");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gpmc"))
            .current_dir(&dir)
            .env("GPMC_PROGRESS_SECONDS", "0")
            .args(
                [
                    &["infer", "m.gpm", "--data", "d.json", "--output", "out"][..],
                    args,
                ]
                .concat(),
            )
            .output()
            .unwrap()
    };
    let o = run(&["--draws", "50"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("gibbs: 1000/1000 sweeps (100 %)"), "{err}");
    let o = run(&["--method", "cavi"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CAVI: iteration 2 (at most 1000), ELBO"),
        "{err}"
    );
    let o = run(&["--method", "cavi", "--quiet"]);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Chains start from their own draws from the prior (here w, b ~ N(0, 1): moments over 4000
/// starts), or where `--init` puts them; bad initial values are refused before sampling.
#[test]
fn chains_start_dispersed_or_where_told() {
    use gpm_runtime::gibbs::{Init, Sampler};
    use rand::SeedableRng;
    let dir = setup("init");
    let c = gpmc::check("m", MODEL).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("d.json")).unwrap()).unwrap();
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let schedule = gpmc::infer::schedule(&c).unwrap();
    let (hv, _) = gpmc::infer::hyper_values(&c);
    let sampler = Sampler::new(schedule, &d, &hv).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let w: Vec<f64> = (0..4000)
        .map(|_| sampler.start(&mut rng).latents[0][0])
        .collect();
    let mean = w.iter().sum::<f64>() / 4000.0;
    let var = w.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 3999.0;
    assert!(
        mean.abs() < 5.0 / 4000f64.sqrt() && (var - 1.0).abs() < 0.12,
        "{mean} {var}"
    );
    let told = Sampler::new(schedule, &d, &hv)
        .unwrap()
        .with_init(Init {
            latents: vec![(gpm_schedule::LatentId(1), vec![2.5])],
        })
        .unwrap();
    assert_eq!(told.start(&mut rng).latents[1][0], 2.5);
    // From the command line.
    std::fs::write(dir.join("init.json"), r#"{"w": 0.3, "b": -1.0}"#).unwrap();
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --init init.json --draws 20 --quiet --output out",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (text, message) in [
        (
            r#"{"v": 1}"#,
            "`v` in the initial values is not a latent of the model",
        ),
        (
            r#"{"w": [1, 2]}"#,
            "the initial value of `w` does not have its declared shape",
        ),
        (r#"{"w": null}"#, "does not have its declared shape"),
    ] {
        std::fs::write(dir.join("bad.json"), text).unwrap();
        let o = gpmc_line(
            &dir,
            "infer m.gpm --data d.json --init bad.json --quiet --output bad",
        );
        assert_eq!(o.status.code(), Some(1), "{text}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(message),
            "{text}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!dir.join("bad").exists());
    }
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --method cavi --init init.json",
    );
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--predict` at inputs without responses: the same predictive distribution (here class
/// probabilities) as with them, just not scored.
#[test]
fn prediction_needs_no_responses() {
    let dir = setup("unlabelled");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let mut test: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("gp_classification.test.json")).unwrap(),
    )
    .unwrap();
    test.as_object_mut().unwrap().remove("y");
    std::fs::write(dir.join("inputs.json"), test.to_string()).unwrap();
    for method in ["gibbs", "cavi"] {
        let run = |predict: &Path, out: &str| {
            let model = root.join("gp_classification.gpm");
            let data = root.join("gp_classification.data.json");
            let o = Command::new(env!("CARGO_BIN_EXE_gpmc"))
                .current_dir(&dir)
                .arg("infer")
                .arg(&model)
                .arg("--data")
                .arg(&data)
                .arg("--predict")
                .arg(predict)
                .args(["--method", method, "--quiet", "--output", out])
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{method}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let csv = std::fs::read_to_string(dir.join(out).join("predictions.csv")).unwrap();
            let summary: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join(out).join("summary.json")).unwrap(),
            )
            .unwrap();
            (csv, summary["test"].clone())
        };
        let (labelled, scored) = run(&root.join("gp_classification.test.json"), "labelled");
        let (unlabelled, unscored) = run(&dir.join("inputs.json"), "unlabelled");
        assert!(scored["mean_log_predictive_density"].is_number());
        assert!(
            unscored.get("mean_log_predictive_density").is_none(),
            "{unscored}"
        );
        assert!(unscored.get("error_rate_factor_1").is_none());
        // The same probabilities: the labelled file's columns minus its log predictive density.
        let columns = |csv: &str| -> Vec<Vec<String>> {
            let mut lines = csv.lines();
            let header: Vec<&str> = lines.next().unwrap().split(',').collect();
            let keep: Vec<usize> = (0..header.len())
                .filter(|&k| !header[k].starts_with("log_predictive"))
                .collect();
            std::iter::once(header.join(","))
                .chain(lines.map(String::from))
                .map(|l| {
                    let cells: Vec<&str> = l.split(',').collect();
                    keep.iter()
                        .filter_map(|&k| cells.get(k).map(|c| c.to_string()))
                        .collect()
                })
                .collect()
        };
        assert_eq!(columns(&labelled), columns(&unlabelled), "{method}");
        assert!(unlabelled.lines().next().unwrap().contains("p_1_1"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGINT (Ctrl-C) ends a Gibbs run cleanly: the draws so far, complete rows of equal number in
/// every chain, a summary marked interrupted, moved into place like a finished run; exit 130
/// (SIGTERM: the same, exit 143).
#[test]
fn an_interrupted_run_writes_the_draws_so_far() {
    // SIGINT exits 130, SIGTERM 143 (the shell's codes: it was 130 for both).
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        interrupted_run(signal, code);
    }
}

fn interrupted_run(signal: &str, code: i32) {
    let dir = setup(&format!("interrupt-{signal}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    // Fixed kernel values: the signal comes while sampling, not during type-II ML.
    let model = std::fs::read_to_string(root.join("gp_classification.gpm"))
        .unwrap()
        .replace("learn(1.0)", "1.0")
        .replace("learn(2.0)", "2.0");
    std::fs::write(dir.join("gpc.gpm"), model).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .current_dir(&dir)
        .arg("infer")
        .arg("gpc.gpm")
        .arg("--data")
        .arg(root.join("gp_classification.data.json"))
        .args([
            "--draws", "200000", "--warmup", "10", "--quiet", "--output", "out",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["interrupted"], true);
    let kept = summary["draws"].as_u64().unwrap() as usize;
    assert!(kept > 0 && kept < 200_000, "{kept} draws");
    // Chains that had not started (4 chains on fewer threads) are left out.
    let chains = summary["chains"].as_u64().unwrap();
    assert!((1..=4).contains(&chains), "{chains} chains");
    assert!(!dir.join(format!("out/chain-{}.csv", chains + 1)).exists());
    for chain in 1..=chains {
        let text = std::fs::read_to_string(dir.join(format!("out/chain-{chain}.csv"))).unwrap();
        assert!(text.contains(&format!("num_samples = {kept}")));
        let (header, rows) = read_csv(&dir.join(format!("out/chain-{chain}.csv")));
        assert_eq!(rows.len(), kept);
        assert!(rows.iter().all(|r| r.len() == header.len()));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `gpmc summary DIR` re-makes the summary from the chain files: the same statistics as the
/// run's summary.json, pointwise columns on request; a variational run's fit and marginals.
#[test]
fn summary_re_summarises_a_run() {
    let dir = setup("summary");
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --log-lik --quiet --output out",
    );
    assert!(o.status.success());
    let o = gpmc_line(&dir, "summary out --sig-figs 6");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap())
            .unwrap();
    for v in summary["variables"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap();
        let cells: Vec<f64> = line
            .split_whitespace()
            .skip(1)
            .map(|c| c.parse().unwrap())
            .collect();
        // mean, mcse, sd, mad, 5 %, 50 %, 95 %, ess_bulk, ess_tail, rhat
        for (k, key) in [(0, "mean"), (2, "sd"), (3, "mad"), (6, "q95")] {
            let want = v[key].as_f64().unwrap();
            assert!(
                (cells[k] - want).abs() <= 1e-5 * want.abs().max(1e-3),
                "{name} {key}: {} vs {want}",
                cells[k]
            );
        }
    }
    assert!(text.contains("4 chains × 1000 draws"), "{text}");
    assert!(!text.contains("log_lik.1"));
    // The Rao-Blackwellised means follow, as summary.json has them.
    let (_, rb_part) = text
        .split_once("Rao-Blackwellised means")
        .expect("a Rao-Blackwellised table");
    for r in summary["rao_blackwell"].as_array().unwrap().iter().take(20) {
        let name = r["name"].as_str().unwrap();
        let line = rb_part
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} not in {rb_part}"));
        let mean: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let want = r["mean"].as_f64().unwrap();
        assert!(
            (mean - want).abs() <= 1e-5 * want.abs().max(1e-3),
            "{name}: {mean} vs {want}"
        );
    }
    let o = gpmc_line(&dir, "summary out --pointwise --all");
    assert!(String::from_utf8_lossy(&o.stdout).contains("log_lik.12 "));
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --method cavi --quiet --output q",
    );
    assert!(o.status.success());
    let o = gpmc_line(&dir, "summary q");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("method cavi") && text.contains("converged: true"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("w ")), "{text}");
    let o = gpmc_line(&dir, "summary nowhere");
    assert_eq!(o.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Gibbs fit is reusable: `gpmc predict OUT_DIR --data NEW` gives the predictions the run
/// gave with `--predict` (the draws re-read from the chain files, to their 10 printed digits),
/// with or without responses; training data changed since the fit are refused.
#[test]
fn a_saved_fit_predicts_new_inputs() {
    let dir = setup("reuse");
    copy_example(&dir, "gp_classification");
    let o = gpmc_line(&dir, "infer gp_classification.gpm --data gp_classification.data.json --predict gp_classification.test.json --draws 300 --quiet --output fit");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = gpmc_line(&dir, "predict fit --data gp_classification.test.json");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let numbers = |path: &str| -> Vec<Vec<f64>> {
        std::fs::read_to_string(dir.join(path))
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
            .collect()
    };
    let (in_run, reused) = (
        numbers("fit/predictions.csv"),
        numbers("fit/predict/predictions.csv"),
    );
    // Both predict from the draws as written to the chain files: the same numbers.
    assert_eq!(in_run.len(), reused.len());
    assert_eq!(in_run, reused);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("fit/predict/summary.json")).unwrap(),
    )
    .unwrap();
    assert!(
        summary["test"]["mean_log_predictive_density"]
            .as_f64()
            .unwrap()
            < 0.0
    );
    // Inputs only.
    let mut test: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("gp_classification.test.json")).unwrap(),
    )
    .unwrap();
    test.as_object_mut().unwrap().remove("y");
    std::fs::write(dir.join("inputs.json"), test.to_string()).unwrap();
    let o = gpmc_line(&dir, "predict fit --data inputs.json --output unlabelled");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        std::fs::read_to_string(dir.join("unlabelled/predictions.csv"))
            .unwrap()
            .starts_with("point,")
    );
    // Changed training data.
    let mut train: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("gp_classification.data.json")).unwrap(),
    )
    .unwrap();
    train["X"][0][0] = serde_json::json!(0.123);
    std::fs::write(dir.join("gp_classification.data.json"), train.to_string()).unwrap();
    let o = gpmc_line(&dir, "predict fit --data inputs.json --output stale");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("changed since the fit"));
    assert!(!dir.join("stale").exists());
    let o = gpmc_line(&dir, "predict nowhere --data inputs.json");
    assert_eq!(o.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `gpmc plot DIR`: trace and rank plots of the chosen variables, the predictive band over a
/// GP's one input, the ELBO trace of a variational run — SVG files naming what they show.
#[test]
fn plots_are_drawn() {
    let dir = setup("plot");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    for file in ["student_t_regression.gpm", "student_t_regression.data.json"] {
        std::fs::copy(root.join(file), dir.join(file)).unwrap();
    }
    let run = |args: &[&str]| {
        let o = gpmc(&dir, args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&[
        "infer",
        "student_t_regression.gpm",
        "--data",
        "student_t_regression.data.json",
        "--draws",
        "200",
        "--quiet",
        "--output",
        "g",
    ]);
    run(&["plot", "g", "--vars", "lp__,f.3"]);
    let svg = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
    assert!(
        svg("g/plots/trace.svg").starts_with("<svg")
            && svg("g/plots/trace.svg").contains("trace of f.3")
    );
    assert!(svg("g/plots/rank.svg").contains("ranks of lp__"));
    assert!(svg("g/plots/predictive.svg")
        .contains("posterior of f: mean ± 2 sd (points: training data)"));
    let o = gpmc_line(&dir, "plot g --vars nope");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no variable `nope`"));
    run(&[
        "infer", "m.gpm", "--data", "d.json", "--method", "cavi", "--quiet", "--output", "c",
    ]);
    run(&["plot", "c"]);
    assert!(svg("c/plots/elbo.svg").contains("cavi — ELBO"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Predictions give the predictive distribution of a new response, after every method: for
/// y ~ normal(η, 0.5) its mean is η's and its variance η's plus 0.25 (within Monte Carlo error
/// over 1000 draws; 4000 after CAVI and GPF), the 5/50/95 % quantiles in order.
#[test]
fn predictions_give_the_response_distribution() {
    let dir = setup("ystar");
    std::fs::write(dir.join("new.json"), r#"{"N": 3, "x": [-1.5, 0.2, 2.5]}"#).unwrap();
    for method in ["gibbs", "cavi", "gpf"] {
        let o = gpmc(
            &dir,
            &[
                "infer",
                "m.gpm",
                "--data",
                "d.json",
                "--method",
                method,
                "--predict",
                "new.json",
                "--quiet",
                "--output",
                method,
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let csv = std::fs::read_to_string(dir.join(format!("{method}/predictions.csv"))).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |n: &str| {
            header
                .iter()
                .position(|h| *h == n)
                .unwrap_or_else(|| panic!("{method}: {n} in {header:?}"))
        };
        let pred = header[1].trim_end_matches("_mean").to_string();
        for line in lines {
            let r: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
            let (m, s) = (
                r[col(&format!("{pred}_mean"))],
                r[col(&format!("{pred}_sd"))],
            );
            let (ym, ys) = (r[col("y_rep_1_mean")], r[col("y_rep_1_sd")]);
            let sd = (0.25 + s * s).sqrt();
            assert!(
                (ym - m).abs() < 5.0 * sd / 1000f64.sqrt(),
                "{method}: mean {ym} vs {m}"
            );
            assert!((ys / sd - 1.0).abs() < 0.15, "{method}: sd {ys} vs {sd}");
            let (q5, q50, q95) = (
                r[col("y_rep_1_q5")],
                r[col("y_rep_1_q50")],
                r[col("y_rep_1_q95")],
            );
            assert!(q5 < q50 && q50 < q95);
            assert!(
                (q95 - q5 - 2.0 * 1.645 * sd).abs() < 0.25 * sd * 3.29,
                "{method}: interval {q5}..{q95} for sd {sd}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
