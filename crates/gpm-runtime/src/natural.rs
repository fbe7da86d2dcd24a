//! The one place where a Gaussian block's natural parameters are summed from the factors'
//! augmented terms. Every factor contributes `b·η − ½ a η²` per observation for each predictor
//! `η` it reads (thesis eq. 5.9: the augmented log-likelihood is quadratic in `η` given the
//! auxiliaries); a block entry `z_i` read as `η = coef·z_i + rest` therefore gets curvature
//! `a·coef²` and linear term `(b − a·rest)·coef`. Gibbs, CAVI and SVI all accumulate this way.

/// Natural parameters `Σ_i b_i z_i − ½ a_i z_i²` of a block, or, for a dense block, one row
/// per observation of its stacked design.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NaturalParams {
    /// Curvatures.
    pub a: Vec<f64>,
    /// Linear terms.
    pub b: Vec<f64>,
}

impl NaturalParams {
    /// `n` entries, all zero.
    pub fn zeros(n: usize) -> Self {
        NaturalParams {
            a: vec![0.0; n],
            b: vec![0.0; n],
        }
    }

    /// Entry `i` read by `η = coef·z_i + rest` in a term with curvature `a` and linear term `b`.
    #[inline]
    pub fn add(&mut self, i: usize, a: f64, b: f64, coef: f64, rest: f64) {
        self.a[i] += a * coef * coef;
        self.b[i] += (b - a * rest) * coef;
    }

    /// A dense block's observation row: `η = φᵀθ + rest` (the coefficients are in the design
    /// row `φ`), so the row's pseudo-observation has curvature `a` and linear term `b − a·rest`.
    #[inline]
    pub fn push_row(&mut self, a: f64, b: f64, rest: f64) {
        self.a.push(a);
        self.b.push(b - a * rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accumulated terms reproduce the quadratic: for `η = c·z + r`,
    /// `bη − ½aη² = (b − a r)c·z − ½ a c² z² + const`.
    #[test]
    fn terms_are_the_quadratic_in_the_entry() {
        let (a, b, c, r) = (0.7, -1.3, 2.5, 0.4);
        let mut np = NaturalParams::zeros(1);
        np.add(0, a, b, c, r);
        let q = |z: f64| {
            let eta = c * z + r;
            b * eta - 0.5 * a * eta * eta
        };
        let via = |z: f64| np.b[0] * z - 0.5 * np.a[0] * z * z;
        for z in [-2.0, 0.0, 0.3, 5.0] {
            assert!(((q(z) - q(0.0)) - (via(z) - via(0.0))).abs() < 1e-12);
        }
        let mut rows = NaturalParams::default();
        rows.push_row(a, b, r);
        assert_eq!(rows.a, vec![a]);
        assert!((rows.b[0] - (b - a * r)).abs() < 1e-15);
    }
}
