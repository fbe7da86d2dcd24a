//! Stochastic CAVI at scale (issue: sparse GPs and SVI): a GP classifier on synthetic data with
//! `D = 10` inputs, `M` inducing points (k-means++), minibatches of `B`. Prints, along the run,
//! the time, the epochs done and the test error / negative log predictive density on 10 000
//! held-out points; at the end the peak resident memory (VmHWM) next to the size of the data.
//! With `--cavi` it also runs full-batch sparse CAVI on the same data for the reference result.
//!
//! `cargo bench -p gpmc --bench svi_scale -- --n 1000000 [--m 100] [--batch 1000] [--epochs 2] [--cavi]`
//! (`bench/svi_scale.sh` runs it for several N, one process each, so that peak memory is per N).

mod common;

use common::{synthetic, D};
use gpm_runtime::cavi::BlockPosterior;
use gpm_runtime::kernels::HyperValues;
use gpm_runtime::prepared::Prepared;
use gpm_runtime::svi::SviConfig;

const TEST: usize = 10_000;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = arg(&args, "--n").map_or(1_000_000, |v| v.parse().expect("--n"));
    let m: usize = arg(&args, "--m").map_or(100, |v| v.parse().expect("--m"));
    let batch: usize = arg(&args, "--batch").map_or(1000, |v| v.parse().expect("--batch"));
    let epochs: f64 = arg(&args, "--epochs").map_or(2.0, |v| v.parse().expect("--epochs"));
    let with_cavi = args.iter().any(|a| a == "--cavi");
    let src = format!(
        "data {{ N : int; D : int; X : matrix[N, D]; y : int[N] in {{-1, 1}}; }}\n\
         latent {{ f : vector[N] ~ gp(X, 2.0 * sqexp(2.5), inducing = {m}); }}\n\
         model {{ y ~ bernoulli_logit(f); }}"
    );
    let c = gpmc::check("svi_scale", &src).unwrap_or_else(|f| panic!("{}", f.render()));
    let schedule = gpm_schedule::build(&c.model, &c.plans).expect("schedule");
    let hv = HyperValues::default();
    let t0 = std::time::Instant::now();
    let train = synthetic(n, 1);
    let test = synthetic(TEST, 2);
    println!(
        "# SVI GP classifier: N = {n}, D = {D}, M = {m}, B = {batch}; data {:.1} MB; generated in {:.1} s",
        (n * (D + 1) * 8) as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    let t1 = std::time::Instant::now();
    let prep = Prepared::new(&schedule, &train, &hv).expect("prepare");
    println!(
        "# prepared (k-means++ inducing points) in {:.1} s",
        t1.elapsed().as_secs_f64()
    );
    let labels = vec![Some(vec![-1.0, 1.0])];
    let metrics = |post: &[BlockPosterior]| -> (f64, f64) {
        let p = gpm_runtime::predict::predict(
            &prep,
            &schedule,
            &train,
            &test,
            &hv,
            gpm_runtime::predict::Posterior::Variational(post),
            &labels,
        )
        .expect("predict");
        let y = test.vector("y").unwrap();
        let (_, probs) = p.label_probabilities[0].as_ref().unwrap();
        let wrong = probs
            .iter()
            .zip(y)
            .filter(|(pr, yi)| (if pr[1] > pr[0] { 1.0 } else { -1.0 }) != **yi)
            .count();
        let nll = -p.log_predictive[0].iter().sum::<f64>() / y.len() as f64;
        (wrong as f64 / y.len() as f64, nll)
    };
    let iterations = ((epochs * n as f64) / batch as f64).ceil() as usize;
    let config = SviConfig {
        batch,
        iterations,
        report_every: (iterations / 20).max(1),
        ..SviConfig::default()
    };
    println!("iteration  epoch   seconds  s/epoch  ELBO/N(batch)  test_error  test_nll");
    let r = gpm_runtime::svi::run_prepared(&prep, &schedule, &config, &mut |pt, post| {
        let (err, nll) = metrics(post);
        println!(
            "{:>9}  {:>5.2}  {:>8.2}  {:>7.2}  {:>13.5}  {:>10.4}  {:>8.4}",
            pt.iteration,
            pt.epoch,
            pt.seconds,
            pt.seconds / pt.epoch,
            pt.elbo / n as f64,
            err,
            nll
        );
    })
    .expect("svi");
    let (err, nll) = metrics(&r.blocks);
    println!(
        "# SVI: {:.2} s for {:.2} epochs ({:.2} s/epoch); test error {:.4}, NLL {:.4}; peak RSS {:.0} MB, of which beyond the train + test data {:.0} MB",
        r.seconds,
        config.iterations as f64 * batch as f64 / n as f64,
        r.seconds * n as f64 / (config.iterations * batch) as f64,
        err,
        nll,
        peak_rss_mb(),
        peak_rss_mb() - ((n + TEST) * (D + 1) * 8) as f64 / 1_048_576.0
    );
    if with_cavi {
        let t2 = std::time::Instant::now();
        let cr = gpm_runtime::cavi::run(
            &schedule,
            &train,
            &hv,
            &gpm_runtime::cavi::CaviConfig {
                tolerance: 1e-7,
                max_iter: 100,
            },
        )
        .expect("cavi");
        let (cerr, cnll) = metrics(&cr.blocks);
        println!(
            "# full-batch sparse CAVI: {} iterations in {:.1} s; test error {:.4}, NLL {:.4}; peak RSS {:.0} MB",
            cr.elbo.len(),
            t2.elapsed().as_secs_f64(),
            cerr,
            cnll,
            peak_rss_mb()
        );
        println!(
            "# SVI − CAVI: test error {:+.4}, NLL {:+.4}",
            err - cerr,
            nll - cnll
        );
    }
}
