//! Gaussian processes as Stan programs write them: a covariance matrix built by `gp_*_cov`
//! (plus a diagonal: jitter or noise), used as `f ~ multi_normal(mu, K)`,
//! `multi_normal_cholesky(mu, cholesky_decompose(K))`, non-centred as `f = L * eta` with
//! `eta ~ std_normal()`, or marginalised as `y ~ multi_normal(mu, K + sigma^2 I)`. Each is the
//! `.gpm` latent `f ~ gp(x, kernel)`; the marginal one a latent GP plus a normal likelihood (the
//! same posterior of the hyperparameters, with `f` integrated out wherever Gibbs moves them).

use crate::ast::{BinOp, Expr, ExprKind, VarDecl};
use crate::convert::Ctx;
use crate::error::StanError;
use crate::gexpr::{bin, num};
use crate::statements::{Draw, Sorted};
use crate::symbols::{Definition, Origin, Symbols};
use gpm_syntax as g;

/// Below this a constant diagonal is the jitter Stan programs add for a stable factorisation
/// (gpmc adds its own); above it, noise.
const JITTER: f64 = 1e-4;

/// Stan's covariance functions: name, `.gpm` kernel, number of kernel arguments after the
/// magnitude.
const KERNELS: &[(&str, &str, usize)] = &[
    ("gp_exp_quad_cov", "sqexp", 1),
    ("cov_exp_quad", "sqexp", 1),
    ("gp_matern32_cov", "matern32", 1),
    ("gp_matern52_cov", "matern52", 1),
    ("gp_exponential_cov", "matern12", 1),
    ("gp_periodic_cov", "periodic", 2),
];

/// A covariance matrix recognised as a GP's.
pub struct GpCov {
    /// The inputs (a data vector, array or matrix).
    pub inputs: String,
    /// The kernel, in `.gpm`.
    pub kernel: g::Expr,
    /// A diagonal that is not jitter: the noise variance (Stan expression).
    pub noise: Option<Expr>,
}

/// Follow locals defined whole to their definitions.
pub fn resolve<'a>(e: &'a Expr, syms: &'a Symbols) -> &'a Expr {
    let mut e = e;
    for _ in 0..64 {
        match &e.kind {
            ExprKind::Var(v) => match syms.get(v) {
                Some(s) if s.origin == Origin::Local => match &s.def {
                    Some(Definition::Whole(d)) => e = d,
                    _ => return e,
                },
                _ => return e,
            },
            _ => return e,
        }
    }
    e
}

fn call_of<'a>(e: &'a Expr, name: &str) -> Option<&'a [Expr]> {
    match &e.kind {
        ExprKind::Call { func, args, .. } if func.name == name => Some(args),
        _ => None,
    }
}

/// `K` of `cholesky_decompose(K)`.
pub fn cholesky_of<'a>(e: &'a Expr, syms: &'a Symbols) -> Option<&'a Expr> {
    call_of(resolve(e, syms), "cholesky_decompose").and_then(|a| a.first())
}

/// Whether an expression names a GP covariance anywhere (for a refusal that says so).
pub fn mentions_gp(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if let ExprKind::Call { func, .. } = &x.kind {
            found |= KERNELS.iter().any(|(n, _, _)| *n == func.name);
        }
    });
    found
}

