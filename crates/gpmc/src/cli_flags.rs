//! The method flags of `gpmc infer` and their checks (part of the `gpmc` binary, `main.rs`):
//! every flag belongs to the methods it names, and every count or rate is refused out of its
//! range before any work.

use gpmc::method::{Method, ParticleMap};

/// The method-specific flags of `gpmc infer`, as given (`None`: not given).
#[derive(clap::Args)]
pub struct MethodFlags {
    /// Gibbs, NUTS: number of chains, run in parallel [default: 4].
    #[arg(long)]
    pub chains: Option<usize>,
    /// Gibbs, NUTS: kept draws per chain [default: 1000]; CAVI, GPF, SVI: draws from q written as
    /// chain-1.csv [default: 1000, fewer when rows are very wide; 0: none, q is in fit.json].
    #[arg(long)]
    pub draws: Option<usize>,
    /// Gibbs, NUTS: warm-up sweeps (NUTS: adaptation draws) per chain [default: 200; NUTS 1000].
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Gibbs, NUTS: keep every n-th draw [default: 1].
    #[arg(long)]
    pub thin: Option<usize>,
    /// Every method: write each observation's log-likelihood under the original model as
    /// `log_lik.1 … log_lik.N` (for LOO: `arviz.from_cmdstan(..., log_likelihood="log_lik")`).
    #[arg(long)]
    pub log_lik: bool,
    /// Gibbs: initial values of latents (JSON, CmdStan layout), the same for every chain;
    /// latents not given start from a draw from their prior, each chain its own.
    #[arg(long)]
    pub init: Option<std::path::PathBuf>,
    /// Every method: write a posterior predictive draw of every response as `y_rep.1 … y_rep.N`
    /// (for PPC: `arviz.from_cmdstan(..., posterior_predictive="y_rep")`).
    #[arg(long)]
    pub ppc: bool,
    /// SVI: minibatch size [default: 1000].
    #[arg(long)]
    pub batch: Option<usize>,
    /// SVI: number of minibatch iterations; CAVI, GPF: at most this many iterations
    /// [default: 1000].
    #[arg(long)]
    pub iterations: Option<usize>,
    /// SVI: forgetting rate κ of the step schedule ρ_t = (t + τ)^(−κ), in (0.5, 1]
    /// [default: 0.6].
    #[arg(long)]
    pub forgetting: Option<f64>,
    /// SVI: delay τ ≥ 0 of the step schedule [default: 1].
    #[arg(long)]
    pub delay: Option<f64>,
    /// SVI: Adam step size on log θ for `learn()` kernel hyperparameters [default: 0.01].
    #[arg(long)]
    pub hyper_rate: Option<f64>,
    /// SVI, logistic-softmax: non-label classes sampled per observation (0: all classes)
    /// [default: 0].
    #[arg(long)]
    pub class_batch: Option<usize>,
    /// GPF: number of particles (default: one more than the largest block, at most 256).
    #[arg(long)]
    pub particles: Option<usize>,
    /// GPF: scale each dimension's step by the dimension-wise RMSProp preconditioner of the
    /// thesis' Appendix H (it scales the affine flow's Euler steps, so the affine particle map
    /// becomes the default).
    #[arg(long)]
    pub precondition: bool,
    /// GPF: the particles' map from their first draws [default: symmetric; affine with
    /// --precondition]. Where a group of blocks has no more particles than coordinates the
    /// affine flow runs either way.
    #[arg(long, value_enum)]
    pub particle_map: Option<ParticleMap>,
    /// NUTS: sample the augmented model — each auxiliary of a scale mixture a coordinate
    /// `log ω` — instead of the original (thesis §7.3).
    #[arg(long)]
    pub augmented: bool,
    /// NUTS (`--method nuts`, and any run of a Stan program on its whole log density): the target acceptance of warm-up's
    /// step-size adaptation, in (0, 1) — Stan's `adapt_delta`; raise it (0.95, 0.99) when
    /// there are divergences [default: 0.8].
    #[arg(long)]
    pub adapt_delta: Option<f64>,
    /// NUTS (as `--adapt-delta`): the largest tree depth (at most 2^depth − 1 leapfrog steps a draw), 1 to 30 —
    /// Stan's `max_treedepth` [default: 10].
    #[arg(long)]
    pub max_treedepth: Option<u64>,
    /// NUTS (as `--adapt-delta`): the mass matrix warm-up adapts — `diag` (Stan's `diag_e`) or
    /// `low-rank` (nutpie's low-rank modified mass matrix: learns the correlations of a
    /// collinear regression) [default: diag].
    #[arg(long)]
    pub metric: Option<String>,
}

/// The most chains of one run.
const MAX_CHAINS: usize = 1024;
/// The largest draw, warm-up, iteration or batch count.
const MAX_COUNT: usize = 1_000_000_000;
/// The largest thinning interval.
const MAX_THIN: usize = 1_000_000;
/// The most GPF particles.
const MAX_PARTICLES: usize = 65_536;

