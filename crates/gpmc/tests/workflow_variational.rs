//! After a variational run: draws from q (CAVI, SVI), saved variational fits predicting
//! exactly, and Gibbs draws streamed to disk equal to the draws kept in memory.

use crate::common;
use crate::workflow_support;
use workflow_support::*;

/// SVI writes draws from q for a sparse GP too: `f` at the training inputs has q's marginals
/// (the predictive marginals at the same inputs, from `gpmc predict` on the saved fit) within
/// Monte Carlo error, and the whitened inducing coordinates come along.
#[test]
fn svi_writes_draws_from_q() {
    let dir = setup("svi_q");
    std::fs::write(dir.join("s.gpm"), sparse_classifier(0.4, 2.0)).unwrap();
    let x: Vec<f64> = (0..40).map(|i| i as f64 / 8.0 - 2.5).collect();
    let y = common::sine_labels(&x);
    let xs: Vec<Vec<f64>> = x.iter().map(|v| vec![*v]).collect();
    std::fs::write(
        dir.join("s.json"),
        serde_json::json!({"N": 40, "X": xs, "y": y}).to_string(),
    )
    .unwrap();
    gpmc_ok(&dir, "infer s.gpm --data s.json --method svi --batch 40 --draws 4000 --log-lik --quiet --output svi");
    let (header, rows) = read_csv(&dir.join("svi/chain-1.csv"));
    assert_eq!(rows.len(), 4000);
    assert_eq!(
        header
            .iter()
            .filter(|h| h.starts_with("f_inducing."))
            .count(),
        5
    );
    assert_eq!(
        header.iter().filter(|h| h.starts_with("log_lik.")).count(),
        40
    );
    // q's marginals at the training inputs.
    std::fs::write(
        dir.join("at.json"),
        serde_json::json!({"N": 40, "X": xs}).to_string(),
    )
    .unwrap();
    gpmc_ok(&dir, "predict svi --data at.json");
    let csv = std::fs::read_to_string(dir.join("svi/predict/predictions.csv")).unwrap();
    let mut lines = csv.lines();
    let ph: Vec<&str> = lines.next().unwrap().split(',').collect();
    let (cm, cs) = (
        ph.iter().position(|h| *h == "f_mean").unwrap(),
        ph.iter().position(|h| *h == "f_sd").unwrap(),
    );
    for (i, line) in lines.enumerate() {
        let r: Vec<f64> = line.split(',').map(|c| c.parse().unwrap()).collect();
        let (mean, sd) = (r[cm], r[cs]);
        let j = header
            .iter()
            .position(|h| *h == format!("f.{}", i + 1))
            .unwrap();
        let v: Vec<f64> = rows.iter().map(|r| r[j]).collect();
        let m = v.iter().sum::<f64>() / 4000.0;
        let s = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 3999.0).sqrt();
        assert!(
            (m - mean).abs() < 5.0 * sd / 4000f64.sqrt(),
            "f.{}: mean {m} vs {mean}",
            i + 1
        );
        assert!((s / sd - 1.0).abs() < 0.08, "f.{}: sd {s} vs {sd}", i + 1);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// CAVI and particle flow write draws from q in the layout of Gibbs draws (chain-1.csv, with
/// log_lik and y_rep on request): their moments are q's (posterior.csv) within Monte Carlo error.
#[test]
fn variational_runs_write_draws_from_q() {
    let dir = setup("fromq");
    for method in ["cavi", "gpf"] {
        gpmc_ok(&dir, &format!("infer m.gpm --data d.json --method {method} --log-lik --ppc --draws 4000 --quiet --output {method}"));
        let (header, rows) = read_csv(&dir.join(format!("{method}/chain-1.csv")));
        assert_eq!(rows.len(), 4000);
        assert_eq!(
            header.iter().filter(|h| h.starts_with("log_lik.")).count(),
            12
        );
        assert_eq!(
            header.iter().filter(|h| h.starts_with("y_rep.")).count(),
            12
        );
        let q = std::fs::read_to_string(dir.join(format!("{method}/posterior.csv"))).unwrap();
        for line in q.lines().skip(1) {
            let cells: Vec<&str> = line.split(',').collect();
            let (name, mean, sd): (&str, f64, f64) = (
                cells[0],
                cells[1].parse().unwrap(),
                cells[2].parse().unwrap(),
            );
            let j = header.iter().position(|h| h == name).unwrap();
            let x: Vec<f64> = rows.iter().map(|r| r[j]).collect();
            let m = x.iter().sum::<f64>() / 4000.0;
            let s = (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / 3999.0).sqrt();
            assert!(
                (m - mean).abs() < 5.0 * sd / 4000f64.sqrt(),
                "{method} {name}: mean {m} vs {mean}"
            );
            assert!(
                (s / sd - 1.0).abs() < 0.06,
                "{method} {name}: sd {s} vs {sd}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `gpmc predict` from the saved fit in `dir/method` on the student-t regression's test set
/// gives its in-run predictions to the last digit.
fn assert_reused_predictions_are_the_run_s(dir: &std::path::Path, method: &str) {
    gpmc_ok(
        dir,
        &format!("predict {method} --data student_t_regression.test.json"),
    );
    let in_run = std::fs::read_to_string(dir.join(format!("{method}/predictions.csv"))).unwrap();
    let reused =
        std::fs::read_to_string(dir.join(format!("{method}/predict/predictions.csv"))).unwrap();
    assert_eq!(in_run, reused, "{method}");
}

/// A variational fit is reusable too: `fit.json` holds q exactly, so `gpmc predict` gives the
/// in-run predictions of CAVI and particle flow to the last digit; `gpmc plot` draws its band.
#[test]
fn a_saved_variational_fit_predicts_exactly() {
    let dir = setup("reuse_q");
    copy_example(&dir, "student_t_regression");
    for method in ["cavi", "gpf"] {
        gpmc_ok(&dir, &format!("infer student_t_regression.gpm --data student_t_regression.data.json --predict student_t_regression.test.json --method {method} --quiet --output {method}"));
        assert_reused_predictions_are_the_run_s(&dir, method);
        let o = gpmc(&dir, &["plot", method]);
        assert!(o.status.success());
        assert!(dir.join(format!("{method}/plots/predictive.svg")).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `gpmc infer` streams the draws to the chain files as they are made and summarises them from
/// disk: the files hold exactly the draws the library keeps in memory for the same seed (to
/// the 10 digits written), and the summaries are the same numbers (computed from the exact values, not the decimals).
#[test]
fn streamed_draws_equal_the_draws_in_memory() {
    let dir = setup("streamed");
    let out = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --chains 3 --draws 700 --seed 11 --log-lik --output run",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let checked = gpmc::check("m.gpm", MODEL).unwrap();
    let data = gpmc::data::load(&checked.model, &[dir.join("d.json").as_path()]).unwrap();
    let config = gpm_runtime::gibbs::GibbsConfig {
        first_chain: 0,
        chains: 3,
        warmup: 200,
        draws: 700,
        thin: 1,
        seed: 11,
        nuts: Default::default(),
    };
    let extras = gpmc::infer::GibbsExtras {
        pointwise: gpm_runtime::gibbs::Pointwise {
            log_lik: true,
            ppc: false,
        },
        ..Default::default()
    };
    let mem = gpmc::infer::run_gibbs_with(&checked, &data, &config, extras, &|_, _| {}).unwrap();
    for (k, chain) in mem.chains.iter().enumerate() {
        let (header, rows) = read_csv(&dir.join(format!("run/chain-{}.csv", k + 1)));
        assert_eq!(header, gpmc::infer::column_names(&checked, &chain.layout));
        assert_eq!(rows.len(), chain.rows.len());
        for (a, b) in rows.iter().zip(&chain.rows) {
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() <= 1e-9 * y.abs().max(1e-300), "{x} vs {y}");
            }
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/summary.json")).unwrap())
            .unwrap();
    let vars = summary["variables"].as_array().unwrap();
    assert_eq!(vars.len(), mem.summaries.len());
    for (v, (name, s)) in vars.iter().zip(&mem.summaries) {
        assert_eq!(v["name"], name.as_str());
        // (serde_json reads decimals back to within an ulp, not always exactly.)
        let same = |key: &str, want: f64| {
            let got = v[key].as_f64().unwrap();
            assert!(
                (got - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
                "{name} {key}: {got} vs {want}"
            );
        };
        same("mean", s.mean);
        same("ess_bulk", s.ess_bulk);
        same("rhat", s.rhat);
    }
    // Nothing but the output (and gpmc's marker): no spill files, no staging directory.
    let mut names: Vec<String> = std::fs::read_dir(dir.join("run"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".gpmc-output",
            "chain-1.csv",
            "chain-2.csv",
            "chain-3.csv",
            "fit.json",
            "model.gpm",
            "summary.json"
        ]
    );
    assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("partial")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--draws 0` on a variational method writes no draws (the fit is q, in fit.json), and
/// everything after the run still works from q: the in-run and the reused predictions agree to
/// the last digit, `summary` and `plot` read the fit. A sampler refuses `--draws 0`.
#[test]
fn draws_zero_writes_no_draws_and_the_fit_still_serves() {
    let dir = setup("draws_zero");
    copy_example(&dir, "student_t_regression");
    for method in ["cavi", "gpf"] {
        let o = gpmc_ok(&dir, &format!("infer student_t_regression.gpm --data student_t_regression.data.json --predict student_t_regression.test.json --method {method} --draws 0 --output {method}"));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("no draws from q written (--draws 0)"),
            "{method}"
        );
        assert!(
            !dir.join(format!("{method}/chain-1.csv")).exists(),
            "{method}"
        );
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{method}/summary.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["draws_from_q"], 0, "{method}");
        assert_reused_predictions_are_the_run_s(&dir, method);
        let table = gpmc_ok(&dir, &format!("summary {method}"));
        assert!(
            String::from_utf8_lossy(&table.stdout).contains("mean"),
            "{method}"
        );
        gpmc_ok(&dir, &format!("plot {method}"));
    }
    for method in ["gibbs", "nuts"] {
        let o = gpmc_line(&dir, &format!("infer student_t_regression.gpm --data student_t_regression.data.json --method {method} --draws 0 --output {method}"));
        assert_eq!(o.status.code(), Some(2), "{method}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("--draws must be at least 1 for --method"), "{e}");
        assert!(!dir.join(method).exists(), "{method}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// SVI at scale does not form its latents at every training input unless asked: with more than
/// 200 000 latent values and no `--draws`, no draws from q are written (a note says so).
#[test]
fn svi_at_scale_writes_no_draws_unless_asked() {
    let dir = setup("svi_wide");
    std::fs::write(dir.join("s.gpm"), sparse_classifier(0.5, 1.0)).unwrap();
    let n = gpmc::infer::Q_DRAWS_WIDEST + 1;
    let xs: Vec<[f64; 1]> = (0..n).map(|i| [i as f64 / n as f64 * 4.0 - 2.0]).collect();
    let y: Vec<i32> = xs.iter().map(|x| if x[0] > 0.0 { 1 } else { -1 }).collect();
    std::fs::write(
        dir.join("s.json"),
        serde_json::json!({"N": n, "X": xs, "y": y}).to_string(),
    )
    .unwrap();
    let o = gpmc_line(
        &dir,
        "infer s.gpm --data s.json --method svi --batch 100 --iterations 2 --output wide",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no draws from q written"));
    assert!(!dir.join("wide/chain-1.csv").exists());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("wide/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["draws_from_q"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sparse GP classifier on one input with 5 inducing points and fixed hyperparameters.
fn sparse_classifier(lengthscale: f64, variance: f64) -> String {
    format!(
        "data {{ N : int; X : matrix[N, 1]; y : int[N] in {{-1, 1}}; }}
hyper {{ lengthscale : real in 0.. = {lengthscale:?}; variance : real in 0.. = {variance:?}; }}
latent {{ f : vector[N] ~ gp(X, variance * sqexp(lengthscale), inducing = 5); }}
model {{ y ~ bernoulli_logit(f); }}
"
    )
}

/// `--particle-map`: the family the flow's particles move in, recorded in summary.json; the
/// symmetric map with `--precondition` (which scales Euler steps) is refused, saying what to do.
#[test]
fn the_particle_map_is_chosen_recorded_and_checked() {
    let dir = setup("particle_map");
    for (flags, map) in [
        ("", "symmetric"),
        ("--particle-map affine", "affine"),
        ("--precondition", "affine"),
    ] {
        gpmc_ok(
            &dir,
            &format!("infer m.gpm --data d.json --method gpf --quiet --output o {flags}"),
        );
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("o/summary.json")).unwrap())
                .unwrap();
        assert_eq!(s["particle_map"], map, "{flags}");
        assert_eq!(s["converged"], true, "{flags}");
    }
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --method gpf --quiet --output p --particle-map symmetric --precondition",
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--particle-map affine"), "{err}");
    let o = gpmc_line(
        &dir,
        "infer m.gpm --data d.json --method cavi --quiet --output p --particle-map affine",
    );
    assert!(!o.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
