//! The inference methods by name — one enum for the command line's `--method`, Python's
//! `method=` and the error that names an unknown one — and a variational method's settings
//! built from the options a front end was given, the defaults being the runtime configs' own
//! ([`gpm_runtime::svi::SviConfig`], [`gpm_runtime::gpf::GpfConfig`]), so that the command
//! line and Python build them alike.

use crate::variational::Settings;
use clap::ValueEnum;

/// An inference method.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum Method {
    /// Blocked Gibbs sampling.
    Gibbs,
    /// Closed-form coordinate-ascent variational inference (full batch).
    Cavi,
    /// Stochastic CAVI: minibatch natural-gradient steps on sparse GPs.
    Svi,
    /// Gaussian particle flow: a Gaussian q from the log-likelihood's gradient, any
    /// differentiable model (thesis ch. 6).
    Gpf,
    /// NUTS (nuts-rs) on the original model, the latents whitened by their priors and sampled
    /// hyperparameters on unconstrained scales: the same outputs as Gibbs.
    Nuts,
}

impl Method {
    /// Its name, as `--method` and Python take it.
    pub fn name(self) -> &'static str {
        match self {
            Method::Gibbs => "gibbs",
            Method::Cavi => "cavi",
            Method::Svi => "svi",
            Method::Gpf => "gpf",
            Method::Nuts => "nuts",
        }
    }

    /// Whether it draws samples (Gibbs, NUTS) rather than fitting a variational posterior.
    pub fn is_sampler(self) -> bool {
        matches!(self, Method::Gibbs | Method::Nuts)
    }

    /// A variational method's settings from the options given; `None` for the samplers.
    pub fn variational(self, o: &VariationalOptions) -> Option<Settings> {
        Some(match self {
            Method::Gibbs | Method::Nuts => return None,
            Method::Cavi => Settings::Cavi {
                max_iter: o.iterations,
            },
            Method::Svi => Settings::Svi(o.svi.resolve(o.iterations, o.seed, o.svi_reports)),
            Method::Gpf => Settings::Gpf(gpm_runtime::gpf::GpfConfig {
                particles: o.particles,
                max_iter: o.iterations,
                seed: o.seed,
                precondition: o.precondition,
                map: o.particle_map.map(ParticleMap::runtime),
                ..Default::default()
            }),
        })
    }
}

impl std::str::FromStr for Method {
    type Err = String;
    /// By clap's own table of names (`--method`'s), with an error that lists them.
    fn from_str(name: &str) -> Result<Method, String> {
        <Method as ValueEnum>::from_str(name, false).map_err(|_| {
            let names: Vec<&str> = Method::value_variants().iter().map(|m| m.name()).collect();
            format!("unknown method `{name}` ({})", names.join(", "))
        })
    }
}

/// GPF: the images of their first draws the particles may take.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ParticleMap {
    /// Symmetric: one configuration per Gaussian q, the free energy minimised by L-BFGS
    Symmetric,
    /// Any affine map: the thesis' Algorithm 2, Euler steps of the flow
    Affine,
}

impl ParticleMap {
    /// The runtime's value.
    pub fn runtime(self) -> gpm_runtime::gpf::ParticleMap {
        match self {
            ParticleMap::Symmetric => gpm_runtime::gpf::ParticleMap::Symmetric,
            ParticleMap::Affine => gpm_runtime::gpf::ParticleMap::Affine,
        }
    }
}

impl std::str::FromStr for ParticleMap {
    type Err = String;
    /// By clap's own table of names (`--particle-map`'s).
    fn from_str(name: &str) -> Result<ParticleMap, String> {
        <ParticleMap as ValueEnum>::from_str(name, false)
            .map_err(|_| format!("particle_map must be \"symmetric\" or \"affine\", not {name:?}"))
    }
}

/// A variational method's options as a front end was given them (`None`: not given, the
/// runtime config's default).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VariationalOptions {
    /// CAVI, GPF: at most this many iterations; SVI: this many minibatch steps.
    pub iterations: usize,
    /// The seed.
    pub seed: u64,
    /// SVI's options.
    pub svi: gpm_runtime::svi::SviOptions,
    /// SVI: how many times its trace is recorded over the run.
    pub svi_reports: usize,
    /// GPF: number of particles.
    pub particles: Option<usize>,
    /// GPF: precondition the flow by the particles' covariance.
    pub precondition: bool,
    /// GPF: the particles' map.
    pub particle_map: Option<ParticleMap>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_is_found_by_its_name_and_an_unknown_one_is_named() {
        for &m in Method::value_variants() {
            assert_eq!(m.name().parse::<Method>(), Ok(m));
            assert_eq!(
                Some(m.name().to_string()),
                m.to_possible_value().map(|v| v.get_name().to_string())
            );
        }
        let err = "hmc".parse::<Method>().unwrap_err();
        assert_eq!(err, "unknown method `hmc` (gibbs, cavi, svi, gpf, nuts)");
        assert!("Affine".parse::<ParticleMap>().is_err());
        assert_eq!("affine".parse::<ParticleMap>(), Ok(ParticleMap::Affine));
    }
}
