//! Latent priors bound to hyperparameter ids: every kernel parameter, GP mean and normal
//! mean/scale compiled to a [`Tape`] whose slot `k` is the value of [`HyperId`] `k`, and every
//! ARD lengthscale named by its id. The runtime evaluates them against a vector of values indexed
//! by id and never looks a hyperparameter up by name.

use crate::{HyperId, Tape};
use gpm_augment::{Role, T};
use gpm_ir::{Hyper, Inducing, Kernel, LatentPrior, Lengthscale, Sx};

/// A lengthscale: one scalar expression, or one per input dimension (a `vector[D]` hyper).
#[derive(Debug, Clone)]
pub enum BoundLengthscale {
    /// One lengthscale for every dimension.
    Scalar(Tape),
    /// Automatic relevance determination: the vector hyperparameter's values.
    Ard(HyperId),
}

/// A covariance function with its parameters bound (the same forms as [`gpm_ir::Kernel`]).
#[derive(Debug, Clone)]
pub enum BoundKernel {
    /// `exp(−r²/2)` in scaled distance.
    SqExp(BoundLengthscale),
    /// `exp(−r)`.
    Matern12(BoundLengthscale),
    /// `(1 + √3 r) exp(−√3 r)`.
    Matern32(BoundLengthscale),
    /// `(1 + √5 r + 5r²/3) exp(−√5 r)`.
    Matern52(BoundLengthscale),
    /// `x·x' + offset`.
    Linear {
        /// The offset.
        offset: Tape,
    },
    /// `exp(−2 sin²(π r / period) / lengthscale²)`.
    Periodic {
        /// The lengthscale.
        lengthscale: Tape,
        /// The period.
        period: Tape,
    },
    /// 1 everywhere.
    Constant,
    /// 1 on the diagonal of a training covariance.
    White,
    /// `k1 + k2`.
    Sum(Box<BoundKernel>, Box<BoundKernel>),
    /// `k1 · k2`.
    Product(Box<BoundKernel>, Box<BoundKernel>),
    /// `variance · k`.
    Scale {
        /// The variance.
        variance: Tape,
        /// The kernel it scales.
        kernel: Box<BoundKernel>,
    },
}

/// A latent's prior, bound.
#[derive(Debug, Clone)]
pub enum BoundPrior {
    /// A Gaussian process over the rows of a data matrix (the inputs are bound with the data).
    Gp {
        /// Name of the input datum.
        inputs: String,
        /// The covariance function.
        kernel: BoundKernel,
        /// The constant prior mean.
        mean: Tape,
        /// Inducing points, for a sparse GP.
        inducing: Option<Inducing>,
    },
    /// Independent normals.
    Normal {
        /// The mean.
        mean: Tape,
        /// The standard deviation.
        scale: Tape,
        /// The data the mean and scale read, one value per coordinate (a vector as long as the
        /// latent, or a scalar): slot `n_hypers + k` of the tapes is datum `k` at the
        /// coordinate (`w ~ normal(0, sdgp * sqrt(spd))`). Empty: constants and hypers only.
        data: Vec<String>,
        /// The first data slot (the number of hyperparameters).
        data_slot: usize,
    },
}

impl BoundKernel {
    /// The hyperparameters the kernel reads.
    pub fn hypers(&self, out: &mut Vec<HyperId>) {
        let tape = |t: &Tape, out: &mut Vec<HyperId>| out.extend(t.slots().map(HyperId));
        match self {
            BoundKernel::SqExp(l)
            | BoundKernel::Matern12(l)
            | BoundKernel::Matern32(l)
            | BoundKernel::Matern52(l) => match l {
                BoundLengthscale::Scalar(t) => tape(t, out),
                BoundLengthscale::Ard(h) => out.push(*h),
            },
            BoundKernel::Linear { offset } => tape(offset, out),
            BoundKernel::Periodic {
                lengthscale,
                period,
            } => {
                tape(lengthscale, out);
                tape(period, out);
            }
            BoundKernel::Constant | BoundKernel::White => {}
            BoundKernel::Sum(a, b) | BoundKernel::Product(a, b) => {
                a.hypers(out);
                b.hypers(out);
            }
            BoundKernel::Scale { variance, kernel } => {
                tape(variance, out);
                kernel.hypers(out);
            }
        }
    }
}

