//! Feedback on stderr while a run works: on a terminal, a bar (Gibbs sweeps, NUTS iterations) or a spinner with
//! the latest news (type-II ML, CAVI, SVI, particle flow); otherwise a plain line every few
//! seconds, so that logs of batch jobs show progress too. `--quiet` silences it; warnings are
//! not progress: they are the run's (`crate::warnings`), printed after it.

use gpm_runtime::progress::{self, Event};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Seconds between two plain lines, unless `GPMC_PROGRESS_SECONDS` says otherwise.
const LINE_EVERY: Duration = Duration::from_secs(3);

enum Mode {
    Off,
    Bar(indicatif::ProgressBar),
    Lines,
}

struct State {
    /// When the last plain line was printed.
    last_line: Instant,
    /// The time between two plain lines.
    every: Duration,
    /// The previous CAVI ELBO, for the change per iteration.
    last_elbo: Option<f64>,
    /// When the first kept Gibbs sweep was reported, and how many sweeps there are in all.
    sweeps: Option<(Instant, u64)>,
    done: u64,
}

/// Where a run's progress goes.
pub struct Feedback {
    mode: Mode,
    state: Mutex<State>,
}

impl Feedback {
    /// Feedback for one run, installed as the observer of the runtime's events.
    pub fn install(quiet: bool) -> Arc<Feedback> {
        let mode = if quiet {
            Mode::Off
        } else if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(120));
            Mode::Bar(bar)
        } else {
            Mode::Lines
        };
        let feedback = Arc::new(Feedback {
            mode,
            state: Mutex::new(State {
                last_line: Instant::now(),
                every: std::env::var("GPMC_PROGRESS_SECONDS")
                    .ok()
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| *v >= 0.0 && v.is_finite())
                    .map_or(LINE_EVERY, Duration::from_secs_f64),
                last_elbo: None,
                sweeps: None,
                done: 0,
            }),
        });
        let observer = Arc::clone(&feedback);
        progress::observe(move |e| observer.event(e));
        feedback
    }

    /// Show `message` now (bar) or if a line is due (plain lines).
    fn news(&self, message: String) {
        match &self.mode {
            Mode::Off => {}
            Mode::Bar(bar) => bar.set_message(message),
            Mode::Lines => {
                let Ok(mut s) = self.state.lock() else {
                    return;
                };
                if s.last_line.elapsed() >= s.every {
                    s.last_line = Instant::now();
                    eprintln!("{message}");
                }
            }
        }
    }

    /// Show `message` now, in either mode: the start of a phase that says nothing until it
    /// ends (a plain line is printed whenever the last one was).
    fn phase(&self, message: String) {
        match &self.mode {
            Mode::Off => {}
            Mode::Bar(bar) => bar.set_message(message),
            Mode::Lines => {
                if let Ok(mut s) = self.state.lock() {
                    s.last_line = Instant::now();
                }
                eprintln!("{message}");
            }
        }
    }

    fn event(&self, e: &Event) {
        match *e {
            Event::LearnEvaluation {
                evaluation,
                max_evaluations,
                best_elbo,
            } => self.news(format!(
                "type-II ML: ELBO evaluation {evaluation} (at most {max_evaluations}), best ELBO {best_elbo:.6}"
            )),
            // Said once, with the run's other warnings (`gpmc::warnings`), where every front
            // end sees it.
            Event::LearnCapped { .. } => {}
            Event::CaviIteration {
                iteration,
                max_iterations,
                elbo,
            } => {
                let change = self
                    .state
                    .lock()
                    .ok()
                    .and_then(|mut s| s.last_elbo.replace(elbo))
                    .map_or(String::new(), |last| format!(", change {:+.3e}", elbo - last));
                self.news(format!(
                    "CAVI: iteration {iteration} (at most {max_iterations}), ELBO {elbo:.6}{change}"
                ));
            }
            Event::FlowStep {
                step,
                max_steps,
                free_energy,
            } => self.news(format!(
                "GPF: step {step} (at most {max_steps}), free energy {free_energy:.6}"
            )),
            Event::PathwiseSpectrum { rows } => self.phase(format!(
                "Gibbs: the eigendecomposition of a {rows}-row GP prior for its pathwise draw (once, before the first sweep)"
            )),
        }
    }

    /// SVI's report after an iteration.
    pub fn svi(&self, point: &gpm_runtime::svi::SviPoint, iterations: usize) {
        let eta = if point.iteration > 0 {
            point.seconds / point.iteration as f64 * (iterations - point.iteration) as f64
        } else {
            f64::NAN
        };
        self.news(format!(
            "SVI: iteration {} of {iterations} (epoch {:.2}), ELBO estimate {:.6}, ETA {}",
            point.iteration,
            point.epoch,
            point.elbo,
            seconds(eta)
        ));
    }

    /// One Gibbs sweep (or NUTS iteration: `nuts`) done, of `total` over all chains. The ETA
    /// counts from the first one, not from the start of the run (type-II ML may come first).
    pub fn sweep(&self, total: u64, nuts: bool) {
        let (label, unit) = if nuts {
            ("nuts", "iterations")
        } else {
            ("gibbs", "sweeps")
        };
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        let start = match s.sweeps {
            Some((t, _)) => t,
            None => {
                s.sweeps = Some((Instant::now(), total));
                if let Mode::Bar(bar) = &self.mode {
                    bar.set_length(total);
                    bar.set_position(0);
                    bar.reset_eta();
                    bar.reset_elapsed();
                    bar.set_message("");
                    bar.set_style(
                        indicatif::ProgressStyle::with_template(&format!(
                            "{{spinner}} {label} [{{bar:40}}] {{pos}}/{{len}} {unit} ({{eta}})"
                        ))
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                    );
                }
                Instant::now()
            }
        };
        s.done += 1;
        match &self.mode {
            Mode::Bar(bar) => bar.set_position(s.done),
            Mode::Lines if s.last_line.elapsed() >= s.every => {
                s.last_line = Instant::now();
                let rate = s.done as f64 / start.elapsed().as_secs_f64().max(1e-9);
                eprintln!(
                    "{label}: {}/{total} {unit} ({:.0} %), ETA {}",
                    s.done,
                    100.0 * s.done as f64 / total as f64,
                    seconds((total - s.done) as f64 / rate)
                );
            }
            _ => {}
        }
    }

    /// Clear the bar: the run's own report follows.
    pub fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

/// A duration for people.
fn seconds(s: f64) -> String {
    if !s.is_finite() {
        "?".into()
    } else if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}
