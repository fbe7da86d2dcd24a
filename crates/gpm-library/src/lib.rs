//! # gpm-library
//!
//! Owns the library of named distributions a `.gpm` program can use, as plug-ins: one file per
//! entry implementing a trait, registered by one line in a table:
//! - [`likelihood`]: every distribution a response can be drawn from — its log-density as a
//!   [`likelihood::Formula`] (which the lowering turns into the IR's expressions, where the CAS
//!   and the recognizers find its augmentation), the response it takes, a draw for predictive
//!   checks, its robust power integral, its mean and variance;
//! - [`kernel`]: every covariance function — its parameters (lengthscales, which may be ARD)
//!   and its form (a vectorised profile in the scaled distance, or a function of two points);
//! - [`constraint`]: what values a parameter may take, one type every registry declares its
//!   parameters with (NumPyro's `constraints`);
//! - [`hyperprior`]: every prior a hyperparameter can take (Stan's names and parametrisations,
//!   truncated to the declared range as Stan does).
//!
//! It is a leaf (it reads only `gpm-special`'s functions): it must not know about models, the
//! IR's expressions, data or inference. Every stage that needs a distribution's numbers (the
//! lowering its density and parameters, the schedule a prior's start value, certification test
//! points, the runtime a log-density or a draw) asks the entry here, so no stage repeats a match
//! over families.
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

/// An entry's row of its registry's signature table: `impl Registered for Entry`, returning a
/// `static` row built from the fields given (each registry's `register!` calls it once per row).
macro_rules! registered {
    ($entry:ty, $row:expr) => {
        impl Registered for $entry {
            fn signature(&self) -> &'static Signature {
                static ROW: Signature = $row;
                &ROW
            }
        }
    };
}

/// A reference to a registered entry of a plug-in table, compared, printed and serialised by
/// its name (what the IR and the schedule store in place of an enum of families).
macro_rules! entry_ref {
    ($(#[$doc:meta])* $name:ident, $law:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name(pub &'static dyn $law);

        impl std::ops::Deref for $name {
            type Target = dyn $law;
            fn deref(&self) -> &(dyn $law + 'static) {
                self.0
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.0.name() == other.0.name()
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0.name())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.0.name())
            }
        }
    };
}

pub mod constraint;
pub mod hyperprior;
pub mod kernel;
pub mod likelihood;

pub use constraint::Constraint;
pub use hyperprior::{HyperPrior, HyperPriorLaw, ParamSpec, PriorError, PriorStart, HYPER_PRIORS};
pub use kernel::{KernelForm, KernelLaw, KernelRef, KERNELS};
pub use likelihood::{Likelihood, LikelihoodRef, ResponseKind, LIKELIHOODS, MAX_CLASSES};
