//! The schedule's ids as people read them — `B1 (f)`, `lengthscale, variance` — for `gpmc
//! check` and the Gibbs moves' descriptions (one spelling wherever a step is described).

use crate::ids::{BlockId, HyperId, LatentId};
use crate::schedule::Schedule;

impl Schedule {
    /// A latent's declared name.
    pub fn latent_name(&self, l: LatentId) -> &str {
        &self.latents[l.0].name
    }

    /// A block as `B1 (f)`: its number from 1 and its latents.
    pub fn block_name(&self, b: BlockId) -> String {
        let names: Vec<&str> = self.blocks[b.0]
            .latents
            .iter()
            .map(|l| self.latent_name(*l))
            .collect();
        format!("B{} ({})", b.0 + 1, names.join(", "))
    }

    /// Blocks' names, comma-separated.
    pub fn block_names(&self, blocks: &[BlockId]) -> String {
        let names: Vec<String> = blocks.iter().map(|b| self.block_name(*b)).collect();
        names.join(", ")
    }

    /// Hyperparameters' declared names, comma-separated.
    pub fn hyper_names(&self, ids: &[HyperId]) -> String {
        ids.iter()
            .map(|h| self.hyper_decls[h.0].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}
