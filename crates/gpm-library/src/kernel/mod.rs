//! Kernels — the covariance functions a GP prior is built from (`sqexp(ell)`, `periodic(l, p)`):
//! one file per kernel implementing [`KernelLaw`], its row in the `register!` signature table
//! (name, aliases, parameters, example, formula; the macro declares the module and lists it in
//! [`KERNELS`]). Sums, products and scalar variances of kernels are the language's own (`s2 *
//! sqexp(ell) + linear()`), not entries.
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
    /// A scalar within a constraint: positive (a period), or bounded (the exponent of
    /// `gamma_exponential`, in `(0, 2]`); checked by the lowering against a literal, a fixed
    /// value or a hyperparameter's declared range.
    Constrained(crate::constraint::Constraint),
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

/// A stationary profile `exp(g(r²))` written once by its exponent `g`: the vectorised form
/// applies `g` to each squared distance, then one vectorised exponential; the scalar form
/// ([`KernelLaw::profile_at`]) is `exp(g(r²))` from the same `g`.
pub trait Exponent {
    /// `g(r²)`.
    fn exponent(r2: f64) -> f64;
}

/// The [`gpm_special::SliceMap`] of an [`Exponent`] kernel: `KernelForm::Stationary(
/// vectorised::<ExpProfile<K>>)`.
pub struct ExpProfile<K>(std::marker::PhantomData<K>);

impl<K: Exponent> gpm_special::SliceMap for ExpProfile<K> {
    #[inline(always)]
    fn apply(v: &mut [f64], _p: &[f64]) {
        for x in v.iter_mut() {
            *x = K::exponent(*x);
        }
        gpm_special::exp_in_place(v);
    }
}

/// A kernel's row of the `register!` table: its name and aliases, parameters with their roles,
/// the parameters the tests check it at, and its formula as shown.
#[derive(Debug)]
pub struct Signature {
    /// The name in the language (`sqexp`).
    pub name: &'static str,
    /// Other names for it (`rbf`).
    pub aliases: &'static [&'static str],
    /// Its parameters, in positional order.
    pub params: &'static [KernelParam],
    /// Parameters the library's own tests check the entry at.
    pub example: &'static [f64],
    /// The formula shown in the docs.
    pub formula: &'static str,
}

const LENGTHSCALE: ParamRole = ParamRole::Lengthscale;
const POSITIVE: ParamRole = ParamRole::Constrained(crate::constraint::Constraint::Positive);
/// `lo < p ≤ hi`.
const fn half_open(lo: f64, hi: f64) -> ParamRole {
    ParamRole::Constrained(crate::constraint::Constraint::half_open(lo, hi))
}
const fn real(default: f64) -> ParamRole {
    ParamRole::Real { default }
}

/// The row of the table a kernel is registered with (implemented by `register!`, never by
/// hand).
pub trait Registered {
    /// Its row.
    fn signature(&self) -> &'static Signature;
}

/// A covariance function of the language: its file holds how it is evaluated, its row in
/// `register!` the rest.
pub trait KernelLaw: Registered + Send + Sync {
    /// The name in the language (`sqexp`).
    fn name(&self) -> &'static str {
        self.signature().name
    }
    /// Other names for it (`rbf`).
    fn aliases(&self) -> &'static [&'static str] {
        self.signature().aliases
    }
    /// Its parameters, in positional order.
    fn params(&self) -> &'static [KernelParam] {
        self.signature().params
    }
    /// The formula shown in the docs.
    fn formula(&self) -> &'static str {
        self.signature().formula
    }
    /// How it is evaluated.
    fn form(&self) -> KernelForm;
    /// `∂k(x, z)/∂p_j` for each parameter `j` in order into `out` (as long as
    /// [`KernelLaw::params`]; a stationary kernel's lengthscale `p[0]` a scalar here): what
    /// gradient-based samplers move kernel hyperparameters with (NUTS).
    fn d_params(&self, x: &[f64], z: &[f64], same: bool, p: &[f64], out: &mut [f64]);
    /// The `"type"` tag of the kernel in `gpmc check --format json`.
    fn json_type(&self) -> &'static str {
        self.name()
    }
    /// Parameters the library's own tests check the entry at.
    fn example(&self) -> &'static [f64] {
        self.signature().example
    }
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

/// Declares each kernel's module, gives it its row of the table and lists it in [`KERNELS`]:
/// one line per entry, `module::Entry = "name" aka [aliases](params) at [example] "formula"`.
macro_rules! register {
    ($($module:ident :: $entry:ident = $name:literal aka [ $($alias:literal),* ]
        ( $($pname:literal : $role:expr),* ) at [ $($ex:expr),* ] $formula:literal),* $(,)?) => {
        $(
            mod $module;
            registered!($module::$entry, Signature {
                name: $name,
                aliases: &[$($alias),*],
                params: &[$(KernelParam { name: $pname, role: $role }),*],
                example: &[$($ex),*],
                formula: $formula,
            });
        )*
        /// Every kernel of the language. Adding one: a file in this folder with how it is
        /// evaluated, and its row below (docs/ARCHITECTURE.md, "Adding a kernel").
        pub static KERNELS: &[&dyn KernelLaw] = &[$(&$module::$entry),*];
    };
}

#[rustfmt::skip]
register! {
    sqexp::SqExp = "sqexp" aka ["rbf"]("lengthscale": LENGTHSCALE) at [0.7] "exp(−r²/2), r = ‖x − x'‖/ℓ",
    matern12::Matern12 = "matern12" aka []("lengthscale": LENGTHSCALE) at [0.9] "exp(−r)",
    matern32::Matern32 = "matern32" aka []("lengthscale": LENGTHSCALE) at [1.1] "(1 + √3 r) exp(−√3 r)",
    matern52::Matern52 = "matern52" aka []("lengthscale": LENGTHSCALE) at [0.8] "(1 + √5 r + 5r²/3) exp(−√5 r)",
    rational_quadratic::RationalQuadratic = "rational_quadratic" aka []("lengthscale": LENGTHSCALE, "alpha": POSITIVE) at [0.9, 1.7] "(1 + r²/(2α))^(−α)",
    gamma_exponential::GammaExponential = "gamma_exponential" aka []("lengthscale": LENGTHSCALE, "gamma": half_open(0.0, 2.0)) at [0.9, 1.4] "exp(−r^γ), 0 < γ ≤ 2",
    linear::Linear = "linear" aka []("offset": real(0.0)) at [0.3] "x·x' + c",
    periodic::Periodic = "periodic" aka []("lengthscale": POSITIVE, "period": POSITIVE) at [0.8, 1.5] "exp(−2 Σ_d sin²(π (x_d − x'_d) / p) / ℓ²)",
    constant::Constant = "constant" aka []() at [] "1",
    white::White = "white" aka []() at [] "1 if the same training point, else 0",
}

/// `Σ_d ((x_d − z_d)/ℓ)²`, a stationary kernel's scaled squared distance at one lengthscale.
pub(crate) fn scaled_r2(x: &[f64], z: &[f64], l: f64) -> f64 {
    x.iter().zip(z).map(|(a, b)| ((a - b) / l).powi(2)).sum()
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