impl BoundPrior {
    /// The hyperparameters the prior reads (kernel parameters, mean, scale), each once.
    pub fn hypers(&self) -> Vec<HyperId> {
        let mut out = Vec::new();
        match self {
            BoundPrior::Gp { kernel, mean, .. } => {
                kernel.hypers(&mut out);
                out.extend(mean.slots().map(HyperId));
            }
            BoundPrior::Normal {
                mean,
                scale,
                data_slot,
                ..
            } => {
                let hypers = |s: usize| (s < *data_slot).then_some(HyperId(s));
                out.extend(mean.slots().chain(scale.slots()).filter_map(hypers));
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Binds expressions over hyperparameter names to tapes over hyperparameter ids.
pub(crate) struct Binder<'a> {
    /// The model's hyperparameters, in [`HyperId`] order.
    pub hypers: &'a [Hyper],
}

impl Binder<'_> {
    fn id(&self, name: &str) -> Option<HyperId> {
        self.hypers.iter().position(|h| h.name == name).map(HyperId)
    }

    /// A normal prior's mean or scale, which may also read data per coordinate: datum `k` of
    /// `data` is slot `hypers.len() + k`.
    pub fn param_with_data(&self, p: &Sx, data: &[String]) -> Result<Tape, String> {
        let n = self.hypers.len();
        Tape::compile(&T::from_sx(p), &|role, name| match role {
            Role::Hyper => self.id(name).map(|h| h.0),
            Role::Data => data.iter().position(|d| d == name).map(|k| n + k),
            _ => None,
        })
        .map_err(|e| format!("{e} in the parameter `{p}`"))
    }

    /// A parameter expression (constants and scalar hyperparameters) as a tape.
    pub fn param(&self, p: &Sx) -> Result<Tape, String> {
        Tape::compile(&T::from_sx(p), &|role, name| match role {
            Role::Hyper => self.id(name).map(|h| h.0),
            _ => None,
        })
        .map_err(|e| {
            format!("{e} in the parameter `{p}` (a prior reads constants and hyperparameters only)")
        })
    }

    fn lengthscale(&self, l: &Lengthscale) -> Result<BoundLengthscale, String> {
        Ok(match l {
            Lengthscale::Scalar { value } => BoundLengthscale::Scalar(self.param(value)?),
            Lengthscale::Ard { hyper } => BoundLengthscale::Ard(
                self.id(hyper)
                    .ok_or_else(|| format!("unknown ARD lengthscale `{hyper}`"))?,
            ),
        })
    }

    /// A kernel with its parameters bound.
    pub fn kernel(&self, k: &Kernel) -> Result<BoundKernel, String> {
        let boxed = |k: &Kernel| self.kernel(k).map(Box::new);
        Ok(match k {
            Kernel::SqExp { lengthscale } => BoundKernel::SqExp(self.lengthscale(lengthscale)?),
            Kernel::Matern12 { lengthscale } => {
                BoundKernel::Matern12(self.lengthscale(lengthscale)?)
            }
            Kernel::Matern32 { lengthscale } => {
                BoundKernel::Matern32(self.lengthscale(lengthscale)?)
            }
            Kernel::Matern52 { lengthscale } => {
                BoundKernel::Matern52(self.lengthscale(lengthscale)?)
            }
            Kernel::Linear { offset } => BoundKernel::Linear {
                offset: self.param(offset)?,
            },
            Kernel::Periodic {
                lengthscale,
                period,
            } => BoundKernel::Periodic {
                lengthscale: self.param(lengthscale)?,
                period: self.param(period)?,
            },
            Kernel::Constant => BoundKernel::Constant,
            Kernel::White => BoundKernel::White,
            Kernel::Sum { left, right } => BoundKernel::Sum(boxed(left)?, boxed(right)?),
            Kernel::Product { left, right } => BoundKernel::Product(boxed(left)?, boxed(right)?),
            Kernel::Scale { variance, kernel } => BoundKernel::Scale {
                variance: self.param(variance)?,
                kernel: boxed(kernel)?,
            },
        })
    }

    /// A latent's prior with its parameters bound.
    pub fn prior(&self, p: &LatentPrior) -> Result<BoundPrior, String> {
        Ok(match p {
            LatentPrior::Gp {
                inputs,
                kernel,
                mean,
                inducing,
            } => BoundPrior::Gp {
                inputs: inputs.clone(),
                kernel: self.kernel(kernel)?,
                mean: self.param(mean)?,
                inducing: inducing.clone(),
            },
            LatentPrior::Normal { mean, scale } => {
                let mut data: Vec<String> = Vec::new();
                for (role, name) in mean.symbols().into_iter().chain(scale.symbols()) {
                    if role == gpm_ir::SymRole::Data && !data.contains(&name) {
                        data.push(name);
                    }
                }
                BoundPrior::Normal {
                    mean: self.param_with_data(mean, &data)?,
                    scale: self.param_with_data(scale, &data)?,
                    data,
                    data_slot: self.hypers.len(),
                }
            }
            // Zero prior precision: an infinite scale, which the dense block's precision form
            // (`1/sd² = 0`) and its marginal (an improper constant dropped) take as it is.
            LatentPrior::Flat => BoundPrior::Normal {
                mean: self.param(&gpm_ir::Sx::Num(0.0))?,
                scale: self.param(&gpm_ir::Sx::Num(f64::INFINITY))?,
                data: vec![],
                data_slot: self.hypers.len(),
            },
        })
    }
}
