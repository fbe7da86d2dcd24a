//! `gpmc infer` runs every example model end to end, by every method that applies, with test
//! predictions; a method that does not apply refuses with exit code 1, a message that says why,
//! and no output directory left behind.

use std::path::Path;
use std::process::Command;

/// Methods each model must run with; the others must be refused.
fn methods(model: &str) -> &'static [&'static str] {
    match model {
        "sparse_gp_classification" => &["gibbs", "cavi", "svi", "gpf"],
        "multiclass_gp" => &["gibbs", "cavi", "gpf"],
        _ => &["gibbs", "cavi", "gpf"],
    }
}

// One test per method, so that the harness runs them side by side (the whole set, 22 models × 4
// methods, was one test of two minutes).
#[test]
fn every_model_runs_by_gibbs_where_it_applies() {
    every_model_runs_by("gibbs");
}

#[test]
fn every_model_runs_by_cavi_where_it_applies() {
    every_model_runs_by("cavi");
}

#[test]
fn every_model_runs_by_svi_where_it_applies() {
    every_model_runs_by("svi");
}

#[test]
fn every_model_runs_by_gpf_where_it_applies() {
    every_model_runs_by("gpf");
}

fn every_model_runs_by(method: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let mut models: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "gpm").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    models.sort();
    assert!(models.len() >= 12, "models: {models:?}");
    let tmp = std::env::temp_dir().join(format!("gpmc-e2e-{}-{method}", std::process::id()));
    for m in &models {
        let out = tmp.join(format!("{m}-{method}"));
        let o = Command::new(env!("CARGO_BIN_EXE_gpmc"))
            .arg("infer")
            .arg(root.join(format!("{m}.gpm")))
            .arg("--data")
            .arg(root.join(format!("{m}.data.json")))
            .arg("--predict")
            .arg(root.join(format!("{m}.test.json")))
            .args(["--method", method])
            .args(match method {
                "gibbs" => &[
                    "--chains",
                    "2",
                    "--draws",
                    "60",
                    "--warmup",
                    "30",
                    "--log-lik",
                ][..],
                "svi" => &["--batch", "500", "--iterations", "100"][..],
                // The sparse GP's flow is in its 4 000 values: 64 particles, not 256 (CI time).
                "gpf" if m == "sparse_gp_classification" => {
                    &["--iterations", "100", "--particles", "64"][..]
                }
                _ => &["--iterations", "100"][..],
            })
            // Replicated responses need each likelihood's distribution: not a formula's.
            .args(
                (method == "gibbs"
                    && !source(m).contains("target +=")
                    && !source(m).contains("factor("))
                .then_some("--ppc"),
            )
            .args(["--quiet", "--output"])
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        if methods(m).contains(&method) {
            assert!(o.status.success(), "{m} --method {method} failed: {stderr}");
            let summary: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                    .unwrap();
            let lpd = summary["test"]["mean_log_predictive_density"]
                .as_f64()
                .unwrap_or(f64::NAN);
            assert!(lpd.is_finite() && lpd < 5.0, "{m} {method}: test lpd {lpd}");
            if let Some(err) = summary["test"]["error_rate_factor_1"].as_f64() {
                assert!(err < 0.35, "{m} {method}: test error {err}");
            }
            if method == "gibbs" {
                // One log-likelihood per observation, finite at every draw.
                let csv = std::fs::read_to_string(out.join("chain-1.csv")).unwrap();
                let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
                let header: Vec<&str> = lines.next().unwrap().split(',').collect();
                let first: Vec<f64> = lines
                    .next()
                    .unwrap()
                    .split(',')
                    .map(|v| v.parse().unwrap())
                    .collect();
                let log_lik: Vec<f64> = header
                    .iter()
                    .zip(&first)
                    .filter(|(h, _)| h.starts_with("log_lik."))
                    .map(|(_, v)| *v)
                    .collect();
                assert!(!log_lik.is_empty(), "{m}: no log_lik columns");
                assert!(
                    log_lik.iter().all(|v| v.is_finite()),
                    "{m}: log_lik {log_lik:?}"
                );
                let y_rep = header.iter().filter(|h| h.starts_with("y_rep.")).count();
                assert!(
                    y_rep == 0 || y_rep == log_lik.len(),
                    "{m}: {y_rep} y_rep columns"
                );
            }
        } else {
            assert_eq!(
                o.status.code(),
                Some(1),
                "{m} --method {method} should be refused"
            );
            assert!(
                stderr.contains("not implemented")
                    || stderr.contains("Gibbs-only")
                    || stderr.contains("SVI needs"),
                "{m} {method}: unclear refusal: {stderr}"
            );
            assert!(!out.exists(), "{m} {method}: output left behind");
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A model's source text.
fn source(model: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    std::fs::read_to_string(root.join(format!("{model}.gpm"))).unwrap()
}
