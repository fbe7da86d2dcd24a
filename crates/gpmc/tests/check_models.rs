//! `gpmc check` on every example model (text and JSON) and on every broken model in
//! `tests/broken/`, each of which must give its own diagnostic code at its own span.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

#[test]
fn every_example_model_checks_in_text_and_json() {
    let models = files("models", "gpm");
    assert!(models.len() >= 11, "expected the 11 example models");
    for m in models {
        let out = Command::new(env!("CARGO_BIN_EXE_gpmc"))
            .args(["check", m.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            m.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(": ok") && text.contains("likelihood factors"),
            "{text}"
        );
        // The schedule: blocks, the Gibbs sweep, and each hyperparameter's updates.
        assert!(
            text.contains("\nschedule\n") && text.contains("  Gibbs sweep\n"),
            "{text}"
        );
        assert!(text.contains("draw the auxiliaries"), "{text}");

        let out = Command::new(env!("CARGO_BIN_EXE_gpmc"))
            .args(["check", m.to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["ok"], true);
        assert_eq!(v["schema_version"], 1);
        assert!(!v["factors"].as_array().unwrap().is_empty());
        assert!(!v["latents"].as_array().unwrap().is_empty());
        for f in v["factors"].as_array().unwrap() {
            assert!(f["line"].as_u64().unwrap() > 0);
            assert!(f["formula"].as_str().unwrap().len() > 5);
        }
        let sched = &v["schedule"];
        assert!(!sched["blocks"].as_array().unwrap().is_empty(), "{sched}");
        assert!(sched["gibbs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["step"] == "auxiliaries"));
        let hypers = sched["hypers"].as_array().unwrap();
        assert_eq!(hypers.len(), v["hypers"].as_array().unwrap().len());
        for h in hypers {
            assert!(
                h["start"].is_number() && h["gibbs"]["update"].is_string(),
                "{h}"
            );
            assert!(h["variational"]["update"].is_string(), "{h}");
            assert!(
                text.contains(h["gibbs_description"].as_str().unwrap()),
                "{h}"
            );
        }
    }
}

/// The first line of each broken model reads `// expect: CODE "text under the primary span"`.
fn expectation(src: &str) -> (String, String) {
    let line = src.lines().next().unwrap();
    let rest = line.strip_prefix("// expect: ").expect("expect header");
    let (code, snippet) = rest.split_once(' ').unwrap();
    (code.to_string(), snippet.trim_matches('"').to_string())
}

#[test]
fn every_broken_model_gets_its_own_diagnostic_at_the_right_span() {
    let broken = files("tests/broken", "gpm");
    assert!(broken.len() >= 20, "at least 20 kinds of mistake");
    let mut codes = std::collections::BTreeSet::new();
    for path in &broken {
        let src = std::fs::read_to_string(path).unwrap();
        let (code, snippet) = expectation(&src);
        let err = gpmc::check("m.gpm", &src).expect_err(&format!("{} must fail", path.display()));
        let d = &err.diagnostics[0];
        assert_eq!(d.code, code, "{}: {}", path.display(), d.message);
        let under = &src[d.location.start..d.location.end];
        assert_eq!(
            under,
            snippet,
            "{}: span of `{}`",
            path.display(),
            d.message
        );
        assert!(
            !d.label.is_empty() && d.help.is_some(),
            "{}: label and help",
            path.display()
        );
        // The rendered report names the file, the code, and shows the line.
        let rendered = err.render();
        assert!(
            rendered.contains(&code) && rendered.contains("m.gpm"),
            "{rendered}"
        );
        codes.insert(code);
    }
    assert!(codes.len() >= 20, "distinct diagnostic codes: {codes:?}");
}

#[test]
fn cli_exits_one_on_a_broken_model_and_prints_json_diagnostics() {
    let path = root().join("tests/broken/03_unknown_name_typo.gpm");
    let out = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("did you mean `lengthscale`?"), "{err}");

    let out = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .args(["check", path.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "gpm::unknown_name");
    assert_eq!(d["location"]["line"], 9);
}

#[test]
fn cli_exits_two_on_a_missing_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpmc"))
        .args(["check", "/nonexistent/model.gpm"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
