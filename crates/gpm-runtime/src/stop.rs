//! A request to stop, for the long phases that have no partial answer to return (type-II ML,
//! CAVI, SVI, particle flow): the front end runs the work inside [`scoped`] with its stop flag
//! (the CLI's Ctrl-C / SIGTERM handler, the Python package's KeyboardInterrupt), and each phase
//! polls [`check`] once per iteration, so a stop ends it within one iteration. The flag is the
//! calling thread's (like [`crate::progress::muted`]), not a process-wide global: two runs in
//! one process (Python threads) stop independently. Gibbs takes its flag as an argument
//! instead: its chains run on other threads and end with the draws made so far.

use crate::RuntimeError;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Run `f` with `flag` as this thread's stop flag (the previous one restored after).
pub fn scoped<T>(flag: Arc<AtomicBool>, f: impl FnOnce() -> T) -> T {
    let before = FLAG.with(|c| c.replace(Some(flag)));
    struct Restore(Option<Arc<AtomicBool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            FLAG.with(|c| *c.borrow_mut() = before);
        }
    }
    let _restore = Restore(before);
    f()
}

/// Whether this thread's work was asked to stop.
pub fn requested() -> bool {
    FLAG.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    })
}

/// `Err(Interrupted)` naming `phase` once a stop was requested.
pub fn check(phase: &str) -> Result<(), RuntimeError> {
    if requested() {
        Err(RuntimeError::Interrupted(format!(
            "{phase} was interrupted before it finished"
        )))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_is_seen_inside_the_scope_only_and_per_thread() {
        let flag = Arc::new(AtomicBool::new(false));
        assert!(check("x").is_ok());
        scoped(flag.clone(), || {
            assert!(check("learning").is_ok());
            flag.store(true, Ordering::SeqCst);
            let e = check("learning").unwrap_err();
            assert_eq!(
                e,
                RuntimeError::Interrupted("learning was interrupted before it finished".into())
            );
            // Another thread has its own (no) flag.
            assert!(std::thread::spawn(|| check("x").is_ok()).join().unwrap());
        });
        assert!(check("x").is_ok(), "restored after the scope");
    }
}
