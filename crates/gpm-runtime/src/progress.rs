//! Progress of the long phases (type-II ML, CAVI, particle flow), reported as typed events to
//! one process-wide observer the front end installs (`gpmc` draws a bar on a terminal, a line
//! every few seconds otherwise). Like a logger: the numerical code only emits, never formats or
//! decides where output goes, and with no observer an event costs one uncontended read lock.
//! Gibbs and SVI report through their own per-sweep / per-iteration callbacks.

use std::sync::{Arc, RwLock};

/// Something a long phase has done.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Type-II ML evaluated the converged ELBO once more.
    LearnEvaluation {
        /// Evaluations so far.
        evaluation: usize,
        /// The cap on evaluations.
        max_evaluations: usize,
        /// The best ELBO so far.
        best_elbo: f64,
    },
    /// Type-II ML stopped at its cap on evaluations before converging.
    LearnCapped {
        /// Evaluations used.
        evaluations: usize,
    },
    /// CAVI finished an iteration (outside type-II ML, whose inner runs are not reported).
    CaviIteration {
        /// Iterations so far.
        iteration: usize,
        /// The cap on iterations.
        max_iterations: usize,
        /// The ELBO after it.
        elbo: f64,
    },
    /// Gaussian particle flow took a step.
    FlowStep {
        /// Steps so far.
        step: usize,
        /// The cap on steps.
        max_steps: usize,
        /// The free energy after it.
        free_energy: f64,
    },
    /// Gibbs is about to decompose a fixed GP prior for its pathwise draw (once, `O(N³)`:
    /// minutes at tens of thousands of rows, before the first sweep).
    PathwiseSpectrum {
        /// The prior's rows.
        rows: usize,
    },
}

type Observer = Arc<dyn Fn(&Event) + Send + Sync>;

static OBSERVER: RwLock<Option<Observer>> = RwLock::new(None);

/// Install the observer of every event from now on (replacing any earlier one).
pub fn observe(observer: impl Fn(&Event) + Send + Sync + 'static) {
    if let Ok(mut o) = OBSERVER.write() {
        *o = Some(Arc::new(observer));
    }
}

thread_local! {
    static MUTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Report an event to the observer, if any, unless this thread is [`muted`].
pub fn emit(event: Event) {
    if MUTED.with(|m| m.get()) {
        return;
    }
    let observer = OBSERVER.read().ok().and_then(|o| o.clone());
    if let Some(o) = observer {
        o(&event);
    }
}

/// Run `f` with this thread's events muted (type-II ML's inner CAVI runs: the evaluations are
/// the progress, not each run's iterations).
pub fn muted<T>(f: impl FnOnce() -> T) -> T {
    let was = MUTED.with(|m| m.replace(true));
    let out = f();
    MUTED.with(|m| m.set(was));
    out
}
