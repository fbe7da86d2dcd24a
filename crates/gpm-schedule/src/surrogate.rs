//! The surrogate transition of a full GP's kernel update (Liu 2001, *Monte Carlo Strategies in
//! Scientific Computing*, §9.4.3; the "delayed acceptance" of Christen & Fox 2005 with a chain
//! of proposals): a value of the schedule, carried out by the runtime.
//!
//! The marginal move of a GP's hyperparameters `θ` given the auxiliaries evaluates
//! `π(θ) = p(θ) N(ỹ | μ₀, K_θ + A⁻¹)`, one kernel matrix and one `O(N³)` factorisation per
//! evaluation, and its slice steps take about five. The surrogate transition runs those steps
//! on a cheap `π̃` instead — the FITC marginal with `M` inducing inputs among the training
//! inputs (`O(NM²)`) — and corrects once: from `θ`, `steps` slice moves that leave `π̃`
//! invariant propose `θ'`, accepted with probability
//! `min(1, π(θ') π̃(θ) / (π(θ) π̃(θ')))`. The proposal kernel is reversible with respect to
//! `π̃` (a power of one reversible slice step about a fixed reference), so the move leaves `π`
//! exactly invariant, however rough `π̃` is; `π̃` only decides how often it is accepted. Two
//! factorisations a move (the current point's and the proposal's), one of which the block's
//! draw reuses.

use serde::Serialize;

/// How a full GP's marginal kernel move proposes through a cheap approximation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SurrogateTransition {
    /// `M`: inducing inputs of the FITC surrogate, chosen among the training inputs by k-means++.
    pub inducing: usize,
    /// Slice moves on the surrogate per proposal.
    pub steps: usize,
    /// Blocks with fewer rows take the plain slice move: their factorisation is cheap, and a
    /// surrogate with `M` close to `N` saves nothing.
    pub min_rows: usize,
}

impl SurrogateTransition {
    /// The surrogate every full GP's marginal kernel move uses (measured:
    /// docs/benchmarks.md, the full-Bayes sweep table). From 1 500 rows: by the hyperparameters'
    /// minimum ESS per second the plain move won at N = 1 000 in five runs (1.35–4×: the
    /// surrogate's sweep is 1.6× cheaper, its ESS per sweep 2–3× lower) and the surrogate at
    /// N = 2 000 in one (2.4×, its sweep 2× cheaper); 512 before, chosen by sweep time alone.
    pub fn for_marginal_update() -> Self {
        SurrogateTransition {
            inducing: 64,
            steps: 1,
            min_rows: 1500,
        }
    }

    /// Whether a block of `rows` rows takes it.
    pub fn applies(&self, rows: usize) -> bool {
        rows >= self.min_rows && rows > self.inducing
    }

    /// For people: the `gpmc check` text.
    pub fn describe(&self) -> String {
        format!(
            "from {} rows on, proposed by {} of these moves on a FITC approximation of the \
             marginal ({} inducing inputs chosen among the inputs by k-means++, O(NM²)) and \
             accepted by one exact Metropolis-Hastings correction (a surrogate transition: \
             exact, two factorisations a move; the plain move until warm-up has fitted its \
             reference)",
            self.min_rows, self.steps, self.inducing
        )
    }
}
