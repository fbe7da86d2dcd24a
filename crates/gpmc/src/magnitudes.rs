//! Values whose squares leave double precision: data, hyperparameter values and the model's
//! constants beyond 10^±150. Every method squares them (a Gaussian's `(y − η)²/σ²`, a
//! precision `1/σ²`, a kernel's variance), and a square beyond about 10^±308 under- or
//! overflows, so the arithmetic is wrong before any sampler runs: measured by the extreme
//! fuzz (`tests/extreme_numerics.rs`), a noise sd of 3e-220 with data at 4e-211 gave Gibbs a
//! posterior sd 10⁻¹⁵ times the exact one, a prior sd of 2e238 a mean 10³⁰ sds off, both with
//! no warning. Read once before a run; the run then warns ([`crate::warnings::extremes`]).

use gpm_ir::{HyperKind, LatentPrior, Model};
use gpm_runtime::data::{Data, Value};

/// Magnitudes outside `[SMALLEST, LARGEST]` (zero excepted) are named: their squares are
/// beyond `10^±300`, near the ends of double precision (`2.2e-308`, `1.8e308`). Data beyond
/// `LARGEST` are refused when they are read ([`crate::data::MAX_MAGNITUDE`]); tiny data, whose
/// squares often harmlessly vanish, are warned of here, as are the model's own values.
pub const LARGEST: f64 = crate::data::MAX_MAGNITUDE;
/// See [`LARGEST`].
pub const SMALLEST: f64 = 1.0 / LARGEST;

/// A value beyond the range, and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Extreme {
    /// The datum's entry (`x[3]`), the hyperparameter, or the constant's place.
    pub what: String,
    /// The value.
    pub value: f64,
}

fn extreme(v: f64) -> bool {
    v.is_finite() && v != 0.0 && !(SMALLEST..=LARGEST).contains(&v.abs())
}

/// The first extreme value of each datum, hyperparameter value and statement with constants
/// (at most one per place, so that a long vector names itself once).
pub fn extremes(model: &Model, data: &Data) -> Vec<Extreme> {
    let mut out = in_data(data);
    for h in &model.hypers {
        let v = match &h.kind {
            HyperKind::Fixed { value } => *value,
            HyperKind::Learn { init } => *init,
            HyperKind::Prior { .. } => continue,
        };
        if extreme(v) {
            out.push(Extreme {
                what: format!("`{}`", h.name),
                value: v,
            });
        }
    }
    for l in &model.latents {
        let params = match &l.prior {
            LatentPrior::Normal { mean, scale } => vec![mean, scale],
            LatentPrior::Gp { mean, .. } => vec![mean],
            LatentPrior::Flat => vec![],
        };
        let first = params
            .iter()
            .flat_map(|p| p.numbers())
            .find(|v| extreme(*v));
        if let Some(value) = first {
            out.push(Extreme {
                what: format!("a constant in the prior of `{}`", l.name),
                value,
            });
        }
    }
    for f in &model.factors {
        let sx = match &f.form {
            gpm_ir::FactorForm::LogDensity { log_density } => log_density,
            gpm_ir::FactorForm::Categorical { log_weight, .. } => log_weight,
        };
        if let Some(value) = sx.numbers().into_iter().find(|v| extreme(*v)) {
            out.push(Extreme {
                what: format!("a constant in `{}`", f.source),
                value,
            });
        }
    }
    out
}

/// The first extreme entry of each datum.
pub fn in_data(data: &Data) -> Vec<Extreme> {
    let mut out = Vec::new();
    for (name, value) in &data.values {
        let found = match value {
            Value::Scalar(v) => extreme(*v).then_some((None, *v)),
            Value::Vector(v) => v
                .iter()
                .position(|x| extreme(*x))
                .map(|i| (Some(format!("[{}]", i + 1)), v[i])),
            Value::Matrix(m) => (0..m.nrows())
                .flat_map(|i| (0..m.ncols()).map(move |j| (i, j)))
                .find(|&(i, j)| extreme(m[(i, j)]))
                .map(|(i, j)| (Some(format!("[{}, {}]", i + 1, j + 1)), m[(i, j)])),
        };
        if let Some((index, v)) = found {
            out.push(Extreme {
                what: format!("`{name}{}`", index.unwrap_or_default()),
                value: v,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_whose_squares_leave_double_precision_are_named_once_per_place() {
        let c = crate::check(
            "t",
            "data { N : int; x : vector[N]; y : vector[N]; }
hyper { sigma : real in 0.. = 3e-220; }
latent { w : real ~ normal(0, 2e238); }
model { y ~ normal(x * w, sigma); }",
        )
        .expect("checks");
        let mut data = Data::default();
        data.values.insert("N".into(), Value::Scalar(3.0));
        data.values
            .insert("x".into(), Value::Vector(vec![1.0, 4e-211, 5e-211]));
        data.values.insert("y".into(), Value::Vector(vec![0.0; 3]));
        let found = extremes(&c.model, &data);
        let names: Vec<&str> = found.iter().map(|e| e.what.as_str()).collect();
        assert_eq!(
            names,
            ["`x[2]`", "`sigma`", "a constant in the prior of `w`"],
            "{found:?}"
        );
        assert_eq!(found[0].value, 4e-211);
        // On the scale of a problem: nothing.
        data.values
            .insert("x".into(), Value::Vector(vec![1.0, 1e-100, 1e120]));
        assert_eq!(in_data(&data), vec![]);
    }
}
