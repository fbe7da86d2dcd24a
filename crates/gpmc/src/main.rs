//! The `gpmc` command line: `gpmc check MODEL.gpm [--format text|json]`.

#![cfg_attr(not(test), warn(clippy::unwrap_used))]
mod cli_flags;
mod interrupt;

use clap::{Parser, Subcommand, ValueEnum};
use cli_flags::MethodFlags;
use gpmc::method::Method;
use gpmc::output::Kind;
use std::process::ExitCode;

/// mimalloc keeps the N × N matrices a sweep frees for the next one; glibc gave them back to the
/// system and faulted them in again (full-Bayes GP classifier, N = 500, one chain: 9.4 s → 7.2 s
/// wall, 1.95 s → 0.08 s in the kernel).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Compile a model and run inference on data; write draws and a summary.
    Infer(InferArgs),
    /// Predict at new inputs from a saved fit (its output directory: Gibbs or NUTS draws, or a
    /// variational q), without rerunning it: predictive means and sds, class probabilities;
    /// scored where responses are given.
    Predict {
        /// The output directory of `gpmc infer`.
        fit: std::path::PathBuf,
        /// New data (same layout as the training data; responses optional).
        #[arg(long, required = true, num_args = 1..)]
        data: Vec<std::path::PathBuf>,
        /// Where to write predictions.csv and summary.json (default: FIT/predict).
        #[arg(long)]
        output: Option<std::path::PathBuf>,
    },
    /// Draw a run's figures as SVG: trace and rank plots (Gibbs), the predictive band over a
    /// one-dimensional input, the ELBO trace (variational runs).
    Plot {
        /// The output directory of `gpmc infer`.
        dir: std::path::PathBuf,
        /// Variables of the trace and rank plots (default: lp__ and the four largest R̂).
        #[arg(long, value_delimiter = ',')]
        vars: Vec<String>,
        /// Where to write the SVG files (default: DIR/plots).
        #[arg(long)]
        output: Option<std::path::PathBuf>,
    },
    /// Summarise a run from its output directory (stansummary's statistics for Gibbs draws;
    /// the fit and marginals of a variational run).
    Summary {
        /// The output directory of `gpmc infer`.
        dir: std::path::PathBuf,
        /// Every variable (default: the first 20).
        #[arg(long)]
        all: bool,
        /// Significant figures.
        #[arg(long, default_value_t = 4)]
        sig_figs: usize,
        /// Include the pointwise columns (log_lik, y_rep).
        #[arg(long)]
        pointwise: bool,
    },
}

/// Print a line on stdout; a closed stdout (`gpmc infer … | head`) is not an error: the run's
/// files are its output, the lines a courtesy.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

mod output_commands;
use output_commands::{plot_command, predict_command, summary_command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { model, format } => check(&model, format),
        Command::Plot { dir, vars, output } => plot_command(dir, vars, output),
        Command::Predict { fit, data, output } => predict_command(fit, data, output),
        Command::Summary {
            dir,
            all,
            sig_figs,
            pointwise,
        } => {
            let options = gpmc::summary::Options {
                all,
                sig_figs: sig_figs.clamp(1, 15),
                pointwise,
            };
            summary_command(&dir, &options)
        }
        Command::Infer(args) => infer_command(args),
    }
}

/// `gpmc infer`'s arguments.
#[derive(clap::Args)]
struct InferArgs {
    /// The model file.
    model: std::path::PathBuf,
    /// Data files (JSON in the CmdStan layout, or CSV); several are merged.
    #[arg(long, required = true, num_args = 1..)]
    data: Vec<std::path::PathBuf>,
    /// Inference method.
    #[arg(long, value_enum, default_value_t = Method::Gibbs)]
    method: Method,
    /// Random seed (a run is reproducible bit for bit).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory (default: out/<model name>).
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// Test data (same layout as --data, responses included): writes predictions.csv and
    /// test metrics (log predictive density, error rate) into summary.json.
    #[arg(long, num_args = 1..)]
    predict: Vec<std::path::PathBuf>,
    /// Do not show a progress bar.
    #[arg(long)]
    quiet: bool,
    /// Options of one method.
    #[command(flatten)]
    flags: Box<MethodFlags>,
    /// Use the generic update for every likelihood factor, even where an augmentation
    /// exists (to compare the two on one model); a heavy-tailed latent prior keeps its
    /// scale mixture.
    #[arg(long)]
    generic: bool,
    /// Gibbs: keep the elliptical and slice steps where the schedule would put a NUTS
    /// step (a dense block with the generic update whose prior's scales are sampled).
    #[arg(long)]
    no_nuts_step: bool,
}

