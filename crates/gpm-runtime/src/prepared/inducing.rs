//! How a sparse GP's inducing inputs are chosen when the model is bound to data: given (a shard
//! binds with the points chosen for all of them), k-means++ on the inputs (`inducing = M`), the
//! rows of a data matrix (`inducing = Z`), or the online rule in one pass over the rows
//! (`inducing = adaptive(…)`, thesis Appendix A; SVI's binding starts it from one row, since
//! SVI chooses again as its minibatches arrive).

use super::INDUCING_SEED;
use crate::data::Data;
use crate::kernels::HyperValues;
use crate::sparse::{kmeans_pp, SparseGp};
use crate::RuntimeError;
use gpm_ir::Inducing;
use gpm_schedule::BoundKernel;
use nalgebra::DMatrix;

/// What a sparse GP is bound with.
pub(crate) struct SparseBinding<'a> {
    /// The latent's name, for messages.
    pub latent: &'a str,
    /// The inputs' name.
    pub inputs: &'a str,
    /// The training inputs.
    pub x: &'a DMatrix<f64>,
    pub data: &'a Data,
    pub kernel: &'a BoundKernel,
    pub hypers: &'a HyperValues,
    /// The constant prior mean.
    pub mean: f64,
    /// The Power-EP power of sparse Gibbs.
    pub alpha: f64,
    /// Bound for SVI ([`super::Prepared::for_streaming`]).
    pub streaming: bool,
}

/// The sparse prior of one latent, its inducing inputs `given` (`Some(None)`: given but
/// missing) or chosen as `ind` says.
pub(crate) fn bind_sparse(
    b: &SparseBinding,
    ind: &Inducing,
    given: Option<Option<&DMatrix<f64>>>,
) -> Result<SparseGp, RuntimeError> {
    let zi = match ind {
            _ if given.is_some() => match given.flatten() {
                Some(z) if z.ncols() == b.x.ncols() => z.clone(),
                _ => {
                    return Err(RuntimeError::Inconsistent(format!(
                        "no given inducing inputs with {} columns for `{}`",
                        b.x.ncols(),
                        b.latent
                    )))
                }
            },
            Inducing::Count(m) if *m > b.x.nrows() => {
                return Err(RuntimeError::BadData(format!(
                    "`{}` has inducing = {m} but the data have {} points: give fewer inducing points than points, or drop `inducing` (a full GP is exact and then no dearer)",
                    b.latent,
                    b.x.nrows()
                )))
            }
            Inducing::Count(m) => kmeans_pp(b.x, *m, INDUCING_SEED)?,
            // One pass of the online rule over the rows in order (thesis
            // Appendix A); SVI starts again from its first minibatch.
            Inducing::Adaptive { rho, max } => {
                let online = crate::sparse::Online {
                    rho: *rho,
                    max: *max,
                };
                let mut sp =
                    SparseGp::first_online(b.kernel, b.hypers, b.x, b.mean, online)?;
                if !b.streaming {
                    sp.offer(b.x, 1..b.x.nrows())?;
                }
                sp.z
            }
            Inducing::Points(name) => {
                let z = b.data.inputs(name).ok_or_else(|| {
                    RuntimeError::MissingData(format!(
                        "no inducing inputs `{name}` in the data"
                    ))
                })?;
                if z.ncols() != b.x.ncols() {
                    return Err(RuntimeError::BadData(format!(
                        "the inducing inputs `{name}` have {} columns, the inputs `{}` {}",
                        z.ncols(),
                        b.inputs,
                        b.x.ncols()
                    )));
                }
                z.as_ref().clone()
            }
        };
    let mut sp = SparseGp::new(b.kernel, b.hypers, zi, b.mean)?;
    sp.alpha = b.alpha;
    if let Inducing::Adaptive { rho, max } = ind {
        sp.online = Some(crate::sparse::Online {
            rho: *rho,
            max: *max,
        });
    }
    Ok(sp)
}
