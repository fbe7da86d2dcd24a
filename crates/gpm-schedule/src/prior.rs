//! Latent priors bound to hyperparameter ids: every kernel parameter, GP mean and normal
//! mean/scale compiled to a [`Tape`] whose slot `k` is the value of [`HyperId`] `k`, and every
//! ARD lengthscale named by its id. The runtime evaluates them against a vector of values indexed
//! by id and never looks a hyperparameter up by name.

use crate::ids::HyperId;
use crate::tape::Tape;
use gpm_augment::{Role, T};
use gpm_ir::{Hyper, Inducing, Kernel, KernelArg, LatentPrior, Sx};

/// A kernel argument: one scalar expression, or one value per input dimension (a `vector[D]`
/// hyper, an ARD lengthscale).
#[derive(Debug, Clone)]
pub enum BoundArg {
    /// One value.
    Scalar(Tape),
    /// Automatic relevance determination: the vector hyperparameter's values.
    Ard(HyperId),
}

/// A covariance function with its parameters bound (the same forms as [`gpm_ir::Kernel`]).
#[derive(Debug, Clone)]
pub enum BoundKernel {
    /// A library kernel with its arguments, in the order of its parameters.
    Base {
        /// The kernel.
        law: gpm_library::KernelRef,
        /// Its arguments.
        args: Vec<BoundArg>,
    },
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
        /// Its Power-EP power under Gibbs (1: FITC).
        alpha: f64,
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
        /// `∂mean/∂h` and `∂scale/∂h` for each hyperparameter `h` they read, taken by the CAS
        /// (NUTS moves a hierarchical model's scales with them), over the same slots; or why
        /// the CAS could not take them (then NUTS refuses to sample those hyperparameters,
        /// and nothing else needs them).
        gradient: Result<Vec<NormalPriorGradient>, String>,
    },
}

/// The derivatives of a `normal` prior's mean and scale in one hyperparameter.
#[derive(Debug, Clone)]
pub struct NormalPriorGradient {
    /// The hyperparameter.
    pub hyper: HyperId,
    /// `∂mean/∂h`.
    pub d_mean: Tape,
    /// `∂scale/∂h`.
    pub d_scale: Tape,
}

impl BoundKernel {
    /// The hyperparameters the kernel reads.
    pub fn hypers(&self, out: &mut Vec<HyperId>) {
        let tape = |t: &Tape, out: &mut Vec<HyperId>| out.extend(t.slots().map(HyperId));
        match self {
            BoundKernel::Base { args, .. } => {
                for a in args {
                    match a {
                        BoundArg::Scalar(t) => tape(t, out),
                        BoundArg::Ard(h) => out.push(*h),
                    }
                }
            }
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

    /// `∂mean/∂h`, `∂scale/∂h` of a normal prior for each hyperparameter `h` either reads,
    /// compiled like [`Binder::param_with_data`].
    fn normal_gradient(
        &self,
        (mean, scale): (&Sx, &Sx),
        data: &[String],
    ) -> Result<Vec<NormalPriorGradient>, String> {
        let n = self.hypers.len();
        let mut read: Vec<String> = Vec::new();
        for (role, name) in mean.symbols().into_iter().chain(scale.symbols()) {
            if role == gpm_ir::SymRole::Hyper && !read.contains(&name) {
                read.push(name);
            }
        }
        let role = |name: &str| {
            if self.id(name).is_some() {
                Role::Hyper
            } else {
                Role::Data
            }
        };
        let slot = |role: Role, name: &str| match role {
            Role::Hyper => self.id(name).map(|h| h.0),
            Role::Data => data.iter().position(|d| d == name).map(|k| n + k),
            _ => None,
        };
        read.iter()
            .map(|name| {
                let d = |p: &Sx| {
                    crate::gradient::derivative_tape(&T::from_sx(p), name, &role, &slot)
                        .map_err(|e| format!("{e} in the parameter `{p}`"))
                };
                Ok(NormalPriorGradient {
                    hyper: self
                        .id(name)
                        .ok_or_else(|| format!("unknown hyperparameter `{name}`"))?,
                    d_mean: d(mean)?,
                    d_scale: d(scale)?,
                })
            })
            .collect()
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

    fn arg(&self, a: &KernelArg) -> Result<BoundArg, String> {
        Ok(match a {
            KernelArg::Scalar { value } => BoundArg::Scalar(self.param(value)?),
            KernelArg::Ard { hyper } => BoundArg::Ard(
                self.id(hyper)
                    .ok_or_else(|| format!("unknown ARD lengthscale `{hyper}`"))?,
            ),
        })
    }

    /// A kernel with its parameters bound.
    pub fn kernel(&self, k: &Kernel) -> Result<BoundKernel, String> {
        let boxed = |k: &Kernel| self.kernel(k).map(Box::new);
        Ok(match k {
            Kernel::Base { law, args } => BoundKernel::Base {
                law: *law,
                args: args.iter().map(|a| self.arg(a)).collect::<Result<_, _>>()?,
            },
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
                alpha,
            } => BoundPrior::Gp {
                inputs: inputs.clone(),
                kernel: self.kernel(kernel)?,
                mean: self.param(mean)?,
                inducing: inducing.clone(),
                alpha: *alpha,
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
                    gradient: self.normal_gradient((mean, scale), &data),
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
                gradient: Ok(vec![]),
            },
        })
    }
}
