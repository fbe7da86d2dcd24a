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
    /// Compile a model and run inference on data; write draws and a summary.
    Infer {
        /// The model file.
        model: std::path::PathBuf,
        /// Data files (JSON in the CmdStan layout, or CSV); several are merged.
        #[arg(long, required = true, num_args = 1..)]
        data: Vec<std::path::PathBuf>,
        /// Inference method.
        #[arg(long, value_enum, default_value_t = Method::Gibbs)]
        method: Method,
        /// Number of chains (run in parallel).
        #[arg(long, default_value_t = 4)]
        chains: usize,
        /// Kept draws per chain.
        #[arg(long, default_value_t = 1000)]
        draws: usize,
        /// Warm-up sweeps per chain.
        #[arg(long, default_value_t = 200)]
        warmup: usize,
        /// Keep every n-th sweep.
        #[arg(long, default_value_t = 1)]
        thin: usize,
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
        /// SVI: minibatch size.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
        /// SVI: number of minibatch iterations; CAVI: at most this many iterations.
        #[arg(long, default_value_t = 1000)]
        iterations: usize,
        /// SVI: forgetting rate κ of the step schedule ρ_t = (t + τ)^(−κ), in (0.5, 1].
        #[arg(long, default_value_t = 0.6)]
        forgetting: f64,
        /// SVI: delay τ of the step schedule.
        #[arg(long, default_value_t = 1.0)]
        delay: f64,
        /// SVI: Adam step size on log θ for `learn()` kernel hyperparameters.
        #[arg(long, default_value_t = 0.01)]
        hyper_rate: f64,
        /// SVI, logistic-softmax: non-label classes sampled per observation (0: all classes).
        #[arg(long, default_value_t = 0)]
        class_batch: usize,
        /// Use the generic update for every likelihood factor, even where an augmentation
        /// exists (to compare the two on one model).
        #[arg(long)]
        generic: bool,
        /// GPF: number of particles (default: one more than the largest block, at most 256).
        #[arg(long)]
        particles: Option<usize>,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum Method {
    /// Blocked Gibbs sampling.
    Gibbs,
    /// Closed-form coordinate-ascent variational inference (full batch).
    Cavi,
    /// Stochastic CAVI: minibatch natural-gradient steps on sparse GPs.
    Svi,
    /// Gaussian particle flow: a Gaussian q from the log-likelihood's gradient, any
    /// differentiable model (thesis ch. 6).
    Gpf,
}

/// A variational method with its settings.
enum Variational {
    Cavi { max_iter: usize },
    Svi(gpm_runtime::svi::SviConfig),
    Gpf(gpm_runtime::gpf::GpfConfig),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { model, format } => check(&model, format),
        Command::Infer {
            model,
            data,
            method,
            chains,
            draws,
            warmup,
            thin,
            seed,
            output,
            predict,
            quiet,
            batch,
            iterations,
            forgetting,
            delay,
            hyper_rate,
            class_batch,
            generic,
            particles,
        } => {
            let config = gpm_runtime::gibbs::GibbsConfig {
                chains,
                warmup,
                draws,
                thin,
                seed,
            };
            let method = match method {
                Method::Gibbs => {
                    return infer(&model, &data, &predict, config, output, quiet, generic)
                }
                Method::Cavi => Variational::Cavi {
                    max_iter: iterations.max(1),
                },
                Method::Svi => Variational::Svi(gpm_runtime::svi::SviConfig {
                    batch,
                    iterations,
                    forgetting,
                    delay,
                    seed,
                    report_every: (iterations / 20).max(1),
                    hyper_rate,
                    class_batch,
                }),
                Method::Gpf => Variational::Gpf(gpm_runtime::gpf::GpfConfig {
                    particles,
                    max_iter: iterations.max(1),
                    seed,
                    ..Default::default()
                }),
            };
            variational(&model, &data, &predict, method, output, generic)
        }
    }
}