impl MethodFlags {
    /// Counts that must be at least 1: `--draws 0` only under a variational method, whose fit
    /// is q itself (fit.json), so that its draws are optional; a sampler's are not.
    fn no_zero_counts(&self, method: Method) -> Result<(), String> {
        let draws = self.draws.filter(|_| method.is_sampler());
        for (flag, v) in [
            ("--chains", self.chains),
            ("--draws", draws),
            ("--thin", self.thin),
            ("--batch", self.batch),
            ("--iterations", self.iterations),
        ] {
            if v == Some(0) && flag == "--draws" {
                return Err(format!(
                    "--draws must be at least 1 for --method {} (--draws 0, no draws written, is for the variational methods: cavi, svi, gpf)",
                    method.name()
                ));
            }
            if v == Some(0) {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        Ok(())
    }

    /// Refuse, before any work, a flag of another method and a count or rate out of range.
    pub fn check(&self, method: Method) -> Result<(), String> {
        use Method::*;
        let given: [(&str, bool, &[Method]); 20] = [
            ("--chains", self.chains.is_some(), &[Gibbs, Nuts]),
            (
                "--draws",
                self.draws.is_some(),
                &[Gibbs, Nuts, Cavi, Gpf, Svi],
            ),
            ("--warmup", self.warmup.is_some(), &[Gibbs, Nuts]),
            ("--thin", self.thin.is_some(), &[Gibbs, Nuts]),
            ("--log-lik", self.log_lik, &[Gibbs, Nuts, Cavi, Gpf, Svi]),
            ("--ppc", self.ppc, &[Gibbs, Nuts, Cavi, Gpf, Svi]),
            ("--init", self.init.is_some(), &[Gibbs]),
            ("--batch", self.batch.is_some(), &[Svi]),
            ("--iterations", self.iterations.is_some(), &[Svi, Cavi, Gpf]),
            ("--forgetting", self.forgetting.is_some(), &[Svi]),
            ("--delay", self.delay.is_some(), &[Svi]),
            ("--hyper-rate", self.hyper_rate.is_some(), &[Svi]),
            ("--class-batch", self.class_batch.is_some(), &[Svi]),
            ("--particles", self.particles.is_some(), &[Gpf]),
            ("--augmented", self.augmented, &[Nuts]),
            ("--precondition", self.precondition, &[Gpf]),
            ("--particle-map", self.particle_map.is_some(), &[Gpf]),
            // Gibbs too: a Stan program on its whole log density runs NUTS under either; on a
            // Gibbs run they are refused once the path is known (main.rs).
            ("--adapt-delta", self.adapt_delta.is_some(), &[Gibbs, Nuts]),
            (
                "--max-treedepth",
                self.max_treedepth.is_some(),
                &[Gibbs, Nuts],
            ),
            ("--metric", self.metric.is_some(), &[Gibbs, Nuts]),
        ];
        for (flag, set, methods) in given {
            if set && !methods.contains(&method) {
                let names: Vec<&str> = methods.iter().map(|m| m.name()).collect();
                return Err(format!(
                    "{flag} is an option of --method {}, not of --method {}",
                    names.join(" / "),
                    method.name()
                ));
            }
        }
        self.no_zero_counts(method)?;
        // Upper bounds: far above any real run, low enough that counts multiply without
        // overflow and a typo (`--chains 100000`) is caught before it writes 100 000 files.
        for (flag, v, max) in [
            ("--chains", self.chains, MAX_CHAINS),
            ("--draws", self.draws, MAX_COUNT),
            ("--warmup", self.warmup, MAX_COUNT),
            ("--thin", self.thin, MAX_THIN),
            ("--batch", self.batch, MAX_COUNT),
            ("--iterations", self.iterations, MAX_COUNT),
            ("--class-batch", self.class_batch, MAX_COUNT),
            ("--particles", self.particles, MAX_PARTICLES),
        ] {
            if let Some(v) = v.filter(|&v| v > max) {
                return Err(format!("{flag} must be at most {max}, got {v}"));
            }
        }
        if self.particles.is_some_and(|p| p < 2) {
            return Err("--particles must be at least 2".into());
        }
        if let Some(k) = self.forgetting {
            if !(k > 0.5 && k <= 1.0) {
                return Err(format!("--forgetting must be in (0.5, 1], got {k}"));
            }
        }
        if let Some(d) = self.delay {
            if !(d >= 0.0 && d.is_finite()) {
                return Err(format!("--delay must be a finite number ≥ 0, got {d}"));
            }
        }
        self.nuts_control()?;
        if let Some(r) = self.hyper_rate {
            if !(r > 0.0 && r.is_finite()) {
                return Err(format!(
                    "--hyper-rate must be a finite positive number, got {r}"
                ));
            }
        }
        Ok(())
    }
}

impl MethodFlags {
    /// NUTS's control from `--adapt-delta`, `--max-treedepth` and `--metric` (Stan's defaults
    /// otherwise), or what is out of range under the flag's name.
    pub fn nuts_control(&self) -> Result<gpm_runtime::nuts::NutsControl, String> {
        gpm_runtime::nuts::NutsControl::new(self.adapt_delta, self.max_treedepth)
            .map_err(|e| format!("--{}", e.replacen('_', "-", 1)))?
            .with_metric(self.metric.as_deref())
            .map_err(|e| format!("--metric: {e}"))
    }

    /// Whether any of NUTS's controls was given (refused on a run that is all Gibbs).
    pub fn any_nuts_control(&self) -> bool {
        self.adapt_delta.is_some() || self.max_treedepth.is_some() || self.metric.is_some()
    }
}