/// The GP of a covariance expression, if it is one.
pub fn covariance(e: &Expr, ctx: &Ctx) -> Result<Option<GpCov>, StanError> {
    let mut terms = Vec::new();
    split(e, ctx.syms, &mut terms);
    let mut kernel: Option<g::Expr> = None;
    let mut inputs: Option<String> = None;
    let mut noise: Option<Expr> = None;
    for t in terms {
        if let ExprKind::Call { func, args, .. } = &t.kind {
            if let Some((_, name, extra)) = KERNELS.iter().find(|(n, _, _)| *n == func.name) {
                let [x, magnitude, rest @ ..] = args.as_slice() else {
                    return Ok(None);
                };
                if rest.len() != *extra {
                    return Ok(None);
                }
                let Some(x) = x
                    .root_var()
                    .filter(|v| ctx.syms.is_data(v) && matches!(x.kind, ExprKind::Var(_)))
                else {
                    return Err(StanError::unsupported(
                        "a GP whose inputs are not a data variable is not translated",
                        x.span,
                        "give the GP's inputs as a data vector, array or matrix",
                    ));
                };
                if inputs.as_deref().is_some_and(|i| i != x) {
                    return Err(StanError::unsupported(
                        "a sum of GP covariances over different inputs is not translated yet",
                        t.span,
                        "use one input variable for every covariance of the sum",
                    ));
                }
                inputs = Some(x.to_string());
                let term = kernel_term(ctx, name, magnitude, rest, t.span)?;
                kernel = Some(match kernel {
                    Some(k) => bin(g::BinOp::Add, k, term, t.span),
                    None => term,
                });
                continue;
            }
        }
        match diagonal(t, ctx.syms) {
            Some(d) if is_jitter(d, ctx.syms) => {}
            Some(d) => {
                noise = Some(match noise {
                    Some(n) => Expr {
                        kind: ExprKind::Binary(BinOp::Add, Box::new(n), Box::new(d.clone())),
                        span: d.span,
                    },
                    None => d.clone(),
                })
            }
            None => return Ok(None),
        }
    }
    Ok(match (kernel, inputs) {
        (Some(kernel), Some(inputs)) => Some(GpCov {
            inputs,
            kernel,
            noise,
        }),
        _ => None,
    })
}

/// The terms of a covariance sum, through locals and `add_diag`.
fn split<'a>(e: &'a Expr, syms: &'a Symbols, out: &mut Vec<&'a Expr>) {
    let e = resolve(e, syms);
    match &e.kind {
        ExprKind::Binary(BinOp::Add, a, b) => {
            split(a, syms, out);
            split(b, syms, out);
        }
        ExprKind::Call { func, args, .. } if func.name == "add_diag" && args.len() == 2 => {
            split(&args[0], syms, out);
            out.push(e);
        }
        _ => out.push(e),
    }
}

/// The value on a diagonal term: `diag_matrix(rep_vector(d, N))`, `add_diag(K, d)`,
/// `d * identity_matrix(N)`.
fn diagonal<'a>(e: &'a Expr, syms: &'a Symbols) -> Option<&'a Expr> {
    if let Some([_, d]) = call_of(e, "add_diag") {
        return Some(d);
    }
    if let Some([v]) = call_of(e, "diag_matrix") {
        if let Some([d, _]) = call_of(resolve(v, syms), "rep_vector") {
            return Some(d);
        }
    }
    if let ExprKind::Binary(BinOp::Mul, a, b) = &e.kind {
        if call_of(resolve(b, syms), "identity_matrix").is_some() {
            return Some(a);
        }
        if call_of(resolve(a, syms), "identity_matrix").is_some() {
            return Some(b);
        }
    }
    None
}

fn is_jitter(d: &Expr, syms: &Symbols) -> bool {
    match &resolve(d, syms).kind {
        ExprKind::Num { value, .. } => *value <= JITTER,
        _ => false,
    }
}

/// `square(magnitude) * kernel(args)`.
fn kernel_term(
    ctx: &Ctx,
    name: &str,
    magnitude: &Expr,
    rest: &[Expr],
    span: g::Span,
) -> Result<g::Expr, StanError> {
    let args = rest
        .iter()
        .map(|a| ctx.conv(a).map(|value| g::Arg { name: None, value }))
        .collect::<Result<Vec<_>, _>>()?;
    let k = g::Expr {
        kind: g::ExprKind::Call(g::Call {
            func: g::Ident {
                name: name.to_string(),
                span,
            },
            args,
            span,
        }),
        span,
    };
    let m = ctx.conv(magnitude)?;
    let sq = bin(g::BinOp::Pow, m, num(2.0, span), span);
    Ok(bin(g::BinOp::Mul, sq, k, span))
}

