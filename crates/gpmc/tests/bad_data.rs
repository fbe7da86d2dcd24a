//! Bad data is a clear error that names the variable, exits 1, and leaves no output behind.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model() -> gpmc::Checked {
    let src = std::fs::read_to_string(root().join("models/gp_classification.gpm")).unwrap();
    gpmc::check("gp_classification.gpm", &src).unwrap()
}

fn err_for(json: &str) -> gpmc::data::DataError {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    gpmc::data::from_json_value(&model().model, &v).expect_err(json)
}

#[test]
fn each_kind_of_bad_data_names_the_variable() {
    #[rustfmt::skip]
    let cases = [
        (r#"{"N": 2, "D": 1, "X": [[0.1], [0.2]]}"#, "y", "`y` is missing: the model declares `y : int[N]`; the data have `D`, `N`, `X`"),
        // Issue 37: a size is read off the data declared with it, so their absence or shape
        // is what is named, not the size.
        (r#"{"x": [[0.1], [0.2]], "y": [1, -1]}"#, "X", "`X` is missing (it gives the size `D`): the model declares `X : matrix[N, D]`"),
        (r#"{"N": 2, "X": [0.1, 0.2], "y": [1, -1]}"#, "X", "`X` is declared `matrix[N, D]` but the data give an array of 2 entries, so the size `D` cannot be read off it"),
        (r#"{"N": 2, "D": 1, "X": [[0.1], [0.2]], "y": [1, -1, 1]}"#, "y", "has 3 entries"),
        (r#"{"N": 2, "D": 1, "X": [[0.1, 0.3], [0.2]], "y": [1, -1]}"#, "X", "columns"),
        (r#"{"N": 2, "D": 1, "X": [[0.1], ["NaN"]], "y": [1, -1]}"#, "X", "NaN"),
        (r#"{"N": 2, "D": 1, "X": [[0.1], [0.2]], "y": [1, 0]}"#, "y", "outside its declared set"),
        (r#"{"N": 2, "D": 1, "X": [[0.1], [0.2]], "y": [1, 0.5]}"#, "y", "declared int"),
        (r#"{"N": 2, "D": 1, "X": [[0.1], [0.2]], "y": [1, null]}"#, "y", "null"),
        (r#"{"N": 2, "D": 1, "X": [0.1, 0.2], "y": [1, -1]}"#, "X", "not an array"),
    ];
    for (json, var, text) in cases {
        let e = err_for(json);
        assert_eq!(e.variable, var, "{json}: {}", e.message);
        assert!(
            e.message.contains(text),
            "{json}: `{}` lacks `{text}`",
            e.message
        );
        assert!(
            e.declared.is_some(),
            "{json}: the declaration span is attached"
        );
    }
}

#[test]
fn a_key_typo_gets_a_did_you_mean_and_zero_based_labels_a_hint() {
    let e = err_for(r#"{"x": [[0.1], [0.2]], "y": [1, -1]}"#);
    assert_eq!(
        e.help.as_deref(),
        Some("did you mean `x`? (names are case-sensitive)")
    );
    let src = std::fs::read_to_string(root().join("models/multiclass_gp.gpm")).unwrap();
    let c = gpmc::check("multiclass_gp.gpm", &src).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(r#"{"C": 3, "X": [[0.1], [0.2]], "y": [0, 2]}"#).unwrap();
    let e = gpmc::data::from_json_value(&c.model, &v).unwrap_err();
    assert!(
        e.message.contains("below its declared lower bound 1"),
        "{}",
        e.message
    );
    assert!(e.help.unwrap().contains("1-based"));
}

#[test]
fn group_indices_must_point_into_their_latent() {
    let src = "data { N : int; G : int; x : vector[N]; g : int[N] in 1..; y : vector[N]; }
               latent { f : vector[N] ~ gp(x, sqexp(1.0)); u : vector[G] ~ normal(0, 1); }
               model { for i in 1..N { y[i] ~ normal(f[i] + u[g[i]], 0.5); } }";
    let c = gpmc::check("re.gpm", src).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(r#"{"N": 3, "G": 2, "x": [0, 1, 2], "g": [1, 3, 2], "y": [0, 1, 0]}"#)
            .unwrap();
    let e = gpmc::data::from_json_value(&c.model, &v).unwrap_err();
    assert_eq!(e.variable, "g");
    assert!(e.message.contains("1..2"), "{}", e.message);
}

#[test]
fn csv_data_with_matrix_columns_loads() {
    let dir = tempdir();
    let csv = dir.join("d.csv");
    std::fs::write(&csv, "X.1,X.2,y\n0.1,0.2,1\n-0.5,0.3,-1\n0.7,-0.1,1\n").unwrap();
    let c = model();
    let d = gpmc::data::load(&c.model, &[csv.as_path()]).unwrap();
    assert_eq!(d.scalar("N"), Some(3.0));
    assert_eq!(d.scalar("D"), Some(2.0));
    assert_eq!(d.matrix("X").unwrap()[(1, 0)], -0.5);
}

/// The streamed CSV reader gives the same data as JSON, and names the variable and the problem
/// when a CSV column is wrong (a label outside its set, a non-number, a declared size it
/// contradicts).
#[test]
fn csv_matches_json_and_reports_bad_columns() {
    let dir = tempdir();
    let csv = dir.join("d.csv");
    std::fs::write(&csv, "X.2,X.1,y\n0.2,0.1,1\n0.3,-0.5,-1\n-0.1,0.7,1\n").unwrap();
    let c = model();
    let from_csv = gpmc::data::load(&c.model, &[csv.as_path()]).unwrap();
    let json = serde_json::json!({"N": 3, "D": 2, "X": [[0.1, 0.2], [-0.5, 0.3], [0.7, -0.1]], "y": [1, -1, 1]});
    let from_json = gpmc::data::from_json_value(&c.model, &json).unwrap();
    assert_eq!(from_csv, from_json, "columns X.2, X.1 are put in order");
    let bad = |text: &str| {
        let p = dir.join("bad.csv");
        std::fs::write(&p, text).unwrap();
        gpmc::data::load(&c.model, &[p.as_path()]).unwrap_err()
    };
    let e = bad("X.1,X.2,y\n0.1,0.2,1\n0.3,-0.5,2\n");
    assert_eq!(e.variable, "y", "{}", e.message);
    // Issue 50: the duplicate is named as given, an unreadable column number is an error (it
    // was taken for an unknown datum and the model fitted with D = 2).
    let e = bad("X.1,X[1],X.2,y\n0.1,0.1,0.2,1\n");
    assert!(
        e.message
            .contains("`X.1` and `X[1]` both give column 1 of `X`"),
        "{}",
        e.message
    );
    for header in ["X.99999999999999999999", "X.0", "X[0]"] {
        let e = bad(&format!("X.1,X.2,{header},y\n0.1,0.2,0.3,1\n"));
        assert!(
            e.message.contains(&format!("the column `{header}`")) && e.variable == "X",
            "{}",
            e.message
        );
    }
    let e = bad("X.1,X.3,y\n0.1,0.2,1\n");
    assert!(
        e.message
            .contains("`X.2` is missing (the next column is `X.3`)"),
        "{}",
        e.message
    );
    let e = bad("X.1,X.2,y\n0.1,abc,1\n");
    assert!(
        e.message.contains("not a number") && e.message.contains("X.2"),
        "{}",
        e.message
    );
    let p = dir.join("sizes.json");
    std::fs::write(&p, r#"{"N": 5}"#).unwrap();
    let good = dir.join("good.csv");
    std::fs::write(&good, "X.1,X.2,y\n0.1,0.2,1\n0.3,-0.5,-1\n").unwrap();
    let e = gpmc::data::load(&c.model, &[p.as_path(), good.as_path()]).unwrap_err();
    assert!(
        e.message.contains("2 rows") || e.message.contains("2 entries"),
        "{}",
        e.message
    );
}

fn tempdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "gpmc-test-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn cli_refuses_bad_data_and_writes_nothing() {
    let dir = tempdir();
    let data = dir.join("bad.json");
    std::fs::write(
        &data,
        r#"{"N": 2, "D": 1, "X": [[0.1], [0.2]], "y": [1, 7]}"#,
    )
    .unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .args([
            "infer",
            root()
                .join("models/gp_classification.gpm")
                .to_str()
                .unwrap(),
            "--data",
        ])
        .arg(&data)
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`y` contains 7") && err.contains("outside its declared set"),
        "{err}"
    );
    assert!(!out.exists(), "no output directory is left behind");
}

#[test]
fn cli_runs_and_writes_every_file_reproducibly() {
    let dir = tempdir();
    let run = |sub: &str| {
        let out = dir.join(sub);
        let o = Command::new(env!("CARGO_BIN_EXE_gpmc"))
            .args([
                "infer",
                root()
                    .join("models/logistic_regression.gpm")
                    .to_str()
                    .unwrap(),
                "--data",
            ])
            .arg(root().join("models/logistic_regression.data.json"))
            .args([
                "--draws", "200", "--warmup", "50", "--chains", "2", "--seed", "42", "--quiet",
                "--output",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let (a, b) = (run("a"), run("b"));
    for f in ["chain-1.csv", "chain-2.csv"] {
        let strip = |p: PathBuf| -> String {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .filter(|l| !l.contains("Elapsed") && !l.starts_with("# ") && !l.starts_with("#  "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            strip(a.join(f)),
            strip(b.join(f)),
            "a fixed seed reproduces {f} bit for bit"
        );
    }
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["chains"], 2);
    assert!(s["variables"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["name"] == "b"));
    // No temporary files remain.
    assert!(std::fs::read_dir(&a).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains(".tmp")));
}

/// Issue 34: under the bijective link the classes are the columns plus one; when both are data
/// the mismatch is found when the data are read, naming both.
#[test]
fn a_bijective_latent_needs_one_column_fewer_than_classes() {
    let src = "data { N : int; C : int; J : int; X : matrix[N, 1]; y : int[N] in 1..C; }
               latent { F : matrix[N, J] ~ gp(X, sqexp(1.0)); }
               model { y ~ categorical_logistic_softmax(F, link = \"bijective\"); }";
    let c = gpmc::check("bijective.gpm", src).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(r#"{"N": 2, "C": 3, "J": 3, "X": [[0.1], [0.2]], "y": [1, 3]}"#)
            .unwrap();
    let e = gpmc::data::from_json_value(&c.model, &v).unwrap_err();
    assert!(
        e.message.contains("`C` = 3 classes") && e.message.contains("J = 3 columns"),
        "{}",
        e.message
    );
    let v: serde_json::Value =
        serde_json::from_str(r#"{"N": 2, "C": 3, "J": 2, "X": [[0.1], [0.2]], "y": [1, 3]}"#)
            .unwrap();
    assert!(gpmc::data::from_json_value(&c.model, &v).is_ok());
}

/// Issue 50: a JSON data file that starts with a UTF-8 byte-order mark is read (CSV and `.gpm`
/// accepted one; JSON was refused), to the same data as without it; a file of only the mark, or
/// of a partial mark, is still an error that names the file.
#[test]
fn a_json_file_with_a_byte_order_mark_is_read() {
    let m = model();
    let plain = std::fs::read(root().join("models/gp_classification.data.json")).unwrap();
    let dir = std::env::temp_dir().join(format!("gpmc-bom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let with_bom = dir.join("bom.json");
    std::fs::write(&with_bom, [&[0xEF, 0xBB, 0xBF][..], &plain].concat()).unwrap();
    let a = gpmc::data::load(
        &m.model,
        &[&root().join("models/gp_classification.data.json")],
    );
    let b = gpmc::data::load(&m.model, &[&with_bom]);
    let (a, b) = (a.unwrap(), b.unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    for bad in [
        &[0xEF, 0xBB, 0xBF][..],
        &[0xEF, 0xBB][..],
        &[0xEF, b'{', b'}'][..],
    ] {
        std::fs::write(&with_bom, bad).unwrap();
        let e = gpmc::data::load(&m.model, &[&with_bom]).expect_err("not JSON");
        assert!(e.to_string().contains("bom.json"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
