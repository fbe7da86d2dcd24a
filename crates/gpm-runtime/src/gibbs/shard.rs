//! Sparse Gibbs over shards of the data (issue 33): one sweep of a model whose latents are all
//! sparse GPs, split where it needs every row at once.
//!
//! A sweep draws the auxiliaries row by row, then each sparse block jointly as `(v, f)`
//! ([`crate::sparse::SparseGp::sample_conditional`]): `v` from the FITC pseudo-observations
//! summed over all rows, then each `f_i | v` on its own. So a distributed sweep is one *round*
//! per sparse block: each shard (its rows' latents and auxiliaries kept between rounds, a
//! [`ShardChain`]) first draws the values of the block the driver drew `v` for last round, then
//! the steps before this round's block (the auxiliaries), and returns the block's
//! [`InducingStats`]; the shards' statistics are summed (in a fixed order or tree) and the
//! driver draws the block's `v` ([`InducingStats::draw`]). The math is the single-process
//! sweep's, through the same functions; only the random streams differ (one per row and round,
//! [`RowStreams`]), so a cluster's chain and a single-process chain agree in distribution, not
//! draw for draw.

use super::*;
use crate::shard::InducingStats;
use rand::Rng;

/// A shard's part of one chain of a distributed sparse Gibbs run, kept between rounds: its
/// rows' latent values and auxiliaries, and the curvature of the block whose `v` the driver
/// draws from this round's statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardChain {
    /// Latent values of the shard's rows ([`State::latents`]).
    latents: Vec<Vec<f64>>,
    /// Auxiliaries ([`State::aux`]).
    aux: Vec<Vec<Vec<f64>>>,
    /// The round whose statistics were returned last, and its block's curvature `a` and linear
    /// term `b` (what `f | v` reads); `None` before the first round.
    pending: Option<(usize, Vec<f64>, Vec<f64>)>,
}

/// What a sweep is on a cluster: per round, the step of the schedule's sweep and the sparse
/// block it draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Rounds {
    rounds: Vec<(usize, usize)>,
}

impl Rounds {
    /// Number of rounds (sparse blocks) per sweep.
    pub fn len(&self) -> usize {
        self.rounds.len()
    }

    /// What a distributed run's draw row holds — each sparse latent's `v`, as in a
    /// single-process row ([`VarKind::Inducing`]) — and where each round's `v` goes in it.
    pub fn layout(&self, sampler: &Sampler) -> (Layout, Vec<usize>) {
        let mut l = Layout::default();
        sampler.prep.push_inducing(&mut l);
        let at = self
            .rounds
            .iter()
            .map(|&(_, bi)| {
                let at = sampler.prep.inducing_offset(&l, bi);
                at.expect("rounds are sparse blocks")
            })
            .collect();
        (l, at)
    }

    /// `M` of each round's block.
    pub fn sizes(&self, sampler: &Sampler) -> Vec<usize> {
        self.rounds
            .iter()
            .map(|&(_, bi)| match &sampler.prep.blocks[bi] {
                Block::Sparse { sp, .. } => sp.m(),
                _ => unreachable!("rounds are sparse blocks"),
            })
            .collect()
    }

    /// Whether there is none (never, for a model that passed [`Sampler::rounds`]).
    pub fn is_empty(&self) -> bool {
        self.rounds.is_empty()
    }
}

/// The per-row streams of one round of a distributed chain: row `i` of the shard (global
/// position `first_row + i`) draws factor `f`'s auxiliaries from the stream keyed by
/// (seed, chain, sweep, round, global position, `f`) and its latent values given `v` from
/// (…, global position, [`VALUES`]) — so a row's draws are the same whichever partition holds
/// it, and a chain over any partitioning of the rows differs only by the rounding of the
/// shards' sums.
#[derive(Debug, Clone)]
pub struct RowStreams {
    /// (seed, chain, sweep, round).
    pub key: [u64; 4],
    /// The global position of the shard's first row.
    pub first_row: u64,
    current: ChaCha8Rng,
}

/// The purpose word of a row's draws of its latent values given `v` (factors are 0, 1, …).
const VALUES: u64 = u64::MAX;

impl RowStreams {
    /// The streams of round `key` = (seed, chain, sweep, round) of a shard whose first row is
    /// at global position `first_row`.
    pub fn new(key: [u64; 4], first_row: u64) -> RowStreams {
        RowStreams {
            key,
            first_row,
            current: ChaCha8Rng::seed_from_u64(0),
        }
    }

    fn of(&mut self, i: usize, purpose: u64) -> &mut ChaCha8Rng {
        let [seed, chain, sweep, round] = self.key;
        let row = self.first_row + i as u64;
        self.current = crate::cluster::stream(&[seed, chain, sweep, round, row, purpose]);
        &mut self.current
    }
}

impl RowRng for RowStreams {
    fn at(&mut self, f: usize, i: usize) -> &mut ChaCha8Rng {
        self.of(i, f as u64)
    }
}