fn variational(
    path: &std::path::Path,
    data: &[std::path::PathBuf],
    predict: &[std::path::PathBuf],
    method: Variational,
    output: Option<std::path::PathBuf>,
    generic: bool,
) -> ExitCode {
    let (name, source) = match read_model(path) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let checked = match gpmc::check_with(&name, &source, generic) {
        Ok(c) => c,
        Err(f) => {
            for r in f.reports() {
                eprintln!("{r:?}");
            }
            return ExitCode::from(1);
        }
    };
    let report = |e: gpmc::infer::InferError| {
        let r = miette::Report::new(e)
            .with_source_code(miette::NamedSource::new(name.clone(), source.clone()));
        eprintln!("{r:?}");
        ExitCode::from(1)
    };
    let paths: Vec<&std::path::Path> = data.iter().map(|p| p.as_path()).collect();
    let d = match gpmc::data::load(&checked.model, &paths) {
        Ok(d) => d,
        Err(e) => return report(e.into()),
    };
    // Test data are read before the run, so that a bad file fails fast.
    let test = if predict.is_empty() {
        None
    } else {
        let tpaths: Vec<&std::path::Path> = predict.iter().map(|p| p.as_path()).collect();
        match gpmc::data::load(&checked.model, &tpaths) {
            Ok(t) => Some(t),
            Err(e) => return report(e.into()),
        }
    };
    let dir = output.unwrap_or_else(|| {
        std::path::Path::new("out").join(
            path.file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| "model".into()),
        )
    });
    let mut files = Vec::new();
    let (mut summary, blocks, hv) = match method {
        Variational::Svi(config) => {
            let (r, hypers, hv) = match gpmc::infer::run_svi(&checked, &d, &config, &mut |_, _| {})
            {
                Ok(x) => x,
                Err(e) => return report(e),
            };
            let last = r.trace.last().copied();
            println!(
                "SVI: {} iterations of batch {} ({:.1} epochs) in {:.3} s; ELBO estimate {:.6}",
                config.iterations,
                config.batch,
                last.map_or(0.0, |p| p.epoch),
                r.seconds,
                last.map_or(f64::NAN, |p| p.elbo)
            );
            let summary = serde_json::json!({
                "model": name,
                "method": "svi",
                "batch": config.batch,
                "iterations": config.iterations,
                "step_schedule": {"delay": config.delay, "forgetting": config.forgetting},
                "hyper_rate": config.hyper_rate,
                "class_batch": config.class_batch,
                "seed": config.seed,
                "trace": r.trace.iter().map(|p| serde_json::json!({"iteration": p.iteration, "epoch": p.epoch, "seconds": p.seconds, "elbo_estimate": p.elbo})).collect::<Vec<_>>(),
                "seconds": r.seconds,
                "hyperparameters": hypers.iter().map(|(n, v, how)| serde_json::json!({"name": n, "value": v, "set_by": how})).collect::<Vec<_>>(),
            });
            (summary, r.blocks, hv)
        }
        Variational::Gpf(config) => {
            let (r, hypers, hv) = match gpmc::infer::run_gpf(&checked, &d, &config) {
                Ok(x) => x,
                Err(e) => return report(e),
            };
            println!(
                "GPF {} after {} steps ({} particles, {} steps undone) in {:.3} s; ELBO {:.6}",
                status(r.converged),
                r.free_energy.len() - 1,
                r.particles,
                r.rejected,
                r.seconds,
                r.elbo
            );
            posterior_file(&r.latents, &mut files);
            let summary = serde_json::json!({
                "model": name,
                "method": "gpf",
                "converged": r.converged,
                "particles": r.particles,
                "iterations": r.free_energy.len() - 1,
                "rejected_steps": r.rejected,
                "final_step": r.step,
                "free_energy": r.free_energy,
                "elbo": r.elbo,
                "seed": config.seed,
                "seconds": r.seconds,
                "hyperparameters": hypers.iter().map(|(n, v, how)| serde_json::json!({"name": n, "value": v, "set_by": how})).collect::<Vec<_>>(),
            });
            (summary, r.blocks, hv)
        }
        Variational::Cavi { max_iter } => {
            let config = gpm_runtime::cavi::CaviConfig {
                tolerance: 1e-9,
                max_iter,
            };
            let (r, hypers, hv) = match gpmc::infer::run_cavi_with_values(&checked, &d, &config) {
                Ok(x) => x,
                Err(e) => return report(e),
            };
            println!(
                "CAVI {} after {} iterations in {:.3} s; ELBO {:.6}",
                status(r.converged),
                r.elbo.len(),
                r.seconds,
                r.elbo.last().copied().unwrap_or(f64::NAN)
            );
            posterior_file(&r.latents, &mut files);
            let summary = serde_json::json!({
                "model": name,
                "method": "cavi",
                "converged": r.converged,
                "iterations": r.elbo.len(),
                "elbo": r.elbo,
                "seconds": r.seconds,
                "hyperparameters": hypers.iter().map(|(n, v, how)| serde_json::json!({"name": n, "value": v, "set_by": how})).collect::<Vec<_>>(),
            });
            (summary, r.blocks, hv)
        }
    };
    if blocks
        .iter()
        .any(|b| matches!(b, gpm_runtime::cavi::BlockPosterior::Sparse(_)))
    {
        match gpmc::infer::inducing_csv(&checked, &d, &hv, &blocks) {
            Ok(csv) => files.push(("inducing.csv".to_string(), csv)),
            Err(e) => return report(e),
        }
    }
    if let Some(test) = &test {
        match gpmc::infer::predict_variational(&checked, &d, test, &hv, &blocks) {
            Ok((csv, metrics)) => {
                println!("test: {metrics}");
                summary["test"] = metrics;
                files.push(("predictions.csv".into(), csv));
            }
            Err(e) => return report(e),
        }
    }
    files.push((
        "summary.json".to_string(),
        serde_json::to_string_pretty(&summary).expect("summary JSON"),
    ));
    if let Err(e) = gpmc::infer::write_all(&dir, &files) {
        return report(e);
    }
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    println!("wrote {} to {}", names.join(", "), dir.display());
    ExitCode::SUCCESS
}

