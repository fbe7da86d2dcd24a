//! Inducing points chosen as SVI's minibatches arrive (`inducing = adaptive(rho, max)`, thesis
//! Appendix A): the binding's one-pass choice is set aside, the points start again from the
//! first minibatch's first row, and every minibatch's rows are offered to the online rule
//! ([`crate::sparse::SparseGp::offer`]). A new point extends `q` without changing it where it
//! matters: in the whitened coordinates `u = μ₀ + L v`, adding a point adds a coordinate
//! `v_new ~ N(0, 1)` independent of the others under the prior, so `q(v) ⊗ N(0, 1)` is
//! `q(u_old) p(u_new | u_old)` — the same `q(f)` everywhere, the same KL and ELBO.

use crate::prepared::{Block, Prepared};
use crate::sparse::{QInducing, SparseGp};
use crate::RuntimeError;
use nalgebra::DMatrix;
use std::sync::Arc;

/// The blocks whose points grow, by latent: the columns of a matrix latent share theirs.
pub(super) struct Growth {
    /// Per latent: its blocks (the first leads) and the training inputs.
    groups: Vec<(Vec<usize>, Arc<DMatrix<f64>>)>,
}

impl Growth {
    pub(super) fn new(prep: &Prepared) -> Growth {
        let mut groups: Vec<(usize, Vec<usize>, Arc<DMatrix<f64>>)> = Vec::new();
        for (bi, b) in prep.blocks.iter().enumerate() {
            let Block::Sparse {
                latent, sp, inputs, ..
            } = b
            else {
                continue;
            };
            if sp.online.is_none() {
                continue;
            }
            match groups.iter_mut().find(|g| g.0 == *latent) {
                Some(g) => g.1.push(bi),
                None => groups.push((*latent, vec![bi], Arc::clone(inputs))),
            }
        }
        Growth {
            groups: groups.into_iter().map(|(_, b, x)| (b, x)).collect(),
        }
    }

    /// Offer the minibatch `idx` to every growing latent's rule; on the `first` minibatch the
    /// points start again from its first row (and `q` from the prior).
    pub(super) fn offer(
        &self,
        first: bool,
        idx: &[usize],
        sps: &mut [SparseGp],
        q: &mut [QInducing],
    ) -> Result<(), RuntimeError> {
        for (blocks, x) in &self.groups {
            let lead = blocks[0];
            let (start, rest) = if first {
                let Some(&row) = idx.first() else { continue };
                sps[lead] = sps[lead].restarted(x, row)?;
                (true, &idx[1..])
            } else {
                (false, idx)
            };
            let added = sps[lead].offer(x, rest.iter().copied())?;
            if added == 0 && !start {
                continue;
            }
            for &b in blocks {
                if b != lead {
                    sps[b] = sps[lead].clone();
                }
                q[b] = if start {
                    QInducing::prior(sps[lead].m())
                } else {
                    q[b].extended(added)?
                };
            }
        }
        Ok(())
    }

    /// The final `q` of every growing block carries the inducing inputs it lives on (which
    /// the binding of the data would not choose again).
    pub(super) fn carry_inputs(&self, mut q: Vec<QInducing>, sps: &[SparseGp]) -> Vec<QInducing> {
        for (blocks, _) in &self.groups {
            for &b in blocks {
                q[b].inputs = Some(sps[b].z.clone());
            }
        }
        q
    }
}
