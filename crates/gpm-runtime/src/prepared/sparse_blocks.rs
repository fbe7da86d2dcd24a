//! What the sparse GP blocks of a bound model hold, read by the methods that run over shards
//! and by the draw rows: their inducing inputs, sizes, and where their whitened inducing
//! coordinates go in a row.

use super::{Block, Prepared};
use nalgebra::DMatrix;

impl Prepared {
    /// Each sparse latent's whitened inducing coordinates, `M` or `M × columns`, pushed onto a
    /// draw row's layout (as Gibbs rows and draws from `q` hold them).
    pub fn push_inducing(&self, l: &mut crate::draws::Layout) {
        use crate::draws::VarKind;
        for (li, _) in self.latents.iter().enumerate() {
            let ms: Vec<usize> = self
                .blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Sparse { latent, sp, .. } if *latent == li => Some(sp.m()),
                    _ => None,
                })
                .collect();
            // One block per column of a matrix latent, each with the same M.
            let id = gpm_schedule::LatentId(li);
            match ms.as_slice() {
                [] => {}
                [m] => l.push(VarKind::Inducing(id), vec![*m]),
                [m, ..] => l.push(VarKind::Inducing(id), vec![*m, ms.len()]),
            }
        }
    }

    /// Where sparse block `bi`'s `v` starts in a row laid out by [`Prepared::push_inducing`]
    /// (`None` for another kind of block).
    pub fn inducing_offset(&self, l: &crate::draws::Layout, bi: usize) -> Option<usize> {
        let Block::Sparse {
            latent, column, sp, ..
        } = &self.blocks[bi]
        else {
            return None;
        };
        let var = l.find(crate::draws::VarKind::Inducing(gpm_schedule::LatentId(
            *latent,
        )))?;
        Some(var.offset + column * sp.m())
    }

    /// Per sparse GP block: its rows `N` and inducing points `M` (what a full-batch method's
    /// features hold, [`crate::memory::check_features`]).
    pub fn sparse_sizes(&self) -> Vec<(usize, usize)> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Sparse { sp, inputs, .. } => Some((inputs.nrows(), sp.m())),
                _ => None,
            })
            .collect()
    }

    /// The inducing inputs of the sparse GP latents, in declaration order (as
    /// [`Prepared::with_inducing`] takes them).
    pub fn inducing_inputs(&self) -> Vec<DMatrix<f64>> {
        let mut out: Vec<(usize, DMatrix<f64>)> = Vec::new();
        for b in &self.blocks {
            if let Block::Sparse { latent, sp, .. } = b {
                if !out.iter().any(|(l, _)| l == latent) {
                    out.push((*latent, sp.z.clone()));
                }
            }
        }
        out.into_iter().map(|(_, z)| z).collect()
    }
}
