//! Each block's Gaussian conditional given the auxiliaries (its natural parameters from the factors' curvature), with the hyperparameter moves that precede its draw, and the draw itself.

use super::*;

impl<'a> Sampler<'a> {
    /// Rows of a GP or sparse block.
    pub(super) fn rows_of(&self, bi: usize, b: &Block) -> usize {
        match b {
            Block::Gp { gp, .. } => gp.len(),
            _ => self.sparse_feats[bi].as_ref().map_or(0, |f| f.1.len()),
        }
    }

    /// A GP or sparse block's curvature `a` and linear term `b` from every factor, given the
    /// auxiliaries and the other latents.
    pub(super) fn gp_curvature(
        &self,
        bi: usize,
        b: &Block,
        collapsed_phase: bool,
        state: &State,
        pv: &[Vec<f64>],
    ) -> (Vec<f64>, Vec<f64>) {
        let mut stack = Vec::with_capacity(64);
        let (Block::Gp { latent, column, .. } | Block::Sparse { latent, column, .. }) = b else {
            return (vec![], vec![]);
        };
        let rows = self.rows_of(bi, b);
        let mut np = NaturalParams::zeros(rows);
        for (f, fp) in self.schedule.factors.iter().enumerate() {
            if let Some(crate::categorical::BoundCategorical { labels, .. }) = &self.labels[f] {
                let cat = fp
                    .categorical
                    .as_ref()
                    .expect("a factor with bound labels is categorical");
                if !collapsed_phase && self.prep.latents[*latent].0 == cat.latent {
                    let (_, counts, omega) = state.cat[f]
                        .as_ref()
                        .expect("a categorical factor's auxiliaries are in the state");
                    for i in 0..rows {
                        let y = if labels[i] == *column { 1.0 } else { 0.0 };
                        np.a[i] += omega[(i, *column)];
                        np.b[i] += (y - counts[(i, *column)]) / 2.0;
                    }
                }
                continue;
            }
            // A collapsed block (one read by a collapsed predictor) takes that
            // predictor's collapsed conditional; the other predictors of every factor
            // never read it (checked in `new`) unless from another factor, whose
            // augmented curvature given its auxiliaries is the right one.
            let mut vals = vec![0.0; fp.slots.len()];
            for cv in fp.collapsed.iter().chain(&fp.curvature) {
                let pi = cv.pred.0;
                let Some(coef) = self.prep.reads(pi, *latent, Some(*column)) else {
                    continue;
                };
                for i in 0..self.prep.factors[f].n {
                    self.fill(f, i, pv, state, &mut vals);
                    let (ai, bi) = (
                        cv.quad.eval(&vals, &mut stack),
                        cv.lin.eval(&vals, &mut stack),
                    );
                    let x = state.latents[*latent][column * rows + i];
                    np.add(i, ai, bi, coef, pv[pi][i] - coef * x);
                }
            }
        }
        (np.a, np.b)
    }

