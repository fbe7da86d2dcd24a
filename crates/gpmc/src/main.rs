//! The `gpmc` command line: `gpmc check MODEL.gpm [--format text|json]`.

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "gpmc",
    version,
    about = "The gpmc compiler: automatic augmentation for Gaussian latent models"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and check a model; print its summary.
    Check {
        /// The model file.
        model: std::path::PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { model, format } => check(&model, format),
    }
}

fn check(path: &std::path::Path, format: Format) -> ExitCode {
    let name = path.display().to_string();
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot read `{name}`: {e}");
            return ExitCode::from(2);
        }
    };
    match gpmc::check(&name, &source) {
        Ok(c) => {
            match format {
                Format::Text => print!("{}", gpmc::report::text(&c)),
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&gpmc::report::json(&c)).expect("JSON of a model")
                ),
            }
            ExitCode::SUCCESS
        }
        Err(f) => {
            match format {
                Format::Text => {
                    for r in f.reports() {
                        eprintln!("{r:?}");
                    }
                    eprintln!("{f}");
                }
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&gpmc::report::json_failure(&f))
                        .expect("JSON of diagnostics")
                ),
            }
            ExitCode::from(1)
        }
    }
}
