//! Elliptical slice steps on a full GP block's marginal posterior, the auxiliaries integrated
//! out ([`gpm_schedule::GibbsStep::MarginalElliptical`]; the steps are
//! `gibbs/marginal_elliptical.rs`'s).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::BlockId;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct MarginalElliptical {
    pub(super) block: BlockId,
    /// The factors whose log-densities are the ellipse's likelihood.
    pub(super) factors: Vec<usize>,
    pub(super) steps: usize,
    /// Whether the move redraws the auxiliaries itself.
    pub(super) redraw: bool,
    /// The Gaussian whose ellipses the steps follow.
    pub(super) reference: gpm_schedule::EllipseReference,
}

impl Move for MarginalElliptical {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let how = super::super::marginal_elliptical::Steps {
            factors: &self.factors,
            steps: self.steps,
            redraw: self.redraw,
        };
        s.marginal_elliptical(self.block, how, state, rng)?;
        *pv = s.predictors(state);
        Ok(())
    }

    fn before_warmup_sweep(&self, s: &Sampler<'_>, state: &mut State, sweep: usize) {
        if self.adapted().is_some() {
            s.open_ellipse_windows(state, self.block, sweep);
        }
    }

    fn adapt(&self, s: &Sampler<'_>, state: &mut State, sweep: usize, warmup: usize) {
        if let Some(how) = self.adapted() {
            s.adapt_ellipses(state, self.block, how, (sweep, warmup));
        }
    }

    fn describe(&self, s: &Schedule) -> String {
        format!(
            "{} elliptical slice sampling steps on {} along {}, with its GP prior and the log-density of factor{} {} as written (auxiliaries integrated out), then {}",
            self.steps,
            s.block_name(self.block),
            self.reference.describe(),
            if self.factors.len() > 1 { "s" } else { "" },
            self.factors
                .iter()
                .map(|f| format!("#{}", f + 1))
                .collect::<Vec<_>>()
                .join(", "),
            if self.redraw {
                "redraw every auxiliary given it"
            } else {
                "leave the auxiliaries to the next sweep's first step, which draws them afresh"
            }
        )
    }
}

impl MarginalElliptical {
    /// Where its reference is fitted in warm-up: the fit's inflation and first window.
    fn adapted(&self) -> Option<(f64, usize)> {
        match self.reference {
            gpm_schedule::EllipseReference::Adapted {
                inflation,
                first_window,
            } => Some((inflation, first_window)),
            _ => None,
        }
    }
}