    /// Draw a block exactly from its Gaussian conditional.
    pub(super) fn sample_block(
        &self,
        bi: usize,
        b: &Block,
        collapsed_phase: bool,
        state: &mut State,
        pv: &[Vec<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let Some(g) = self.block_gaussian(bi, b, collapsed_phase, state, pv, rng)? else {
            if let Block::Dense { parts, .. } = b {
                for p in parts.iter() {
                    state.without_mean[p.0] = true;
                }
            }
            return Ok(());
        };
        let drawn = g.block.sample(&g.np, rng)?;
        if drawn.inducing.is_some() {
            state.sparse_v[bi] = drawn.inducing;
        }
        g.coords.set(&mut state.latents, &drawn.values);
        match &drawn.mean {
            Some(m) => {
                g.coords.set(&mut state.conditional_means, m);
                if let Some(w) = &mut state.ellipse_windows[bi] {
                    w.record(&g.np.a, m.as_slice());
                }
            }
            None => {
                for l in g.coords.latents() {
                    state.without_mean[l] = true;
                }
            }
        }
        if !collapsed_phase {
            if let Some(sk) = self.kernels.iter().find(|k| k.block == bi) {
                if !sk.interweave.is_empty() {
                    self.interweave_kernel(sk, state, rng)?;
                }
            }
        }
        Ok(())
    }

    /// A block's Gaussian conditional given the auxiliaries and the other latents: its prior
    /// (after its own hyperparameters' update) and the natural parameters summed over every
    /// factor's Gaussian terms; `None` for a dense block no factor reads.
    pub(super) fn block_gaussian<'s>(
        &'s self,
        bi: usize,
        b: &'s Block,
        collapsed_phase: bool,
        state: &mut State,
        pv: &[Vec<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Result<Option<BlockGaussian<'s>>, RuntimeError> {
        match b {
            Block::Gp { latent, column, .. } | Block::Sparse { latent, column, .. } => {
                let rows = self.rows_of(bi, b);
                let (a, bb) = self.gp_curvature(bi, b, collapsed_phase, state, pv);
                let np = NaturalParams { a, b: bb };
                if let Some(sk) = self.kernels.iter().find(|k| k.block == bi) {
                    self.slice_kernel(sk, state, &np.a, &np.b, rng)?;
                }
                let block: Box<dyn GaussianBlock + 's> = match b {
                    // The chain's own prior shared, the fixed one borrowed: no O(N²) copy.
                    Block::Gp { gp, .. } => match &state.gp_priors[bi] {
                        Some(own) => Box::new(own.clone()),
                        None => Box::new(gp),
                    },
                    Block::Sparse { sp, .. } => match &state.sparse_priors[bi] {
                        Some(own) => Box::new(own.clone()),
                        None => {
                            let (phi, kt) = self.sparse_feats[bi].as_ref().expect("features");
                            Box::new(SparseColumn { sp, phi, kt })
                        }
                    },
                    Block::Dense { .. } => unreachable!("matched above"),
                };
                let coords = Coords::Column {
                    latent: *latent,
                    column: *column,
                    rows,
                };
                Ok(Some(BlockGaussian { block, np, coords }))
            }
            Block::Dense {
                parts,
                prior_mean,
                prior_sd,
            } => {
                let dim = prior_mean.len();
                let theta = gather_dense(parts, dim, &state.latents);
                let (np, rows) = self.dense_terms(bi, &theta, state, pv);
                if rows.is_empty() && !self.generic[bi] {
                    return Ok(None);
                }
                let design = stack_rows(rows, dim);
                let mut block: DenseBlock = match &state.dense_priors[bi] {
                    Some((m, sd)) => dense_block(design, m, sd),
                    None => dense_block(design, prior_mean, prior_sd),
                };
                if let Some(ds) = self.dense_scales.iter().find(|d| d.block == bi) {
                    let log_w = |hv: &HyperValues| -> Result<f64, RuntimeError> {
                        let (m, sd) = self.dense_prior(parts, hv)?;
                        if ds.given_values {
                            return Ok(centred_log_prior(&theta, &m, &sd));
                        }
                        let mut trial = block.clone();
                        trial.prior_mean = m;
                        trial.prior_sd = sd;
                        GaussianBlock::log_marginal(&trial, &np)
                    };
                    self.slice_update(&ds.hypers, ds.joint, state, &log_w, rng)?;
                    let (m, sd) = self.dense_prior(parts, &self.hyper_values(state))?;
                    block.prior_mean = m.clone();
                    block.prior_sd = sd.clone();
                    state.dense_priors[bi] = Some((m, sd));
                }
                Ok(Some(BlockGaussian {
                    block: Box::new(block),
                    np,
                    coords: Coords::Dense(parts),
                }))
            }
        }
    }

    /// A dense block's Gaussian terms from every factor that reads it: the natural parameters
    /// (each row's curvature and shift, the block's own part of the predictor taken out) and
    /// the design rows.
    fn dense_terms(
        &self,
        bi: usize,
        theta: &DVector<f64>,
        state: &State,
        pv: &[Vec<f64>],
    ) -> (NaturalParams, Vec<DMatrix<f64>>) {
        let mut stack = Vec::with_capacity(64);
        let mut rows: Vec<DMatrix<f64>> = Vec::new();
        let mut np = NaturalParams::default();
        for (f, fp) in self.schedule.factors.iter().enumerate() {
            let mut vals = vec![0.0; fp.slots.len()];
            let list = fp.collapsed.iter().chain(&fp.curvature);
            for (cv, phi) in list.zip(&self.dense_designs[bi][f]) {
                let Some(phi) = phi else { continue };
                let pi = cv.pred.0;
                let own = phi * theta;
                for i in 0..self.prep.factors[f].n {
                    self.fill(f, i, pv, state, &mut vals);
                    let (ai, bi) = (
                        cv.quad.eval(&vals, &mut stack),
                        cv.lin.eval(&vals, &mut stack),
                    );
                    np.push_row(ai, bi, pv[pi][i] - own[i]);
                }
                rows.push(phi.clone());
            }
        }
        (np, rows)
    }
}

/// `log N(θ | m, diag(sd²))` up to a constant, the centred move's weight of a dense block's scale
/// hyperparameters given its values. A flat coordinate (`sd = ∞`, read by no hyperparameter)
/// adds nothing: counted, its `−log ∞` made every value of the hyperparameters impossible, and
/// the centred move of any block with a flat intercept never moved.
pub(super) fn centred_log_prior(theta: &DVector<f64>, m: &DVector<f64>, sd: &DVector<f64>) -> f64 {
    (0..theta.len())
        .filter(|&j| sd[j].is_finite())
        .map(|j| {
            let r = (theta[j] - m[j]) / sd[j];
            -0.5 * r * r - sd[j].ln()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_coordinate_adds_nothing_to_the_centred_weight() {
        let theta = DVector::from_vec(vec![3.0, 0.5, -1.0]);
        let m = DVector::zeros(3);
        let sd = |s: f64| DVector::from_vec(vec![f64::INFINITY, s, s]);
        let (a, b) = (
            centred_log_prior(&theta, &m, &sd(1.0)),
            centred_log_prior(&theta, &m, &sd(2.0)),
        );
        assert!(a.is_finite() && b.is_finite());
        // −½(0.25 + 1)/s² − 2 log s at s = 1 and 2.
        assert!(
            (a - (-0.625)).abs() < 1e-12 && (b - (-0.625 / 4.0 - 2.0 * 2f64.ln())).abs() < 1e-12
        );
    }
}
