//! Stopping a run on a signal. The first SIGINT (Ctrl-C), SIGTERM or SIGHUP sets the run's
//! stop flag: Gibbs and NUTS end their chains after the current sweep and write the draws so
//! far, the variational methods end within an iteration. Every phase polls the flag, but a
//! step the flag cannot reach (a Stan program's own `while` loop that never ends) would keep
//! the run going: so a watchdog ends the process [`grace`] seconds after the signal if the work
//! has not ended by then, with the signal's exit code and nothing of the run kept (the output
//! directory is staged: what was there before stays). A second signal quits at once. The exit
//! code is the shell's for the signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The signal received first (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether the interruptible work ended (the watchdog then leaves the writing alone).
static WORK_DONE: AtomicBool = AtomicBool::new(false);

/// Seconds a run may take to stop after the first signal before the watchdog ends it: the
/// environment's `GPMC_STOP_GRACE_SECONDS`, else 30 (a sweep of the largest full GPs gpmc
/// accepts takes a few seconds).
pub fn grace() -> Duration {
    let seconds = std::env::var("GPMC_STOP_GRACE_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(30.0);
    Duration::from_secs_f64(seconds)
}

/// The exit code of an interrupted run: `128 + signal` (130 when no signal was seen, e.g. a
/// stop requested otherwise).
pub fn exit_code() -> u8 {
    match SIGNAL.load(Ordering::SeqCst) {
        s if (1..=64).contains(&s) => (128 + s) as u8,
        _ => 130,
    }
}

/// The interruptible work has ended: what follows (writing the draws) is not cut short.
pub fn work_done() {
    WORK_DONE.store(true, Ordering::SeqCst);
}

/// The stop flag the first signal sets (saying what happens: `then`).
pub fn stop_on_signal(then: &'static str) -> Arc<AtomicBool> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        // No handler: the signals keep their default action (the process ends).
        return stop;
    };
    std::thread::spawn(move || {
        for signal in signals.forever() {
            let code = (128 + signal) as u8;
            if flag.swap(true, Ordering::SeqCst) {
                std::process::exit(code.into());
            }
            SIGNAL.store(signal, Ordering::SeqCst);
            eprintln!("\ninterrupted: stopping; {then} (again to quit at once)");
            let grace = grace();
            std::thread::spawn(move || {
                std::thread::sleep(grace);
                if !WORK_DONE.load(Ordering::SeqCst) {
                    eprintln!(
                        "interrupted: the run did not stop within {:.0} s of the signal (a step with no stop point, such as a program's own loop); quitting without writing (the output directory is as it was)",
                        grace.as_secs_f64()
                    );
                    std::process::exit(code.into());
                }
            });
        }
    });
    stop
}
