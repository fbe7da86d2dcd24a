//! Stan's GLM densities (`normal_id_glm`, `bernoulli_logit_glm`, `poisson_log_glm`) fused into
//! one tape node when the design matrix is data: `Σ_i log p(y_i | α + x_i β, ...)` with the
//! partials `∂/∂β_k = Σ_i x_ik ∂ℓ_i/∂η_i`, `∂/∂α = Σ_i ∂ℓ_i/∂η_i` computed in two passes
//! over `x`.
//!
//! Why: written out, `x β` is one node per observation with `K` parents and the density one
//! more node with `N` parents — `N (K + 2)` tape entries per gradient (125 000 for the
//! diamonds regression, N = 5 000, K = 24) and a backward pass through all of them. Fused, the
//! node has `K + 2` parents and the work is the two matrix-vector products a hand-written
//! gradient does (what Stan's own GLM functions are for).

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::value::{Mat, Val};

/// A family's log density at scalar arguments `(y, η, rest...)` and its partials.
pub type Family = fn(&[f64]) -> (f64, [f64; 4]);

/// An argument that is one value or one per observation.
fn per_observation(v: &Val, n: usize, what: &str, name: &str) -> Eval<Vec<R>> {
    let flat = v.flat();
    if flat.len() != 1 && flat.len() != n {
        return Err(EvalError::new(format!(
            "`{name}`: {what} has {} values for {n} observations",
            flat.len()
        )));
    }
    Ok(flat)
}

fn at(v: &[R], i: usize) -> R {
    v[if v.len() == 1 { 0 } else { i }]
}

/// `Σ_i family(y_i | α_i + x_i β, rest_i)` as one node; `None` (and nothing on the tape)
/// when `x` is not constant, for the written-out form.
#[allow(clippy::too_many_arguments)]
pub fn fused(
    t: &mut Tape,
    y: &Val,
    x: &Mat,
    alpha: &Val,
    beta: &Val,
    rest: &[Val],
    family: Family,
    arity: usize,
    name: &str,
) -> Eval<Option<R>> {
    let y = y.flat();
    let n = y.len();
    let beta = beta.flat();
    if x.rows != n || x.cols != beta.len() {
        return Err(EvalError::new(format!(
            "`{name}`: x is {} × {}, for {n} observations and {} coefficients",
            x.rows,
            x.cols,
            beta.len()
        )));
    }
    if 2 + rest.len() != arity {
        return Err(EvalError::new(format!(
            "`{name}` takes {} arguments after the coefficients, not {}",
            arity - 2,
            rest.len()
        )));
    }
    let alpha = per_observation(alpha, n, "alpha", name)?;
    let rest: Vec<Vec<R>> = rest
        .iter()
        .map(|r| per_observation(r, n, "an argument", name))
        .collect::<Eval<_>>()?;
    // η = α + x β, column by column (x is column-major); on the way, whether x is data.
    let mut eta: Vec<f64> = (0..n).map(|i| at(&alpha, i).v).collect();
    let mut constant = true;
    for (k, b) in beta.iter().enumerate() {
        let column = &x.data[k * n..(k + 1) * n];
        for (e, xik) in eta.iter_mut().zip(column) {
            *e += xik.v * b.v;
            constant &= xik.is_constant();
        }
    }
    if !constant {
        return Ok(None);
    }
    let mut total = 0.0;
    let mut d_eta = vec![0.0; n];
    let mut d_rest = vec![0.0; rest.len()];
    let mut parents: Vec<(R, f64)> = Vec::new();
    let mut args = [0.0; 4];
    for i in 0..n {
        args[0] = y[i].v;
        args[1] = eta[i];
        for (j, r) in rest.iter().enumerate() {
            args[2 + j] = at(r, i).v;
        }
        let (lp, d) = family(&args[..arity]);
        if lp.is_nan() {
            let e = EvalError::out_of_range(name, &args[..arity]);
            return Err(EvalError::reject(format!(
                "{} at observation {}",
                e.message,
                i + 1
            )));
        }
        total += lp;
        d_eta[i] = d[1];
        if !y[i].is_constant() {
            parents.push((y[i], d[0]));
        }
        for (j, r) in rest.iter().enumerate() {
            if r.len() == 1 {
                d_rest[j] += d[2 + j];
            } else if !r[i].is_constant() {
                parents.push((r[i], d[2 + j]));
            }
        }
        if alpha.len() != 1 {
            parents.push((alpha[i], d[1]));
        }
    }
    for (k, b) in beta.iter().enumerate() {
        let column = &x.data[k * n..(k + 1) * n];
        let g: f64 = column.iter().zip(&d_eta).map(|(xik, d)| xik.v * d).sum();
        parents.push((*b, g));
    }
    if alpha.len() == 1 {
        parents.push((alpha[0], d_eta.iter().sum()));
    }
    for (j, r) in rest.iter().enumerate() {
        if r.len() == 1 {
            parents.push((r[0], d_rest[j]));
        }
    }
    Ok(Some(t.node(total, &parents)))
}
