//! The commands that read a run's output directory: `gpmc plot`, `gpmc predict` and
//! `gpmc summary` (docs/cli.md).

use gpmc::output::Kind;
use std::process::ExitCode;

/// `gpmc plot`: trace, rank, predictive and ELBO figures of an output directory.
pub(crate) fn plot_command(
    dir: std::path::PathBuf,
    vars: Vec<String>,
    output: Option<std::path::PathBuf>,
) -> ExitCode {
    let files = match gpmc::plot::figures(&dir, &vars) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let out = output.unwrap_or_else(|| dir.join("plots"));
    // The figures directory is replaced as a whole, like a run's output (and marked
    // as gpmc's, so that a later `gpmc plot` may replace it).
    if let Err(e) = gpmc::output::write_all(&out, Kind::Plots, &[&dir], &files) {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    say!("wrote {} to {}", names.join(", "), out.display());
    ExitCode::SUCCESS
}

/// `gpmc predict`: predictions at new data from a saved fit.
pub(crate) fn predict_command(
    fit: std::path::PathBuf,
    data: Vec<std::path::PathBuf>,
    output: Option<std::path::PathBuf>,
) -> ExitCode {
    let (csv, metrics) = match gpmc::fit::predict(&fit, &data) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let dir = output.unwrap_or_else(|| fit.join("predict"));
    let summary = serde_json::json!({
        "fit": fit.display().to_string(),
        "data": data.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "test": metrics,
    });
    let files = vec![
        ("predictions.csv".to_string(), csv),
        (
            "summary.json".to_string(),
            serde_json::to_string_pretty(&summary).expect("summary JSON"),
        ),
    ];
    let reads: Vec<&std::path::Path> = std::iter::once(fit.as_path())
        .chain(data.iter().map(|p| p.as_path()))
        .collect();
    if let Err(e) = gpmc::output::write_all(&dir, Kind::Predictions, &reads, &files) {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    say!("test: {metrics}");
    say!("wrote predictions.csv, summary.json to {}", dir.display());
    ExitCode::SUCCESS
}

/// `gpmc summary`: the summary table of an output directory again.
pub(crate) fn summary_command(dir: &std::path::Path, options: &gpmc::summary::Options) -> ExitCode {
    match gpmc::summary::summarize_dir(dir, options) {
        Ok(text) => {
            say!("{}", text.trim_end());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