/// `gpmc infer`: the method's configuration from the flags, then the run.
fn infer_command(args: InferArgs) -> ExitCode {
    let InferArgs {
        model,
        data,
        method,
        seed,
        output,
        predict,
        quiet,
        flags,
        generic,
        no_nuts_step,
    } = args;
    if let Err(message) = flags.check(method) {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
    // `check` has refused controls out of range.
    let nuts_control = flags.nuts_control().unwrap_or_default();
    let variational_config = variational_method(method, &flags, seed);
    let nuts_flags = flags.any_nuts_control();
    let (log_lik, ppc, augmented) = (flags.log_lik, flags.ppc, flags.augmented);
    // A Stan program the augmentation pipeline cannot take runs under NUTS on its
    // whole log density (gpmc::density).
    match density_route(&model, (generic, !no_nuts_step)) {
        Err(code) => return code,
        Ok(Some((name, source, dc))) => {
            if !method.is_sampler() {
                eprintln!("error: this Stan program runs under NUTS on its whole log density (`gpmc check` says why); --method {} needs the Gaussian-latent structure it lacks: use --method nuts", method.name());
                return ExitCode::from(2);
            }
            if !predict.is_empty() || log_lik || ppc || flags.init.is_some() {
                eprintln!("error: --predict, --log-lik, --ppc and --init are not available yet for a Stan program run on its whole log density");
                return ExitCode::from(2);
            }
            // NUTS on the whole log density: Stan's 1 000 warm-up iterations.
            let config = sampler_config(&flags, seed, nuts_control, 1000);
            let dir = output.unwrap_or_else(|| default_output(&model));
            return infer_density(&name, &source, &dc, &data, &dir, &config, quiet);
        }
        Ok(None) => {}
    }
    if nuts_flags && method != Method::Nuts {
        eprintln!("error: --adapt-delta, --max-treedepth and --metric control NUTS; this model runs --method {} (use --method nuts for NUTS)", method.name());
        return ExitCode::from(2);
    }
    // Model, data and test data are read and checked before any work.
    let opened = match open_run(&model, &data, &predict, output, (generic, !no_nuts_step)) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let Some(variational_config) = variational_config else {
        // NUTS adapts its step size and mass matrix in warm-up: Stan's 1 000.
        let warmup = if method == Method::Nuts { 1000 } else { 200 };
        let config = sampler_config(&flags, seed, nuts_control, warmup);
        let pointwise = gpm_runtime::gibbs::Pointwise { log_lik, ppc };
        let run = GibbsRun {
            config,
            pointwise,
            init: flags.init.clone(),
            quiet,
            nuts: method == Method::Nuts,
            augmented,
        };
        return infer(opened, run);
    };
    let run = VariationalRun {
        quiet,
        q: gpmc::infer::QDraws {
            pointwise: gpm_runtime::gibbs::Pointwise { log_lik, ppc },
            draws: flags.draws,
            seed,
        },
    };
    variational(opened, variational_config, run)
}

/// A sampler's chains, warm-up (`default_warmup` unless given), draws and thinning from its
/// flags.
fn sampler_config(
    flags: &MethodFlags,
    seed: u64,
    nuts: gpm_runtime::nuts::NutsControl,
    default_warmup: usize,
) -> gpm_runtime::gibbs::GibbsConfig {
    gpm_runtime::gibbs::GibbsConfig {
        first_chain: 0,
        chains: flags.chains.unwrap_or(4),
        warmup: flags.warmup.unwrap_or(default_warmup),
        draws: flags.draws.unwrap_or(1000),
        thin: flags.thin.unwrap_or(1),
        seed,
        nuts,
    }
}

/// The variational method's settings from its flags (the defaults are its config's: one
/// place, which Python reads too); None for the samplers.
fn variational_method(
    method: Method,
    flags: &MethodFlags,
    seed: u64,
) -> Option<gpmc::variational::Settings> {
    method.variational(&gpmc::method::VariationalOptions {
        iterations: flags.iterations.unwrap_or(1000),
        seed,
        svi: gpm_runtime::svi::SviOptions {
            batch: flags.batch,
            forgetting: flags.forgetting,
            delay: flags.delay,
            hyper_rate: flags.hyper_rate,
            class_batch: flags.class_batch,
        },
        svi_reports: 20,
        particles: flags.particles,
        precondition: flags.precondition,
        particle_map: flags.particle_map,
    })
}

/// A model read, checked and bound to its data, with the run's output directory.
struct Opened {
    /// The model file, as given.
    model_file: std::path::PathBuf,
    /// The data files, as given (a saved fit names them).
    data_files: Vec<std::path::PathBuf>,
    /// The test data files (`--predict`).
    test_files: Vec<std::path::PathBuf>,
    /// Whether every factor takes the generic update (`--generic`).
    generic: bool,
    /// Whether the Gibbs sweep may take NUTS steps (not `--no-nuts-step`).
    nuts_step: bool,
    name: String,
    source: String,
    checked: gpmc::Checked,
    d: gpm_runtime::data::Data,
    test: Option<gpm_runtime::data::Data>,
    dir: std::path::PathBuf,
}

impl Opened {
    /// The files this run reads, which its output directory must not hold.
    fn reads(&self) -> Vec<&std::path::Path> {
        std::iter::once(self.model_file.as_path())
            .chain(self.data_files.iter().map(|p| p.as_path()))
            .chain(self.test_files.iter().map(|p| p.as_path()))
            .collect()
    }

    /// Print an inference error with this run's model source; its exit code ([`report`]).
    fn report(&self, e: gpmc::infer::InferError) -> ExitCode {
        report(&self.name, &self.source, e)
    }
}

/// Read and check the model and load its data and test data (before any work, so that a bad
/// test file fails fast); the output directory defaults to `out/<model name>`. A failure is
/// printed here and its exit code returned.
fn open_run(
    path: &std::path::Path,
    data: &[std::path::PathBuf],
    predict: &[std::path::PathBuf],
    output: Option<std::path::PathBuf>,
    (generic, nuts_step): (bool, bool),
) -> Result<Opened, ExitCode> {
    let (name, source) = read_model(path)?;
    let checked = gpmc::check_with_options(&name, &source, generic, nuts_step).map_err(|f| {
        print_failure(&f);
        ExitCode::from(1)
    })?;
    let (d, test) = gpmc::data::load_train_and_test(&checked.model, data, predict)
        .map_err(|e| report(&name, &source, e.into()))?;
    let dir = output.unwrap_or_else(|| default_output(path));
    Ok(Opened {
        model_file: path.to_path_buf(),
        data_files: data.to_vec(),
        test_files: predict.to_vec(),
        generic,
        nuts_step,
        name,
        source,
        checked,
        d,
        test,
        dir,
    })
}

/// `out/<model name>`, where a run writes when `--output` is not given.
fn default_output(path: &std::path::Path) -> std::path::PathBuf {
    std::path::Path::new("out").join(
        path.file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "model".into()),
    )
}