impl<'a> Sampler<'a> {
    /// The rounds of a distributed sweep, or why this model's sweep does not split into them:
    /// every step must draw auxiliaries or a sparse GP block (no sampled hyperparameters, no
    /// collapsed or elliptical phases), and no factor may be the logistic-softmax.
    pub fn rounds(&self) -> Result<Rounds, RuntimeError> {
        let refuse = |why: &str, instead: &str| {
            Err(RuntimeError::Unsupported(format!(
                "sparse Gibbs over shards needs a sweep of auxiliaries and sparse GP blocks only: \
                 {why}; {instead}"
            )))
        };
        const ONE_MACHINE: &str = "sample this model on one machine (`gpmc infer`, \
                                   `Model.sample`), or fit it over the shards by CAVI or SVI";
        const FIX: &str = "give the hyperparameter a value or declare it `learn(...)` (learned \
                           over the shards before sampling), or sample on one machine";
        if self.labels.iter().any(Option::is_some) {
            return refuse(
                "the logistic-softmax's class auxiliaries are not kept per shard",
                ONE_MACHINE,
            );
        }
        let mut rounds = Vec::new();
        for (k, step) in self.schedule.gibbs.iter().enumerate() {
            match *step {
                GibbsStep::Auxiliaries => {}
                GibbsStep::Block {
                    block,
                    collapsed: false,
                } => {
                    for bi in self.prep.spec_blocks[block.0].clone() {
                        if !matches!(self.prep.blocks[bi], Block::Sparse { .. }) {
                            return refuse(
                                "every latent must be a sparse GP (`inducing = M`)",
                                ONE_MACHINE,
                            );
                        }
                        if self.kernels.iter().any(|sk| sk.block == bi) {
                            return refuse("a kernel hyperparameter is sampled", FIX);
                        }
                        rounds.push((k, bi));
                    }
                }
                _ => {
                    let kind = format!("{step:?}");
                    let kind = kind.split([' ', '{', '(']).next().unwrap_or_default();
                    let why = format!("step {} of the sweep (`{kind}`) is not one of them", k + 1);
                    return refuse(&why, FIX);
                }
            }
        }
        if rounds.is_empty() {
            return refuse("the model has no sparse GP", ONE_MACHINE);
        }
        Ok(Rounds { rounds })
    }

    /// A chain's part on this shard before its first round: the state [`Sampler::init`] sets
    /// (sparse GP values at their prior mean, auxiliaries at 1), as a single-process chain
    /// starts its sparse blocks.
    pub fn shard_chain(&self) -> ShardChain {
        let s = self.init();
        ShardChain {
            latents: s.latents.iter().map(|z| z.as_slice().to_vec()).collect(),
            aux: s.aux,
            pending: None,
        }
    }

    /// Round `round` of a sweep on this shard: the values of the block drawn last round given
    /// its `v` (`inducing`; `None` only before the very first round), the sweep's steps up to
    /// this round's block, and the block's FITC statistics over the shard's rows, every row's
    /// random numbers from its own stream (`rows`).
    pub fn shard_round(
        &self,
        rounds: &Rounds,
        chain: &mut ShardChain,
        round: usize,
        inducing: Option<&DVector<f64>>,
        rows: &mut RowStreams,
    ) -> Result<InducingStats, RuntimeError> {
        let k = rounds.len();
        let expected = chain.pending.as_ref().map(|p| (p.0 + 1) % k).unwrap_or(0);
        if round != expected || chain.pending.is_some() != inducing.is_some() {
            return Err(RuntimeError::Inconsistent(format!(
                "round {round} of a shard whose next round is {expected} (the driver's rounds \
                 and a shard's chain out of step)"
            )));
        }
        let mut state = self.init();
        if chain.latents.len() != state.latents.len()
            || chain
                .latents
                .iter()
                .zip(&state.latents)
                .any(|(a, b)| a.len() != b.len())
            || chain.aux.len() != state.aux.len()
        {
            return Err(RuntimeError::Inconsistent(
                "a shard's chain does not match its rows (another partition's, or another model's?)"
                    .into(),
            ));
        }
        for (z, c) in state.latents.iter_mut().zip(&chain.latents) {
            z.copy_from_slice(c);
        }
        state.aux = std::mem::take(&mut chain.aux);
        let swept = chain.pending.is_some();
        if let (Some((last, a, b)), Some(v)) = (chain.pending.take(), inducing) {
            self.values_given_inducing(rounds.rounds[last].1, &a, &b, v, &mut state, rows)?;
        }
        // The steps between the previous round's block and this one's; round 0 runs those
        // after the last block of the previous sweep first.
        let (step, bi) = rounds.rounds[round];
        let steps: Vec<usize> = if round == 0 {
            let last = rounds.rounds[k - 1].0;
            let tail = if swept {
                last + 1..self.schedule.gibbs.len()
            } else {
                0..0
            };
            tail.chain(0..step).collect()
        } else {
            (rounds.rounds[round - 1].0 + 1..step).collect()
        };
        for s in steps {
            if let GibbsStep::Auxiliaries = self.schedule.gibbs[s] {
                let pv = self.predictors(&state);
                self.sample_aux(&mut state, &pv, rows)?;
            }
        }
        let pv = self.predictors(&state);
        let b = &self.prep.blocks[bi];
        let (a, lin) = self.gp_curvature(bi, b, false, &state, &pv);
        let Block::Sparse { sp, .. } = b else {
            unreachable!("rounds are sparse blocks")
        };
        let (phi, kt) = self.sparse_feats[bi]
            .as_ref()
            .expect("a sparse block's features");
        let stats = sp.fitc_stats(phi, kt, &a, &lin)?;
        chain.latents = state
            .latents
            .iter()
            .map(|z| z.as_slice().to_vec())
            .collect();
        chain.aux = state.aux;
        chain.pending = Some((round, a, lin));
        Ok(stats)
    }