/// The covariance of a `multi_normal(mu, K)` or `multi_normal_cholesky(mu, L)` draw.
pub fn covariance_of_draw<'a>(dist: &str, args: &'a [Expr], syms: &'a Symbols) -> Option<&'a Expr> {
    match (dist, args) {
        ("multi_normal", [_, k]) => Some(k),
        ("multi_normal_cholesky", [_, l]) => cholesky_of(l, syms),
        _ => None,
    }
}

/// The `.gpm` prior `gp(x, kernel[, mean = m])` of a latent with a multivariate normal prior.
pub fn prior(ctx: &Ctx, dist: &g::Ident, args: &[Expr]) -> Result<g::Call, StanError> {
    let refuse = || {
        StanError::unsupported(
            format!("this `{}` prior is not a GP covariance gpmc recognises", dist.name),
            dist.span,
            "write the covariance with gp_exp_quad_cov, gp_matern32_cov, gp_matern52_cov, gp_exponential_cov or gp_periodic_cov (plus a diagonal), directly or through cholesky_decompose",
        )
    };
    let k = covariance_of_draw(&dist.name, args, ctx.syms).ok_or_else(refuse)?;
    let cov = covariance(k, ctx)?.ok_or_else(refuse)?;
    let mut kernel = cov.kernel;
    if let Some(noise) = &cov.noise {
        let white = g::Expr {
            kind: g::ExprKind::Call(g::Call {
                func: g::Ident {
                    name: "white".into(),
                    span: noise.span,
                },
                args: vec![],
                span: noise.span,
            }),
            span: noise.span,
        };
        kernel = bin(
            g::BinOp::Add,
            kernel,
            bin(g::BinOp::Mul, ctx.conv(noise)?, white, noise.span),
            noise.span,
        );
    }
    let mut gargs = vec![
        g::Arg {
            name: None,
            value: g::Expr {
                kind: g::ExprKind::Var(cov.inputs),
                span: dist.span,
            },
        },
        g::Arg {
            name: None,
            value: kernel,
        },
    ];
    if let Some(m) = constant_mean(&args[0], ctx)? {
        gargs.push(g::Arg {
            name: Some(g::Ident {
                name: "mean".into(),
                span: dist.span,
            }),
            value: m,
        });
    }
    Ok(g::Call {
        func: g::Ident {
            name: "gp".into(),
            span: dist.span,
        },
        args: gargs,
        span: dist.span,
    })
}

/// The mean of a GP prior: `rep_vector(c, N)` or a number; `None` for zero.
fn constant_mean(mu: &Expr, ctx: &Ctx) -> Result<Option<g::Expr>, StanError> {
    let mu = resolve(mu, ctx.syms);
    let c = match call_of(mu, "rep_vector") {
        Some([c, _]) => c,
        _ => mu,
    };
    if matches!(c.kind, ExprKind::Num { value, .. } if value == 0.0) {
        return Ok(None);
    }
    if !ctx.syms.params_read(c).is_empty() || crate::symbols::is_vector(c, ctx.syms) {
        return Err(StanError::unsupported(
            "a GP prior's mean other than a constant is not translated yet",
            mu.span,
            "write the mean function into the likelihood (`y ~ normal(m + f, sigma)`) and give the GP a zero mean",
        ));
    }
    ctx.conv(c).map(Some)
}