/// For a Stan program the augmentation pipeline refuses (or cannot schedule): the program
/// compiled for NUTS on its whole log density; `None` for every other model. A program
/// neither path takes is printed as refused (exit 1).
fn density_route(
    path: &std::path::Path,
    (generic, nuts_step): (bool, bool),
) -> Result<Option<(String, String, gpmc::density::DensityChecked)>, ExitCode> {
    if !gpmc::is_stan(&path.to_string_lossy()) {
        return Ok(None);
    }
    let (name, source) = read_model(path)?;
    let outcome = gpmc::check_with_options(&name, &source, generic, nuts_step);
    let Some(latent) = stan_refusal(&name, &source, &outcome) else {
        return Ok(None);
    };
    match gpmc::density::check(&name, &source, &latent) {
        Ok(dc) => Ok(Some((name, source, dc))),
        Err(f) => {
            print_failure(&f);
            Err(ExitCode::from(1))
        }
    }
}

/// Why the augmentation pipeline does not take a Stan program (its diagnostics, or its
/// schedule's error); `None` when it does, or for a `.gpm` model.
fn stan_refusal(
    name: &str,
    source: &str,
    outcome: &Result<gpmc::Checked, gpmc::Failure>,
) -> Option<gpmc::Failure> {
    if !gpmc::is_stan(name) {
        return None;
    }
    match outcome {
        Ok(c) => c.schedule.as_ref().err().map(|e| {
            gpmc::Failure::new(
                name,
                source,
                vec![gpmc::Diagnostic::plain("gpm::schedule", e.to_string())],
            )
        }),
        Err(f) => Some(f.clone()),
    }
}

