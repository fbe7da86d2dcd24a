//! Running library work with the GIL released, on a worker thread, while the calling thread
//! keeps Python responsive: every 100 ms it takes the GIL to run pending signal handlers and to
//! report progress to a Python callable. A Ctrl-C raises `KeyboardInterrupt` at once: the work's
//! stop flag is set (Gibbs chains end after their sweep) and its result is dropped (a
//! variational fit, which has no partial answer, finishes in the background and is discarded).

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the calling thread looks at signals and progress.
const POLL: Duration = Duration::from_millis(100);

/// Progress shared between the work and the calling thread.
#[derive(Debug, Default)]
pub struct Shared {
    /// Units of work done.
    pub done: AtomicU64,
    /// Set to ask the work to stop (a Ctrl-C).
    pub stop: Arc<AtomicBool>,
}

/// Run `work` on a worker thread; call `progress(done, total)` (a Python callable, if given)
/// while it runs and once at the end. A pending `KeyboardInterrupt` (or an exception raised by
/// `progress`) stops the work and is raised.
pub fn run<T: Send + 'static>(
    py: Python<'_>,
    shared: Arc<Shared>,
    total: u64,
    progress: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    // The work's long phases without partial results (type-II ML, CAVI, SVI) poll the same
    // flag and end early once it is set.
    let stop = Arc::clone(&shared.stop);
    let handle = std::thread::spawn(move || gpm_runtime::stop::scoped(stop, work));
    loop {
        let finished = py.detach(|| {
            let until = std::time::Instant::now() + POLL;
            while std::time::Instant::now() < until {
                if handle.is_finished() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            handle.is_finished()
        });
        let checked = py.check_signals().and_then(|_| match progress {
            Some(cb) => cb
                .call1((shared.done.load(Ordering::Relaxed), total))
                .map(|_| ()),
            None => Ok(()),
        });
        if let Err(e) = checked {
            shared.stop.store(true, Ordering::SeqCst);
            return Err(e);
        }
        if finished {
            return handle.join().map_err(|_| {
                crate::errors::InferenceError::new_err(
                    "internal error: the inference thread panicked (please report)",
                )
            });
        }
    }
}