/// Non-centred GPs: a local `f = L * eta` with `L` the Cholesky factor of a GP covariance and
/// `eta` a parameter with a standard normal prior is the latent `f ~ gp(...)`: `f` takes
/// `eta`'s place among the parameters (and `eta` is not sampled: it is `L⁻¹ f`).
pub fn noncentred(
    params: &[VarDecl],
    sorted: &mut Sorted,
    syms: &mut Symbols,
) -> Vec<(VarDecl, Option<String>)> {
    let mut out: Vec<(VarDecl, Option<String>)> =
        params.iter().map(|d| (d.clone(), None)).collect();
    let mut locals: Vec<String> = syms.locals();
    locals.sort();
    for f in locals {
        let Some(Definition::Whole(def)) = syms.get(&f).and_then(|s| s.def.clone()) else {
            continue;
        };
        let resolved = resolve(&def, syms).clone();
        let ExprKind::Binary(BinOp::Mul, l, eta) = &resolved.kind else {
            continue;
        };
        let ExprKind::Var(eta) = &eta.kind else {
            continue;
        };
        let Some(pos) = out.iter().position(|(d, _)| d.name.name == *eta) else {
            continue;
        };
        let std_prior = sorted
            .priors
            .iter()
            .any(|(p, d)| p == eta && is_standard_normal(d));
        let is_gp = cholesky_of(l, syms).is_some_and(|k| {
            let mut terms = Vec::new();
            split(k, syms, &mut terms);
            terms.iter().any(|t| mentions_gp(t))
        });
        // `eta` stops being a parameter: nothing but `f`'s definition may read it.
        if !std_prior || !is_gp || read_elsewhere(eta, &f, sorted, syms) {
            continue;
        }
        let Some(ty) = syms.get(&f).map(|s| s.ty.clone()) else {
            continue;
        };
        let decl = VarDecl {
            ty,
            name: g::Ident {
                name: f.clone(),
                span: out[pos].0.name.span,
            },
            value: None,
            span: out[pos].0.span,
        };
        syms.declare(&f, Origin::Parameter, decl.ty.clone());
        sorted.priors.retain(|(p, _)| p != eta);
        let zero = Expr {
            kind: ExprKind::Num {
                value: 0.0,
                is_int: true,
            },
            span: l.span,
        };
        sorted.priors.push((
            f.clone(),
            Draw {
                lhs: Expr {
                    kind: ExprKind::Var(f.clone()),
                    span: l.span,
                },
                dist: g::Ident {
                    name: "multi_normal_cholesky".into(),
                    span: l.span,
                },
                args: vec![zero, (**l).clone()],
                lp: None,
                span: l.span,
            },
        ));
        out[pos] = (decl, Some(eta.clone()));
    }
    out
}

/// Whether anything but `f`'s definition (and `eta`'s own prior) reads `eta`: a likelihood term,
/// another parameter's prior, or another local.
fn read_elsewhere(eta: &str, f: &str, sorted: &Sorted, syms: &Symbols) -> bool {
    let reads = |e: &Expr| e.names().contains(&eta);
    let terms = sorted.terms.iter().any(|t| match t {
        crate::statements::Term::Draw(d) => reads(&d.lhs) || d.args.iter().any(reads),
        crate::statements::Term::Formula { expr, .. } => reads(expr),
    });
    let priors = sorted
        .priors
        .iter()
        .any(|(p, d)| p != eta && d.args.iter().any(reads));
    let locals = syms.locals().iter().filter(|l| *l != f).any(|l| {
        match syms.get(l).and_then(|s| s.def.as_ref()) {
            Some(Definition::Whole(e)) | Some(Definition::Elementwise { value: e, .. }) => reads(e),
            _ => false,
        }
    });
    terms || priors || locals
}

fn is_standard_normal(d: &Draw) -> bool {
    let lit = |e: &Expr, v: f64| matches!(e.kind, ExprKind::Num { value, .. } if value == v);
    match (d.dist.name.as_str(), d.args.as_slice()) {
        ("std_normal", []) => true,
        ("normal", [m, s]) => lit(m, 0.0) && lit(s, 1.0),
        _ => false,
    }
}