/// `gpmc infer` on a Stan program's whole log density: NUTS, then the chain files and
/// `summary.json` written as every run writes them.
fn infer_density(
    name: &str,
    source: &str,
    dc: &gpmc::density::DensityChecked,
    data: &[std::path::PathBuf],
    dir: &std::path::Path,
    config: &gpm_runtime::gibbs::GibbsConfig,
    quiet: bool,
) -> ExitCode {
    let report = |e| report(name, source, e);
    // Nothing this run reads may be inside what it replaces: the program and the data.
    let reads: Vec<&std::path::Path> = std::iter::once(std::path::Path::new(name))
        .chain(data.iter().map(|p| p.as_path()))
        .collect();
    let data = match gpmc::data::json_object(data) {
        Ok(d) => d,
        Err(e) => return report(e.into()),
    };
    let staging = match gpmc::output::Staging::create(dir, Kind::Run, &reads) {
        Ok(s) => s,
        Err(e) => return report(e.into()),
    };
    let stop = interrupt::stop_on_signal("the draws made so far are written");
    let total = (config.warmup + config.draws * config.thin) as u64 * config.chains as u64;
    let feedback = gpmc::feedback::Feedback::install(quiet);
    let progress = |_: usize, _: usize| feedback.sweep(total, true);
    let run = gpmc::density::run(dc, &data, config, &progress, &stop);
    interrupt::work_done();
    let run = match run {
        Ok(r) => r,
        Err(e) => return report(e),
    };
    feedback.finish();
    if let Err(e) = staging.finish(&gpmc::density::files(dc, &run, config)) {
        return report(e.into());
    }
    say!("method: NUTS on the whole log density (the augmentation pipeline does not take this program: `gpmc check` says why)");
    say!("{}", gpmc::density::table(&run, 12).trim_end());
    for w in gpmc::density::warnings(&run) {
        say!("warning: {w}");
    }
    chains_written(
        run.chains.len(),
        dir,
        (run.interrupted, run.draws, config.draws),
    )
}

/// Print an inference error with the model's source; its exit code: 130 for a run interrupted
/// before it kept a draw, 1 otherwise.
fn report(name: &str, source: &str, e: gpmc::infer::InferError) -> ExitCode {
    let code = if matches!(e, gpmc::infer::InferError::Interrupted(_)) {
        interrupt::exit_code()
    } else {
        1
    };
    let r =
        miette::Report::new(e).with_source_code(miette::NamedSource::new(name, source.to_string()));
    eprintln!("{r:?}");
    ExitCode::from(code)
}

