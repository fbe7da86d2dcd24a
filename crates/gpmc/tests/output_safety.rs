//! Issue 50, item 2: nothing a command reads or another command wrote is deleted by writing an
//! output — `plot`/`predict` into a run's directory, a run into a directory holding its own
//! inputs, a marker of another format or a link to a marker are refused (exit 1), before any
//! work, and everything is still there afterwards.

use crate::workflow_support;
use std::path::Path;
use workflow_support::*;

/// The run's files are all still there and unchanged.
fn assert_run_intact(dir: &Path, run: &str, before: &[(String, Vec<u8>)]) {
    for (file, bytes) in before {
        let now = std::fs::read(dir.join(run).join(file))
            .unwrap_or_else(|e| panic!("{run}/{file} is gone: {e}"));
        assert_eq!(&now, bytes, "{run}/{file} changed");
    }
}

fn snapshot(dir: &Path, run: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join(run))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.iter().any(|(f, _)| f == "fit.json"), "{files:?}");
    files
}

fn refused(dir: &Path, line: &str, says: &str) {
    let o = gpmc_line(dir, line);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "gpmc {line}: {err}");
    // The message as one line (the terminal report wraps it behind `│`).
    let flat = err
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains(says), "gpmc {line}: {err}");
}

#[test]
fn no_command_deletes_a_run_or_an_input() {
    let dir = setup("output-safety");
    gpmc_ok(
        &dir,
        "infer m.gpm --data d.json --draws 50 --quiet --output run",
    );
    gpmc_ok(
        &dir,
        "infer m.gpm --data d.json --draws 50 --quiet --output other",
    );
    let run = snapshot(&dir, "run");
    let other = snapshot(&dir, "other");
    // plot and predict into the run they read.
    refused(
        &dir,
        "plot run --output run",
        "which this command reads: writing the output there would delete it",
    );
    refused(
        &dir,
        "predict run --data d.json --output run",
        "which this command reads",
    );
    // predict into another run: a run is replaced only by `gpmc infer`.
    refused(
        &dir,
        "predict run --data d.json --output other",
        "holds the output of `gpmc infer`, which `gpmc predict` does not replace",
    );
    refused(
        &dir,
        "plot run --output other",
        "which `gpmc plot` does not replace",
    );
    assert_run_intact(&dir, "run", &run);
    assert_run_intact(&dir, "other", &other);
    // A run whose output directory holds its own data or test data.
    std::fs::copy(dir.join("d.json"), dir.join("run/mydata.json")).unwrap();
    std::fs::copy(dir.join("d.json"), dir.join("run/mytest.json")).unwrap();
    refused(
        &dir,
        "infer m.gpm --data run/mydata.json --predict run/mytest.json --draws 20 --quiet --output run",
        "run/mydata.json, which this command reads",
    );
    assert!(dir.join("run/mydata.json").exists() && dir.join("run/mytest.json").exists());
    assert_run_intact(&dir, "run", &run);
    // ... or is a parent of the directory holding the model.
    std::fs::create_dir_all(dir.join("proj/models")).unwrap();
    std::fs::copy(dir.join("m.gpm"), dir.join("proj/models/m.gpm")).unwrap();
    refused(
        &dir,
        "infer proj/models/m.gpm --data d.json --draws 20 --quiet --output proj",
        "which this command reads",
    );
    assert!(dir.join("proj/models/m.gpm").exists());
    // What gpmc writes by default still works, and a rerun replaces its own kind.
    gpmc_ok(&dir, "plot run");
    gpmc_ok(&dir, "plot run");
    gpmc_ok(&dir, "predict run --data d.json");
    gpmc_ok(&dir, "predict run --data d.json");
    gpmc_ok(
        &dir,
        "infer m.gpm --data d.json --draws 20 --quiet --output other",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_gpmcs_own_marker_makes_a_directory_replaceable() {
    let dir = setup("output-marker");
    // A marker of a format gpmc never wrote.
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/notes.txt"), "keep").unwrap();
    std::fs::write(
        dir.join("mine/.gpmc-output"),
        "gpmc output directory, format 7\n",
    )
    .unwrap();
    refused(
        &dir,
        "infer m.gpm --data d.json --draws 20 --quiet --output mine",
        "was not made by gpmc",
    );
    // A link to a real marker.
    gpmc_ok(
        &dir,
        "infer m.gpm --data d.json --draws 20 --quiet --output run",
    );
    std::fs::remove_file(dir.join("mine/.gpmc-output")).unwrap();
    std::os::unix::fs::symlink(dir.join("run/.gpmc-output"), dir.join("mine/.gpmc-output"))
        .unwrap();
    refused(
        &dir,
        "infer m.gpm --data d.json --draws 20 --quiet --output mine",
        "was not made by gpmc",
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("mine/notes.txt")).unwrap(),
        "keep"
    );
    // An earlier gpmc's format-1 marker is a run's: `infer` replaces it, `plot` does not.
    std::fs::create_dir_all(dir.join("old")).unwrap();
    std::fs::write(
        dir.join("old/.gpmc-output"),
        "gpmc output directory, format 1\n",
    )
    .unwrap();
    refused(&dir, "plot run --output old", "does not replace");
    gpmc_ok(
        &dir,
        "infer m.gpm --data d.json --draws 20 --quiet --output old",
    );
    assert!(std::fs::read_to_string(dir.join("old/.gpmc-output"))
        .unwrap()
        .contains("format 2, written by `gpmc infer`"));
    let _ = std::fs::remove_dir_all(&dir);
}