    /// A sparse block's values given its `v` and its curvature at the round its statistics
    /// were made ([`crate::sparse::SparseGp::sample_given_inducing`]).
    fn values_given_inducing(
        &self,
        bi: usize,
        a: &[f64],
        b: &[f64],
        v: &DVector<f64>,
        state: &mut State,
        rows: &mut RowStreams,
    ) -> Result<(), RuntimeError> {
        use rand_distr::StandardNormal;
        let Block::Sparse {
            sp, latent, column, ..
        } = &self.prep.blocks[bi]
        else {
            unreachable!("rounds are sparse blocks")
        };
        let (phi, kt) = self.sparse_feats[bi]
            .as_ref()
            .expect("a sparse block's features");
        let normal = |i: usize| rows.of(i, VALUES).sample::<f64, _>(StandardNormal);
        let f = sp.sample_given_inducing(phi, kt, a, b, v, normal)?;
        let rows = f.len();
        state.latents[*latent]
            .rows_mut(column * rows, rows)
            .copy_from(&f);
        Ok(())
    }
}

impl ShardChain {
    /// The chain as bytes (little-endian `f64`s: the latents, the auxiliaries and the pending
    /// curvature, each with its lengths), for a distributed engine to keep and move.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out: Vec<f64> = vec![self.latents.len() as f64];
        for z in &self.latents {
            out.push(z.len() as f64);
            out.extend(z);
        }
        out.push(self.aux.len() as f64);
        for f in &self.aux {
            out.push(f.len() as f64);
            for a in f {
                out.push(a.len() as f64);
                out.extend(a);
            }
        }
        match &self.pending {
            None => out.push(-1.0),
            Some((r, a, b)) => {
                out.extend([*r as f64, a.len() as f64]);
                out.extend(a);
                out.extend(b);
            }
        }
        out.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// The chain [`ShardChain::to_bytes`] wrote; an error for anything else.
    pub fn from_bytes(bytes: &[u8]) -> Result<ShardChain, RuntimeError> {
        if !bytes.len().is_multiple_of(8) {
            return Err(not_a_chain());
        }
        let words: Vec<f64> = bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let mut r = Reader {
            words: &words,
            at: 0,
        };
        let mut latents = Vec::new();
        for _ in 0..r.count()? {
            latents.push(r.vector()?);
        }
        let mut aux = Vec::new();
        for _ in 0..r.count()? {
            let mut f = Vec::new();
            for _ in 0..r.count()? {
                f.push(r.vector()?);
            }
            aux.push(f);
        }
        let pending = if r.words.get(r.at) == Some(&-1.0) {
            r.at += 1;
            None
        } else {
            let round = r.count()?;
            let a = r.vector()?;
            let b = r.take(a.len())?;
            Some((round, a, b))
        };
        if r.at != words.len() {
            return Err(not_a_chain());
        }
        Ok(ShardChain {
            latents,
            aux,
            pending,
        })
    }
}

fn not_a_chain() -> RuntimeError {
    RuntimeError::Inconsistent("not a shard's chain (pass what its previous round returned)".into())
}

/// Reads [`ShardChain::to_bytes`]'s words in order.
struct Reader<'w> {
    words: &'w [f64],
    at: usize,
}

impl Reader<'_> {
    /// A length: a whole number no larger than what is left.
    fn count(&mut self) -> Result<usize, RuntimeError> {
        let x = *self.words.get(self.at).ok_or_else(not_a_chain)?;
        self.at += 1;
        let left = (self.words.len() - self.at) as f64;
        (x >= 0.0 && x.fract() == 0.0 && x <= left)
            .then_some(x as usize)
            .ok_or_else(not_a_chain)
    }

    fn take(&mut self, n: usize) -> Result<Vec<f64>, RuntimeError> {
        let v = self
            .words
            .get(self.at..self.at + n)
            .ok_or_else(not_a_chain)?;
        self.at += n;
        Ok(v.to_vec())
    }

    /// A length, then that many values.
    fn vector(&mut self) -> Result<Vec<f64>, RuntimeError> {
        let n = self.count()?;
        self.take(n)
    }
}