/// The settings of a variational run from the command line.
struct VariationalRun {
    quiet: bool,
    /// Draws from q written as `chain-1.csv` (CAVI and GPF).
    q: gpmc::infer::QDraws,
}

fn variational(
    opened: Opened,
    method: gpmc::variational::Settings,
    run: VariationalRun,
) -> ExitCode {
    let VariationalRun { quiet, q } = run;
    let report = |e| opened.report(e);
    let (checked, d, test, dir) = (&opened.checked, &opened.d, &opened.test, &opened.dir);
    // The output directory is checked and staged before the fit.
    let staging = match gpmc::output::Staging::create(dir, Kind::Run, &opened.reads()) {
        Ok(s) => s,
        Err(e) => return report(e.into()),
    };
    let mut files = Vec::new();
    let feedback = gpmc::feedback::Feedback::install(quiet);
    // Ctrl-C or SIGTERM ends the fit within an iteration (exit 130, nothing written: a fit
    // has no partial answer); a second signal quits at once.
    let stop = interrupt::stop_on_signal("nothing is written");
    let fitted = gpm_runtime::stop::scoped(stop, || {
        fit_variational(checked, d, method, &feedback, &mut files)
    });
    interrupt::work_done();
    let outcome = match fitted {
        Ok(x) => x,
        Err(e) => return report(e),
    };
    let (mut summary, blocks, hv, hypers) = outcome;
    for (n, v, how) in &hypers {
        say!("hyperparameter {n} = {v} ({how})");
    }
    // Draws from q in the layout of Gibbs draws, streamed to chain-1.csv.
    let method = summary["method"]
        .as_str()
        .unwrap_or("variational")
        .to_string();
    let chain = staging.path("chain-1.csv");
    let drawn = match gpmc::infer::write_draws_from_q(checked, d, &hv, &blocks, &q, &method, &chain)
    {
        Ok(n) => n,
        Err(e) => return report(e),
    };
    summary["draws_from_q"] = serde_json::json!(drawn);
    draws_note(q.draws, drawn);
    if blocks
        .iter()
        .any(|b| matches!(b, gpm_runtime::cavi::BlockPosterior::Sparse(_)))
    {
        match gpmc::infer::inducing_csv(checked, d, &hv, &blocks) {
            Ok(csv) => files.push(("inducing.csv".to_string(), csv)),
            Err(e) => return report(e),
        }
    }
    if let Some(test) = &test {
        let prediction = gpmc::infer::predict_variational(checked, d, test, &hv, &blocks);
        if let Err(e) = add_predictions(prediction, &mut summary, &mut files) {
            return report(e);
        }
    }
    files.push((
        "summary.json".to_string(),
        serde_json::to_string_pretty(&summary).expect("summary JSON"),
    ));
    // What `gpmc predict OUT_DIR` needs to reuse q.
    let method = summary["method"]
        .as_str()
        .unwrap_or("variational")
        .to_string();
    files.extend(gpmc::fit::files(
        checked,
        &opened.data_files,
        d,
        &hv,
        q.seed,
        (opened.generic, opened.nuts_step),
        gpmc::fit::SavedPosterior::Q {
            method: &method,
            blocks: &blocks,
        },
    ));
    if let Err(e) = staging.finish(&files) {
        return report(e.into());
    }
    let names: Vec<&str> = (drawn > 0)
        .then_some("chain-1.csv")
        .into_iter()
        .chain(files.iter().map(|f| f.0.as_str()))
        .collect();
    say!("wrote {} to {}", names.join(", "), dir.display());
    ExitCode::SUCCESS
}

/// What a variational fit leaves: its summary, each block's q, the hyperparameter values and
/// how each was set.
type Fitted = (
    serde_json::Value,
    Vec<gpm_runtime::cavi::BlockPosterior>,
    gpm_runtime::kernels::HyperValues,
    Vec<(String, f64, String)>,
);

