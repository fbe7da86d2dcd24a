//! A full GP block whose kernel (or mean) reads sampled hyperparameters, under NUTS: its prior
//! factored again at each position, `f = μ(θ) + L(θ) v` with `L(θ)Lᵀ(θ) = K(θ)`, and the
//! likelihood's gradient `g = ∇_f log p(y | f)` carried to θ in reverse mode through the
//! Cholesky factor: with `dL = L Φ(L⁻¹ dK L⁻ᵀ)` (Φ: the lower triangle, the diagonal halved;
//! Murray 2016), `gᵀ dL v = Σ_ij B_ij dK_ij` for `B = L⁻ᵀ Φ(w vᵀ)ᵀ L⁻¹`, `w = Lᵀ g` — one
//! `O(N³)` matrix for every hyperparameter, then `O(N²)` per hyperparameter with
//! `∂K/∂h` ([`crate::kernel_gradient`]).

use crate::kernels::HyperValues;
use crate::whitened::Whitening;
use crate::RuntimeError;
use gpm_schedule::{BoundKernel, HyperId, Tape};
use nalgebra::DMatrix;
use std::sync::Arc;

/// The jitter a factorisation added: `factor · K_at,at` on the diagonal.
#[derive(Debug, Clone, Copy)]
pub(super) struct Jitter {
    factor: f64,
    at: usize,
}

/// The prior of one GP block, re-formed at each position.
pub(super) struct KernelBlock {
    /// Index into the target's blocks.
    pub(super) block: usize,
    pub(super) kernel: BoundKernel,
    pub(super) mean: Tape,
    pub(super) inputs: Arc<DMatrix<f64>>,
}

impl KernelBlock {
    /// `(μ, L)` at values `hv`, as a whitening, with the jitter the factorisation added.
    pub(super) fn whitening(&self, hv: &HyperValues) -> Result<(Whitening, Jitter), RuntimeError> {
        let k = crate::kernels::kernel_matrix(&self.kernel, &self.inputs, &self.inputs, hv)?;
        // The jitter is a multiple of the largest diagonal entry (`cholesky_jitter`), so it
        // moves with the hyperparameters that move that entry.
        let (mut at, mut scale) = (0, 0.0f64);
        for (i, v) in k.diagonal().iter().enumerate() {
            if v.abs() > scale {
                (at, scale) = (i, v.abs());
            }
        }
        let gp = crate::gaussian::GpBlock::new(k, hv.eval(&self.mean)?)?;
        let jitter = Jitter {
            factor: if gp.jitter > 0.0 {
                gp.jitter / scale
            } else {
                0.0
            },
            at,
        };
        let l = gp.chol.l();
        let w = Whitening::Gp {
            mean: gp.mean,
            lt: l.transpose(),
            l,
        };
        Ok((w, jitter))
    }

    /// `∂/∂θ_h gᵀ f(v, θ)` for each hyperparameter of `moved` (zero where the prior does not
    /// read it), given the block's whitening at `hv` and its jitter, the likelihood's gradient `g` in its
    /// values and its whitened coordinates `v`.
    pub(super) fn hyper_gradient(
        &self,
        (whitening, jitter): (&Whitening, Jitter),
        g: &[f64],
        v: &[f64],
        hv: &HyperValues,
        moved: &[HyperId],
    ) -> Result<Vec<f64>, RuntimeError> {
        let Whitening::Gp { l, lt, .. } = whitening else {
            return Err(RuntimeError::Inconsistent(
                "a GP block whitened as a dense one".into(),
            ));
        };
        let n = v.len();
        let mut out = vec![0.0; moved.len()];
        // Through the mean: ∂f/∂μ = 1.
        for (k, h) in moved.iter().enumerate() {
            if self.mean.as_slot() == Some(h.0) {
                out[k] += g.iter().sum::<f64>();
            }
        }
        let mut read = Vec::new();
        self.kernel.hypers(&mut read);
        if !moved.iter().any(|h| read.contains(h)) {
            return Ok(out);
        }
        let gm = DMatrix::from_column_slice(n, 1, g);
        let w = crate::linalg::matmul(lt, &gm);
        // Φ(w vᵀ)ᵀ: upper triangle w_j v_i (i < j), diagonal ½ w_i v_i.
        let phi_t = DMatrix::from_fn(n, n, |i, j| match i.cmp(&j) {
            std::cmp::Ordering::Less => w[j] * v[i],
            std::cmp::Ordering::Equal => 0.5 * w[i] * v[i],
            std::cmp::Ordering::Greater => 0.0,
        });
        // B = L⁻ᵀ Φᵀ L⁻¹ = Z L⁻¹ with Z = L⁻ᵀ Φᵀ, so Bᵀ = L⁻ᵀ Zᵀ; and Σ_ij B_ij dK_ij =
        // Σ_ij Bᵀ_ij dK_ij, dK being symmetric.
        let z = crate::linalg::solve_lower_transposed(l, phi_t);
        let bt = crate::linalg::solve_lower_transposed(l, z.transpose());
        for (k, &h) in moved.iter().enumerate() {
            if let Some(dk) =
                crate::kernel_gradient::training_gradient(&self.kernel, &self.inputs, hv, h)?
            {
                // `K + c·K_aa·I` was factored: its derivative has `c·∂K_aa` on the diagonal.
                let dj = jitter.factor * dk[(jitter.at, jitter.at)];
                out[k] += bt.component_mul(&dk).sum() + dj * bt.trace();
            }
        }
        Ok(out)
    }
}
