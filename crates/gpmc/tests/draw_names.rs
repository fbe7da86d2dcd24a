//! The draws' CSV headers follow the declared shapes: every column is `name`, `name.i` or
//! `name.i.j` with indices inside the declared sizes, matrices column-major (the first index
//! fastest), so `arviz.from_cmdstan` builds the right arrays. Checked on the multi-class GP (a
//! matrix latent read by the logistic-softmax), the sparse GP under Gibbs (whose whitened
//! inducing coordinates are written as the variable `f_inducing`) and a sparse multi-class GP.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run Gibbs briefly and return the header of chain 1.
fn header(model: &Path, data: &Path) -> Vec<String> {
    let out = tempdir(model);
    let o = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .args([
            "infer",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
        ])
        .args(["--draws", "10", "--warmup", "5", "--chains", "1", "--quiet"])
        .args(["--output", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("chain-1.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    csv.lines()
        .find(|l| !l.starts_with('#'))
        .unwrap()
        .split(',')
        .map(String::from)
        .collect()
}

fn tempdir(model: &Path) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "gpmc-names-{}-{}",
        std::process::id(),
        model.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The columns of variable `name`, as (i, j) indices in file order.
fn entries(cols: &[String], name: &str) -> Vec<Vec<usize>> {
    cols.iter()
        .filter_map(|c| {
            let rest = c.strip_prefix(name)?;
            if rest.is_empty() {
                return Some(vec![]);
            }
            let idx = rest.strip_prefix('.')?;
            idx.split('.').map(|x| x.parse().ok()).collect()
        })
        .collect()
}

/// `r × c` entries in column-major order.
fn column_major(r: usize, c: usize) -> Vec<Vec<usize>> {
    (1..=c)
        .flat_map(|j| (1..=r).map(move |i| vec![i, j]))
        .collect()
}

#[test]
fn a_softmax_matrix_latent_is_named_row_then_class() {
    let cols = header(
        &root().join("models/multiclass_gp.gpm"),
        &root().join("models/multiclass_gp.data.json"),
    );
    // N = 60 observations, C = 3 classes.
    assert_eq!(cols[0], "lp__");
    assert_eq!(entries(&cols, "F"), column_major(60, 3));
    assert_eq!(cols.len(), 1 + 180);
}

#[test]
fn sparse_gibbs_writes_its_inducing_coordinates_as_a_declared_looking_vector() {
    let cols = header(
        &root().join("models/sparse_gp_classification.gpm"),
        &root().join("models/sparse_gp_classification.data.json"),
    );
    for c in &cols {
        assert!(!c.contains(".v."), "internal name {c}");
    }
    let n = entries(&cols, "f").len();
    assert!(n > 0);
    assert_eq!(
        entries(&cols, "f"),
        (1..=n).map(|i| vec![i]).collect::<Vec<_>>()
    );
    // inducing = 50 in the model.
    assert_eq!(
        entries(&cols, "f_inducing"),
        (1..=50).map(|i| vec![i]).collect::<Vec<_>>()
    );
    // Every column belongs to lp__, f or f_inducing.
    assert_eq!(cols.len(), 1 + n + 50);
}

#[test]
fn a_sparse_matrix_latent_has_an_m_by_c_inducing_matrix() {
    let src = std::fs::read_to_string(root().join("models/multiclass_gp.gpm")).unwrap();
    let sparse = src.replace("sqexp(lengthscale));", "sqexp(lengthscale), inducing = 8);");
    assert_ne!(src, sparse, "the example's latent declaration changed");
    let dir = std::env::temp_dir().join(format!("gpmc-names-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("sparse_multiclass.gpm");
    std::fs::write(&model, sparse).unwrap();
    let cols = header(&model, &root().join("models/multiclass_gp.data.json"));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(entries(&cols, "F"), column_major(60, 3));
    assert_eq!(entries(&cols, "F_inducing"), column_major(8, 3));
    assert_eq!(cols.len(), 1 + 180 + 24);
}
