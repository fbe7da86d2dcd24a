//! `inducing = adaptive(rho, max)` (thesis Appendix A) end to end on the sparse classifier
//! example: SVI chooses its points as the minibatches arrive, never more than `max`, and
//! predicts as well as k-means++ with 50 points; the points travel with `q` into every output
//! — `inducing.csv`, draws from `q`, prediction, and a saved fit that `gpmc predict` reopens
//! and predicts from with the same numbers. The full-batch methods choose by one pass over the
//! rows in order.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models")
}

fn model(inducing: &str) -> String {
    std::fs::read_to_string(root().join("sparse_gp_classification.gpm"))
        .unwrap()
        .replace("inducing = 50)", &format!("inducing = {inducing})"))
}

/// `gpmc infer` of the model with `inducing` by `method`; the summary and the output dir.
fn infer(tag: &str, inducing: &str, method: &str) -> (serde_json::Value, PathBuf) {
    let dir = std::env::temp_dir().join(format!("gpmc-online-{}-{tag}", std::process::id()));
    // A directory left by an earlier run whose process had the same id holds its outputs,
    // which `gpmc predict` rightly refuses to replace: start empty.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("model.gpm");
    std::fs::write(&src, model(inducing)).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .arg("infer")
        .arg(&src)
        .arg("--data")
        .arg(root().join("sparse_gp_classification.data.json"))
        .arg("--predict")
        .arg(root().join("sparse_gp_classification.test.json"))
        .args(["--method", method, "--quiet", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    (serde_json::from_str(&summary).unwrap(), out)
}

fn points(out: &Path) -> usize {
    std::fs::read_to_string(out.join("inducing.csv"))
        .unwrap()
        .lines()
        .count()
        - 1
}

#[test]
fn svi_grows_its_points_within_the_cap_and_predicts_like_kmeans() {
    let (online, out) = infer("svi", "adaptive(rho = 0.7, max = 100)", "svi");
    let (kmeans, _) = infer("kmeans", "50", "svi");
    let m = points(&out);
    let lpd = |s: &serde_json::Value| s["test"]["mean_log_predictive_density"].as_f64().unwrap();
    eprintln!(
        "online: {m} points, LPD {}; k-means++ 50: {}",
        lpd(&online),
        lpd(&kmeans)
    );
    assert!(m > 5 && m <= 100, "{m} points");
    assert!(lpd(&online) > lpd(&kmeans) - 0.01);
    // The cap: a stricter rule stops at `max`.
    let (_, capped) = infer("cap", "adaptive(rho = 0.99, max = 12)", "svi");
    assert_eq!(points(&capped), 12);
    // The draws from q have one whitened coordinate per point.
    let chain = std::fs::read_to_string(out.join("chain-1.csv")).unwrap();
    let header = chain.lines().find(|l| l.starts_with("lp__")).unwrap();
    assert_eq!(header.matches("f_inducing.").count(), m);
    // The saved fit predicts the same numbers.
    let o = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .arg("predict")
        .arg(&out)
        .arg("--data")
        .arg(root().join("sparse_gp_classification.test.json"))
        .arg("--output")
        .arg(out.with_file_name("again"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let again: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.with_file_name("again").join("summary.json")).unwrap(),
    )
    .unwrap();
    assert!(
        (lpd(&again) - lpd(&online)).abs() < 1e-12,
        "{} vs {}",
        lpd(&again),
        lpd(&online)
    );
}

#[test]
fn the_full_batch_methods_choose_in_one_pass() {
    let (cavi, out) = infer("cavi", "adaptive(rho = 0.7, max = 100)", "cavi");
    let m = points(&out);
    assert!(m > 5 && m <= 100, "{m} points");
    assert!(cavi["test"]["error_rate_factor_1"].as_f64().unwrap() < 0.1);
}
