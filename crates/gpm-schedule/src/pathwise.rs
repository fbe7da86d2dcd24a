//! Where a full GP block's Gibbs draw solves with `B = I + SKS` by preconditioned conjugate
//! gradients instead of factorising it (the runtime's `pathwise.rs`): a value of the schedule,
//! carried out by the runtime from its crossover size on.
//!
//! The draw `f | ω` of a GP block pays a Cholesky factorisation of `B` every sweep (`N³/3`
//! flops), because the augmentation's curvature `S² = diag(a)` changes every sweep. Where the
//! kernel is fixed — no hyperparameter of the block's prior is sampled — the prior's leading
//! eigenpairs, computed once, precondition CG on `B` so that it converges in about ten
//! products with `K` (`O(N²)` each); the draw is the same Matheron draw, solved to a relative
//! residual of 10⁻¹⁰, and falls back to the factorisation where CG does not converge.

use crate::blocks::{BlockKind, BlockSpec};
use crate::hypers::{GpKernelUpdate, KernelGroup};
use serde::Serialize;

/// How a fixed-kernel full GP block's draw solves with `B` from a size on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PathwiseDraw {
    /// Blocks with fewer rows factorise `B`: below this the blocked Cholesky is faster than
    /// CG's passes over `K` (measured by whole runs: [`PathwiseDraw::for_fixed_kernel`]).
    pub min_rows: usize,
    /// Leading eigenpairs of `K` kept for the preconditioner (at most; a sweep uses those with
    /// `max(a) λ > 1`).
    pub rank: usize,
}

impl PathwiseDraw {
    /// The rule every fixed-kernel full GP block takes. Measured by whole `gpmc infer` runs of
    /// the synthetic GP classifier (D = 10, 2 chains × 500 sweeps, the same code with the rule
    /// off, interleaved; the draws identical): wall time 1.15× the factorised path's at N = 400,
    /// 1.04× at 600, 1.01× on the breast-cancer classifier (569 × 30), 0.89× at 800, 0.78× at
    /// 1 000, 0.59× at 1 500. One draw alone on one core (`cargo bench -p gpmc --bench
    /// pathwise`, factorised ÷ pathwise time): 1.02× at N = 200, 0.99× at 400, 1.13× at 600,
    /// 1.30× at 800, 1.60× at 1 000, 2.15× at 1 500, 2.88× at 2 000 — two chains at once share
    /// the memory bandwidth CG lives on, hence the whole runs' later crossover. Rank 128
    /// against 16–80 and all pairs with `max(a) λ > 1`: fewer iterations than the lower ranks,
    /// a cheaper setup than all pairs.
    pub fn for_fixed_kernel() -> Self {
        PathwiseDraw {
            min_rows: 800,
            rank: 128,
        }
    }

    /// Whether a block of `rows` rows takes it.
    pub fn applies(&self, rows: usize) -> bool {
        rows >= self.min_rows
    }

    /// For people: the `gpmc check` text.
    pub fn describe(&self) -> String {
        format!(
            "from {} rows on by conjugate gradients on B = I + SKS, preconditioned with the \
             prior's {} leading eigenpairs (computed once), instead of a factorisation: the same \
             draw to a relative residual of 1e-10, the factorisation where CG does not converge",
            self.min_rows, self.rank
        )
    }
}

/// Each full GP block whose own conditional draw a sweep makes (not collapsed, no generic
/// update) and whose prior no hyperparameter moves takes [`PathwiseDraw::for_fixed_kernel`].
pub(crate) fn pathwise_draws(
    blocks: &mut [BlockSpec],
    kernels: &[GpKernelUpdate],
    groups: &[KernelGroup],
) {
    for b in blocks.iter_mut() {
        let moving = crate::hypers::kernel_moves(b.id, kernels, groups);
        if b.kind == BlockKind::FullGp && !b.collapsed && b.elliptical.is_empty() && !moving {
            b.pathwise = Some(PathwiseDraw::for_fixed_kernel());
        }
    }
}