/// `y ~ multi_normal(mu, K + s I)` with `K` a GP covariance: the latent GP `f_y ~ gp(x, k)` and
/// the likelihood `y[i] ~ normal(mu[i] + f_y[i], sqrt(s))`, read at observation `at`; and why
/// the latent was added.
pub fn marginal(
    ctx: &Ctx,
    d: &Draw,
    y: g::Expr,
) -> Result<(g::Stmt, g::LatentDecl, String), StanError> {
    let refuse = |why: &str| {
        StanError::unsupported(
            format!("`{}` of the data {why}", d.dist.name),
            d.span,
            "gpmc reads `y ~ multi_normal(mu, K)` (or multi_normal_cholesky with cholesky_decompose(K)) where K is a GP covariance gp_*_cov(x, ...) plus a noise diagonal: the GP regression y = mu + f + noise",
        )
    };
    let scalar = ctx.at(None);
    let k = covariance_of_draw(&d.dist.name, &d.args, ctx.syms)
        .ok_or_else(|| refuse("is not over a covariance gpmc recognises"))?;
    let cov = covariance(k, &scalar)?.ok_or_else(|| refuse("is not over a GP covariance"))?;
    let Some(noise) = &cov.noise else {
        return Err(refuse(
            "has no noise on the diagonal (a noiseless GP regression)",
        ));
    };
    let y_name = d.lhs.root_var().unwrap_or("y");
    let name = format!("f_{y_name}");
    let name = if ctx.syms.get(&name).is_some() {
        format!("{name}_gp")
    } else {
        name
    };
    let span = d.span;
    let at = ctx.at.clone().ok_or_else(|| refuse("inside a loop"))?;
    let f_i = g::Expr {
        kind: g::ExprKind::Index(
            Box::new(g::Expr {
                kind: g::ExprKind::Var(name.clone()),
                span,
            }),
            vec![at.index.clone()],
        ),
        span,
    };
    let mu = resolve(&d.args[0], ctx.syms);
    let zero_mean = match call_of(mu, "rep_vector") {
        Some([c, _]) => matches!(c.kind, ExprKind::Num { value, .. } if value == 0.0),
        _ => matches!(mu.kind, ExprKind::Num { value, .. } if value == 0.0),
    };
    let location = if zero_mean {
        f_i
    } else {
        bin(g::BinOp::Add, ctx.conv(&d.args[0])?, f_i, span)
    };
    let sd = g::Expr {
        kind: g::ExprKind::Call(g::Call {
            func: g::Ident {
                name: "sqrt".into(),
                span,
            },
            args: vec![g::Arg {
                name: None,
                value: scalar.conv(noise)?,
            }],
            span,
        }),
        span,
    };
    let stmt = g::Stmt::Sample {
        lhs: y,
        dist: g::Call {
            func: g::Ident {
                name: "normal".into(),
                span,
            },
            args: vec![
                g::Arg {
                    name: None,
                    value: location,
                },
                g::Arg {
                    name: None,
                    value: sd,
                },
            ],
            span,
        },
        modifier: None,
        span,
    };
    let len = g::Expr {
        kind: g::ExprKind::Var(at.len.clone()),
        span,
    };
    let latent = g::LatentDecl {
        name: g::Ident {
            name: name.clone(),
            span,
        },
        ty: g::Type {
            kind: g::TypeKind::Vector(len),
            span,
        },
        prior: g::Call {
            func: g::Ident {
                name: "gp".into(),
                span,
            },
            args: vec![
                g::Arg {
                    name: None,
                    value: g::Expr {
                        kind: g::ExprKind::Var(cov.inputs),
                        span,
                    },
                },
                g::Arg {
                    name: None,
                    value: cov.kernel,
                },
            ],
            span,
        },
        span,
    };
    let why = format!(
            "added: `{y_name} ~ {}` over a GP covariance plus noise is the GP regression `{y_name} = mean + {name} + noise`; `{name}` is its latent GP (integrated out where the kernel's hyperparameters move)",
            d.dist.name
        );
    Ok((stmt, latent, why))
}