/// Run one variational method, print its outcome, and add its posterior file to `files`.
fn fit_variational(
    checked: &gpmc::Checked,
    d: &gpm_runtime::data::Data,
    method: gpmc::variational::Settings,
    feedback: &gpmc::feedback::Feedback,
    files: &mut Vec<(String, String)>,
) -> Result<Fitted, gpmc::infer::InferError> {
    let fit = gpmc::variational::fit(checked, d, &method, &mut |p, total| feedback.svi(p, total))?;
    feedback.finish();
    say!("{}", fit.headline);
    for w in fit.summary["warnings"].as_array().into_iter().flatten() {
        say!("warning: {}", w.as_str().unwrap_or_default());
    }
    if let Some(latents) = &fit.latents {
        posterior_file(latents, files);
    }
    Ok((fit.summary, fit.blocks, fit.values, fit.hypers))
}

/// A prediction's file and metrics added to a run's output (the metrics printed too).
fn add_predictions(
    prediction: Result<(String, serde_json::Value), gpmc::infer::InferError>,
    summary: &mut serde_json::Value,
    files: &mut Vec<(String, String)>,
) -> Result<(), gpmc::infer::InferError> {
    let (csv, metrics) = prediction?;
    say!("test: {metrics}");
    summary["test"] = metrics;
    files.push(("predictions.csv".into(), csv));
    Ok(())
}

/// A variational posterior: the first entries of the first latents' means ± sds printed, every
/// entry's written to `posterior.csv`.
fn posterior_file(
    latents: &[(String, nalgebra::DVector<f64>, nalgebra::DVector<f64>)],
    files: &mut Vec<(String, String)>,
) {
    files.push((
        "posterior.csv".to_string(),
        gpmc::infer::posterior_csv(latents),
    ));
    for (n, m, v) in latents.iter().take(3) {
        let k = m.len().min(5);
        let cells: Vec<String> = (0..k)
            .map(|i| format!("{:.3} ± {:.3}", m[i], v[i].max(0.0).sqrt()))
            .collect();
        say!(
            "  {n}: {}{}",
            cells.join(", "),
            if m.len() > k { ", ..." } else { "" }
        );
    }
}

fn read_model(path: &std::path::Path) -> Result<(String, String), ExitCode> {
    use std::io::Read;
    let name = path.display().to_string();
    // Read at most one byte past the size limit: a larger file gets the limit's diagnostic
    // without being read whole (a 1.3 GB mutated model aborted the fuzz suite).
    let limit = gpm_syntax::limits::MAX_SOURCE_BYTES as u64 + 1;
    let read = std::fs::File::open(path).and_then(|f| {
        let mut bytes = Vec::new();
        f.take(limit).read_to_end(&mut bytes)?;
        match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) if e.as_bytes().len() as u64 >= limit => {
                Ok(String::from_utf8_lossy(e.as_bytes()).into_owned())
            }
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )),
        }
    });
    match read {
        Ok(s) => Ok((name, s)),
        Err(e) => {
            eprintln!("error: cannot read `{name}`: {e}");
            Err(ExitCode::from(2))
        }
    }
}

/// The settings of a Gibbs run from the command line.
struct GibbsRun {
    config: gpm_runtime::gibbs::GibbsConfig,
    pointwise: gpm_runtime::gibbs::Pointwise,
    init: Option<std::path::PathBuf>,
    quiet: bool,
    nuts: bool,
    augmented: bool,
}

