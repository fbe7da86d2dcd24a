//! What the workflow tests share: a small regression model, a scratch directory with its data,
//! the binary, and a CmdStan CSV reader.
#![allow(dead_code, unused_imports)]

pub use std::path::{Path, PathBuf};
pub use std::process::{Command, Stdio};

pub const MODEL: &str = r#"
data {
  N : int;
  x : vector[N];
  y : vector[N];
}
latent {
  w : real ~ normal(0, 1);
  b : real ~ normal(0, 1);
}
model {
  y ~ normal(w * x + b, 0.5);
}
"#;

/// A scratch directory with the model and its data.
pub fn setup(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpmc-workflow-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("m.gpm"), MODEL).unwrap();
    let x: Vec<f64> = (0..12).map(|i| i as f64 / 6.0 - 1.0).collect();
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| 0.7 * v - 0.2 + 0.3 * ((i * 7 % 5) as f64 - 2.0) / 2.0)
        .collect();
    let data = serde_json::json!({"N": 12, "x": x, "y": y});
    std::fs::write(dir.join("d.json"), data.to_string()).unwrap();
    dir
}

pub fn gpmc(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Copy `models/NAME.gpm` with its training and test data into `dir`.
pub fn copy_example(dir: &Path, name: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    for ext in ["gpm", "data.json", "test.json"] {
        let file = format!("{name}.{ext}");
        std::fs::copy(root.join(&file), dir.join(&file)).unwrap();
    }
}

/// `gpmc` with the arguments as a user types them, split at white space.
pub fn gpmc_line(dir: &Path, line: &str) -> std::process::Output {
    gpmc(dir, &line.split_whitespace().collect::<Vec<_>>())
}

/// [`gpmc_line`], which must succeed (the failure shows the line and stderr).
pub fn gpmc_ok(dir: &Path, line: &str) -> std::process::Output {
    let o = gpmc_line(dir, line);
    assert!(
        o.status.success(),
        "gpmc {line}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The header and rows of a CmdStan CSV.
pub fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    (header, rows)
}
