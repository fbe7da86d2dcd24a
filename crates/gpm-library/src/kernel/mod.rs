//! Kernels — the covariance functions a GP prior is built from (`sqexp(ell)`, `periodic(l, p)`):
//! one file per kernel implementing [`KernelLaw`], one line in `register!` (which declares the
//! module and lists it in [`KERNELS`]). Sums, products and scalar variances of kernels are the
//! language's own (`s2 * sqexp(ell) + linear()`), not entries.
//!
//! An entry gives its parameters (which is a lengthscale that may be a `vector[D]` hyperparameter
//! — ARD — and which have defaults) and its form: stationary in the scaled squared distance,
//! `k = f(r²)` with `r² = Σ_d ((x_d − z_d)/ℓ_d)²`, evaluated by the runtime's kept-distance and
//! symmetric paths and vectorised (`gpm_special::vectorised`); or any function of two points.
//! The lowering checks arguments against the parameters, the schedule binds them, the runtime
//! evaluates the form, `gpmc check` prints the name: nothing downstream matches on a kernel's
//! name. The tests at the end of this file check every entry at its example parameters: a Gram
//! matrix on scattered points is symmetric positive semi-definite, and a stationary profile is
//! 1 at distance 0 and matches its scalar formula.

/// What a kernel parameter is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamRole {
    /// A lengthscale: a positive scalar, or a `vector[D]` hyperparameter (one per input column).
    Lengthscale,
    /// A positive scalar (a period).
    Positive,
    /// Any real scalar, this value when the argument is left out (`linear()`'s offset 0).
    Real {
        /// The default.
        default: f64,
    },
}

/// A kernel parameter: its name (in messages and `gpmc check --format json`) and role.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelParam {
    /// Name.
    pub name: &'static str,
    /// Role.
    pub role: ParamRole,
}

/// How a kernel is evaluated.
#[derive(Clone, Copy)]
pub enum KernelForm {
    /// `k(x, z) = f(r²)` in the squared distance scaled by the lengthscales (the first parameter,
    /// a [`ParamRole::Lengthscale`]): `f` applied in place to a slice of `r²` values, given the
    /// values of the other parameters.
    Stationary(fn(&mut [f64], &[f64])),
    /// `k(x, z)` from the two points, whether they are the same training point (`white()`), and
    /// the parameters' values in order (ARD not allowed).
    Pointwise(fn(&[f64], &[f64], bool, &[f64]) -> f64),
}

/// A covariance function of the language.
pub trait KernelLaw: Send + Sync {
    /// The name in the language (`sqexp`).
    fn name(&self) -> &'static str;
    /// Other names for it (`rbf`).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// Its parameters, in positional order.
    fn params(&self) -> &'static [KernelParam];
    /// The formula shown in the docs.
    fn formula(&self) -> &'static str;
    /// How it is evaluated.
    fn form(&self) -> KernelForm;
    /// The `"type"` tag of the kernel in `gpmc check --format json`.
    fn json_type(&self) -> &'static str {
        self.name()
    }
    /// Parameters the library's own tests check the entry at.
    fn example(&self) -> &'static [f64];
    /// The profile `f(r²)` at one value and the parameters after the lengthscale, written
    /// plainly: the tests compare the vectorised form with it (stationary kernels only).
    fn profile_at(&self, _r2: f64, _p: &[f64]) -> Option<f64> {
        None
    }
}

impl dyn KernelLaw {
    /// The fewest arguments (the parameters without a default).
    pub fn min_args(&self) -> usize {
        self.params()
            .iter()
            .filter(|p| !matches!(p.role, ParamRole::Real { .. }))
            .count()
    }
}

entry_ref!(
    /// A registered kernel, compared, printed and serialised by name.
    KernelRef,
    KernelLaw
);

/// Declares each kernel's module and lists it in [`KERNELS`]: one line per entry.
macro_rules! register {
    ($($module:ident :: $entry:ident),* $(,)?) => {
        $(mod $module;)*
        /// Every kernel of the language. Adding one: a file in this folder and a line in
        /// `register!` below (docs/ARCHITECTURE.md, "Adding a kernel").
        pub static KERNELS: &[&dyn KernelLaw] = &[$(&$module::$entry),*];
    };
}

register! {
    sqexp::SqExp,
    matern12::Matern12,
    matern32::Matern32,
    matern52::Matern52,
    rational_quadratic::RationalQuadratic,
    linear::Linear,
    periodic::Periodic,
    constant::Constant,
    white::White,
}

/// The kernel of this name or alias.
pub fn lookup(name: &str) -> Option<KernelRef> {
    KERNELS
        .iter()
        .find(|k| k.name() == name || k.aliases().contains(&name))
        .map(|k| KernelRef(*k))
}

/// Every name a kernel is written with, aliases included.
pub fn names() -> impl Iterator<Item = &'static str> {
    KERNELS
        .iter()
        .flat_map(|k| std::iter::once(k.name()).chain(k.aliases().iter().copied()))
}

#[cfg(test)]
mod tests;