fn infer(opened: Opened, run: GibbsRun) -> ExitCode {
    let GibbsRun {
        config,
        pointwise,
        init,
        quiet,
        nuts,
        augmented,
    } = run;
    let report = |e| opened.report(e);
    let (checked, d, test, dir) = (&opened.checked, &opened.d, &opened.test, &opened.dir);
    let init_path = init;
    let init = match &init_path {
        Some(path) => match gpmc::init::load(&checked.model, d, path) {
            Ok(i) => i,
            Err(e) => return report(e.into()),
        },
        None => gpm_runtime::gibbs::Init::default(),
    };
    // Ctrl-C or SIGTERM: the chains finish their sweep and the draws so far are written like
    // a finished run's (marked interrupted, exit 130); a second signal quits at once.
    let stop = interrupt::stop_on_signal("the draws made so far are written");
    let extras = gpmc::infer::GibbsExtras {
        pointwise,
        init,
        stop: Some(std::sync::Arc::clone(&stop)),
        nuts,
        augmented,
    };
    // The output directory is checked and staged before any work; the chains write into it
    // as they sample (memory flat in the number of draws), and it replaces `dir` at the end.
    let mut reads = opened.reads();
    reads.extend(init_path.as_deref());
    let staging = match gpmc::output::Staging::create(dir, Kind::Run, &reads) {
        Ok(s) => s,
        Err(e) => return report(e.into()),
    };
    let total = (config.warmup + config.draws * config.thin) as u64 * config.chains as u64;
    let feedback = gpmc::feedback::Feedback::install(quiet);
    let progress = |_: usize, _: usize| feedback.sweep(total, nuts);
    // The phases before sampling (type-II ML) poll the same flag (`gpm_runtime::stop`).
    let result = gpm_runtime::stop::scoped(stop, || {
        gpmc::infer::run_gibbs_streamed(checked, d, &config, extras, &progress, &staging)
    });
    interrupt::work_done();
    let result = match result {
        Ok(r) => r,
        Err(e) => return report(e),
    };
    feedback.finish();
    let mut files = Vec::new();
    let mut summary = gpmc::infer::summary_json(checked, &result, &config);
    if let Some(test) = &test {
        // From the draws as written, as `gpmc predict` reads them later: the same numbers.
        let prediction =
            gpmc::fit::draws_in(staging.partial_dir(), checked, d, &result.values, pointwise)
                .map_err(|e| gpmc::infer::InferError::Io(e.to_string()))
                .and_then(|draws| {
                    gpmc::infer::predict_with(checked, d, test, &draws, config.seed, usize::MAX)
                });
        if let Err(e) = add_predictions(prediction, &mut summary, &mut files) {
            return report(e);
        }
    }
    files.push((
        "summary.json".into(),
        serde_json::to_string_pretty(&summary).expect("summary JSON"),
    ));
    // What `gpmc predict OUT_DIR` needs to reuse the draws.
    files.extend(gpmc::fit::files(
        checked,
        &opened.data_files,
        d,
        &result.values,
        config.seed,
        (opened.generic, opened.nuts_step),
        gpmc::fit::SavedPosterior::Draws(pointwise),
    ));
    if let Err(e) = staging.finish(&files) {
        return report(e.into());
    }
    say_gibbs_run(checked, &result);
    chains_written(
        result.times.len(),
        dir,
        (result.interrupted, result.draws, config.draws),
    )
}

/// The end of a sampling run: where its chain files went and, for a run interrupted with
/// `kept` of `asked` draws per chain, that it was (the signal's exit code).
fn chains_written(
    chains: usize,
    dir: &std::path::Path,
    (interrupted, kept, asked): (bool, usize, usize),
) -> ExitCode {
    say!(
        "wrote {chains} chain files and summary.json to {}",
        dir.display()
    );
    if interrupted {
        eprintln!(
            "interrupted: {kept} draws per chain written (of {asked}), marked `\"interrupted\": true` in summary.json"
        );
        return ExitCode::from(interrupt::exit_code());
    }
    ExitCode::SUCCESS
}

