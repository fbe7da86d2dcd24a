//! The pathwise draw bound to the blocks the schedule chose it for
//! ([`gpm_schedule::PathwiseDraw`]): each such full GP block of at least `min_rows` rows gets
//! its prior's leading eigenpairs, computed once and shared by the columns of a matrix latent
//! (they share `K`), so that its draws solve with `B` by CG (`crate::pathwise`).

use crate::prepared::{Block, Prepared};
use crate::RuntimeError;
use gpm_schedule::Schedule;

/// `prep` with the spectra attached. The eigendecomposition holds `N × N` eigenvectors and
/// about as much work space while it runs: checked against the memory available first.
pub(super) fn attach(schedule: &Schedule, mut prep: Prepared) -> Result<Prepared, RuntimeError> {
    for (spec, range) in schedule.blocks.iter().zip(prep.spec_blocks.clone()) {
        let Some(rule) = spec.pathwise else {
            continue;
        };
        let mut shared = None;
        for bi in range {
            let Block::Gp { gp, .. } = &mut prep.blocks[bi] else {
                continue;
            };
            let n = gp.len();
            if !rule.applies(n) {
                continue;
            }
            let spectrum = match &shared {
                Some(s) => std::sync::Arc::clone(s),
                None => {
                    let n = n as u64;
                    crate::memory::refuse_beyond(
                        crate::memory::values(&[n.saturating_mul(n).saturating_mul(2)]),
                        &format!(
                            "the pathwise draw of {} ({n} rows)",
                            schedule.block_name(spec.id)
                        ),
                        "run with fewer rows, or a sparse GP (`inducing = M`)",
                    )?;
                    crate::progress::emit(crate::progress::Event::PathwiseSpectrum {
                        rows: gp.len(),
                    });
                    let s =
                        std::sync::Arc::new(crate::pathwise::PriorSpectrum::of(&gp.k, rule.rank)?);
                    shared = Some(std::sync::Arc::clone(&s));
                    s
                }
            };
            gp.set_spectrum(spectrum);
        }
    }
    Ok(prep)
}