/// A variational run's end, for people.
fn status(converged: bool) -> &'static str {
    if converged {
        "converged"
    } else {
        "stopped (not converged)"
    }
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
        println!(
            "  {n}: {}{}",
            cells.join(", "),
            if m.len() > k { ", ..." } else { "" }
        );
    }
}

fn read_model(path: &std::path::Path) -> Result<(String, String), ExitCode> {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(s) => Ok((name, s)),
        Err(e) => {
            eprintln!("error: cannot read `{name}`: {e}");
            Err(ExitCode::from(2))
        }
    }
}

fn infer(
    path: &std::path::Path,
    data: &[std::path::PathBuf],
    predict: &[std::path::PathBuf],
    config: gpm_runtime::gibbs::GibbsConfig,
    output: Option<std::path::PathBuf>,
    quiet: bool,
    generic: bool,
) -> ExitCode {
    use std::io::IsTerminal;
    let (name, source) = match read_model(path) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let checked = match gpmc::check_with(&name, &source, generic) {
        Ok(c) => c,
        Err(f) => {
            for r in f.reports() {
                eprintln!("{r:?}");
            }
            eprintln!("{f}");
            return ExitCode::from(1);
        }
    };
    let report = |e: gpmc::infer::InferError| {
        let r = miette::Report::new(e)
            .with_source_code(miette::NamedSource::new(name.clone(), source.clone()));
        eprintln!("{r:?}");
        ExitCode::from(1)
    };
    let paths: Vec<&std::path::Path> = data.iter().map(|p| p.as_path()).collect();
    let d = match gpmc::data::load(&checked.model, &paths) {
        Ok(d) => d,
        Err(e) => return report(e.into()),
    };
    let total = (config.warmup + config.draws * config.thin) as u64;
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(total * config.chains as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} gibbs [{bar:40}] {pos}/{len} sweeps ({eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let progress = |_: usize, _: usize| {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let result = match gpmc::infer::run_gibbs(&checked, &d, &config, &progress) {
        Ok(r) => r,
        Err(e) => return report(e),
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let dir = output.unwrap_or_else(|| {
        std::path::Path::new("out").join(
            path.file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| "model".into()),
        )
    });
    let mut files = Vec::new();
    for (k, ch) in result.chains.iter().enumerate() {
        files.push((
            format!("chain-{}.csv", k + 1),
            gpmc::infer::chain_csv(&checked, ch, k, &config),
        ));
    }
    let mut summary = gpmc::infer::summary_json(&checked, &result, &config);
    if !predict.is_empty() {
        let tpaths: Vec<&std::path::Path> = predict.iter().map(|p| p.as_path()).collect();
        let test = match gpmc::data::load(&checked.model, &tpaths) {
            Ok(t) => t,
            Err(e) => return report(e.into()),
        };
        match gpmc::infer::predict(&checked, &d, &test, &result, config.seed) {
            Ok((csv, metrics)) => {
                println!("test: {metrics}");
                summary["test"] = metrics;
                files.push(("predictions.csv".into(), csv));
            }
            Err(e) => return report(e),
        }
    }
    files.push((
        "summary.json".into(),
        serde_json::to_string_pretty(&summary).expect("summary JSON"),
    ));
    if let Err(e) = gpmc::infer::write_all(&dir, &files) {
        return report(e);
    }
    for p in &checked.plans {
        if p.generic.is_some() {
            println!(
                "factor #{}: {} (elliptical slice sampling on the log-density as written)",
                p.factor + 1,
                p.form
            );
            continue;
        }
        println!(
            "factor #{}: {} (certified, max relative error {:.1e})",
            p.factor + 1,
            p.form,
            p.certificate.max_rel_error
        );
    }
    for (n, v, how) in &result.hypers {
        if how.starts_with("sampled") {
            // Its posterior is in the table below; the value here is only where it started.
            println!("hyperparameter {n} (start {v}): {how}");
        } else {
            println!("hyperparameter {n} = {v} ({how})");
        }
    }
    if result.jitter > 0.0 {
        println!(
            "note: jitter {:.1e} was added to a GP prior covariance to factor it",
            result.jitter
        );
    }
    print!("{}", gpmc::infer::summary_table(&result, 12));
    println!(
        "wrote {} chain files and summary.json to {}",
        result.chains.len(),
        dir.display()
    );
    ExitCode::SUCCESS
}

fn check(path: &std::path::Path, format: Format) -> ExitCode {
    let name = path.display().to_string();
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            if format == Format::Json {
                println!(
                    "{}",
                    serde_json::json!({
                        "schema_version": gpmc::report::SCHEMA_VERSION,
                        "model": name,
                        "ok": false,
                        "diagnostics": [{"code": "gpm::io", "message": format!("cannot read `{name}`: {e}")}],
                    })
                );
            } else {
                eprintln!("error: cannot read `{name}`: {e}");
            }
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
