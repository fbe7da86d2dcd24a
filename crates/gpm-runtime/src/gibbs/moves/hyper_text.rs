//! What the moves that draw a block say of the hyperparameter moves that come with it: a GP's
//! kernel (marginal, with a surrogate transition and a non-centred move where scheduled) and a
//! dense block's normal prior (non-centred, level-held and Laplace-standardised moves). Shared
//! by [`super::block`] and [`super::elliptical`], whose blocks carry them.

use gpm_schedule::{BlockId, DenseScaleUpdate, HyperId, Schedule, SliceScheme};
use std::fmt::Write;

/// The hyperparameter moves that come with drawing block `b`, as a clause to append.
pub(super) fn block_hyper_text(s: &Schedule, b: BlockId) -> String {
    let mut extra = String::new();
    if let Some(k) = s.kernel_updates.iter().find(|k| k.block == b) {
        slice_clause(s, &k.hypers, &k.slice, k.given_values, &mut extra);
        if let Some(st) = &k.surrogate {
            let _ = write!(extra, "; {}", st.describe());
        }
        if !k.interweave.is_empty() && k.interweave_variance_only {
            let variance = s.kernel_variance_hypers(k.block);
            let moved: Vec<HyperId> = k
                .hypers
                .iter()
                .copied()
                .filter(|h| variance.contains(h))
                .collect();
            let _ = write!(
                extra,
                "; after the draw, {} again with the standardised values L⁻¹(f − μ₀) held \
                 instead (the non-centred move of the variance alone: a new variance rescales \
                 f − μ₀ and the prior's factor, no factorisation), one at a time by slice \
                 sampling, then the auxiliaries drawn again",
                s.hyper_names(&moved)
            );
        } else if !k.interweave.is_empty() {
            let _ = write!(
                extra,
                "; after the draw, {} again with the standardised values L⁻¹(f − μ₀) held \
                 instead (the non-centred move), the same way, then the auxiliaries drawn \
                 again",
                s.hyper_names(&k.hypers)
            );
        }
    }
    if let Some(d) = s.dense_updates.iter().find(|d| d.block == b) {
        dense_hyper_text(s, d, &mut extra);
    }
    extra
}

/// `, after slice sampling θ … with the block integrated out` (or given its values): the
/// marginal move of a kernel's or a dense prior's hyperparameters.
fn slice_clause(
    s: &Schedule,
    hypers: &[HyperId],
    slice: &SliceScheme,
    given: bool,
    extra: &mut String,
) {
    let _ = write!(
        extra,
        ", after slice sampling {} {} {}",
        s.hyper_names(hypers),
        slice.describe(),
        if given {
            "given the block's current values"
        } else {
            "with the block integrated out"
        }
    );
}

/// A dense block's prior-scale moves, appended to `extra`.
fn dense_hyper_text(s: &Schedule, d: &DenseScaleUpdate, extra: &mut String) {
    slice_clause(s, &d.hypers, &d.slice, d.given_values, extra);
    if !d.interweave.is_empty() {
        let level = if d.level.is_empty() {
            String::new()
        } else {
            let names: Vec<&str> = d.level.iter().map(|li| s.latent_name(*li)).collect();
            format!(
                " and the level held ({} shifted by the weights' least-squares \
                     projection on {} columns)",
                names.join(", "),
                if names.len() == 1 { "its" } else { "their" }
            )
        };
        let _ = write!(
            extra,
            "; after the update, {} again with the standardised values (θ − m)/s held \
                 instead{level} (the non-centred move, interwoven against the funnel), the \
                 same way, {} times, then the auxiliaries drawn again",
            s.hyper_names(&d.hypers),
            d.interweave_moves
        );
    }
    if d.laplace {
        let _ = write!(
            extra,
            "; then {} once more with the values standardised by the block's Laplace \
                 approximation at each value, ε = Lᵀ(θ − θ̂) held (for a block of at most {} \
                 values), and the auxiliaries drawn again",
            s.hyper_names(&d.hypers),
            gpm_schedule::LAPLACE_MAX_DIM
        );
    }
}