/// What a Gibbs run did, on stdout: each factor's augmentation, each hyperparameter's value and
/// how it was set, the jitter added, the summary table and the warnings.
fn say_gibbs_run(checked: &gpmc::Checked, result: &gpmc::infer::InferResult) {
    for p in &checked.plans {
        if p.generic.is_some() {
            say!(
                "factor #{}: {} (elliptical slice sampling on the log-density as written)",
                p.factor + 1,
                p.form
            );
            continue;
        }
        say!(
            "factor #{}: {} (certified, max relative error {:.1e})",
            p.factor + 1,
            p.form,
            p.certificate.max_rel_error
        );
    }
    for (n, v, how) in &result.hypers {
        if how.starts_with("sampled") {
            // Its posterior is in the table below; the value here is only where it started.
            say!("hyperparameter {n} (start {v}): {how}");
        } else {
            say!("hyperparameter {n} = {v} ({how})");
        }
    }
    if result.jitter > 0.0 {
        say!(
            "note: jitter {:.1e} was added to a GP prior covariance to factor it",
            result.jitter
        );
    }
    say!("{}", gpmc::infer::summary_table(result, 12).trim_end());
    for w in gpmc::infer::gibbs_warnings(checked, result) {
        say!("warning: {w}");
    }
}

/// A model's diagnostics on stderr: each rendered with its source (at most
/// `gpmc::diagnostics::MAX_RENDERED`), then the count.
fn print_failure(f: &gpmc::Failure) {
    // Rendered into one buffer and written at once (stderr is unbuffered: a report written
    // character by character is a system call per character).
    use std::fmt::Write;
    let mut out = String::new();
    for r in f.reports() {
        let _ = writeln!(out, "{r:?}");
    }
    if f.unrendered() > 0 {
        let _ = writeln!(out, "{}", f.more_line());
    }
    let _ = writeln!(out, "{f}");
    eprint!("{out}");
}

fn check(path: &std::path::Path, format: Format) -> ExitCode {
    // An unreadable file is a usage error in both formats (exit 2, no JSON; docs/cli.md).
    let (name, source) = match read_model(path) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let outcome = gpmc::check(&name, &source);
    if let Some(latent) = stan_refusal(&name, &source, &outcome) {
        // A Stan program the augmentation pipeline refuses: NUTS on its whole log density.
        let density = gpmc::density::check(&name, &source, &latent);
        match (density, format) {
            (Ok(dc), Format::Text) => say!("{}", gpmc::density::text(&dc).trim_end()),
            (Ok(dc), Format::Json) => say!(
                "{}",
                serde_json::to_string_pretty(&gpmc::density::json(&dc)).unwrap_or_default()
            ),
            (Err(f), Format::Text) => {
                print_failure(&f);
                return ExitCode::from(1);
            }
            (Err(f), Format::Json) => {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&gpmc::report::json_failure(&f))
                        .unwrap_or_default()
                );
                return ExitCode::from(1);
            }
        }
        return ExitCode::SUCCESS;
    }
    match outcome {
        Ok(c) => {
            match format {
                Format::Text => say!("{}", gpmc::report::text(&c).trim_end()),
                Format::Json => say!(
                    "{}",
                    serde_json::to_string_pretty(&gpmc::report::json(&c)).expect("JSON of a model")
                ),
            }
            ExitCode::SUCCESS
        }
        Err(f) => {
            match format {
                Format::Text => print_failure(&f),
                Format::Json => say!(
                    "{}",
                    serde_json::to_string_pretty(&gpmc::report::json_failure(&f))
                        .expect("JSON of diagnostics")
                ),
            }
            ExitCode::from(1)
        }
    }
}

/// What a variational run says of its draws from q when it wrote fewer than asked by default:
/// none asked for (`--draws 0`), none on a model too wide, or fewer for wide rows.
fn draws_note(asked: Option<usize>, drawn: usize) {
    if asked == Some(0) {
        eprintln!("note: no draws from q written (--draws 0); q itself is in fit.json, which `gpmc predict` and `gpmc summary` read");
    } else if drawn == 0 {
        eprintln!(
            "note: no draws from q written (more than {} latent values per draw; --draws N writes them)",
            gpmc::infer::Q_DRAWS_WIDEST
        );
    } else if asked.is_none() && drawn < 1000 {
        eprintln!(
            "note: {drawn} draws from q written to chain-1.csv (rows are wide; --draws N for more)"
        );
    }
}
