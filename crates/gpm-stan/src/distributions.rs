//! Stan's distributions in `.gpm`: one table for likelihoods (a library likelihood, or its
//! log-density as a formula the compiler then augments from the algebra), and the priors of
//! latents and hyperparameters.

use crate::ast::{BinOp, Expr, ExprKind};
use crate::convert::Ctx;
use crate::error::StanError;
use crate::gexpr::formula;
use gpm_syntax as g;

/// How a Stan likelihood is written in `.gpm`.
enum Spelling {
    /// This library likelihood, with the same arguments.
    Library(&'static str),
    /// The log-density of one observation `Y` with arguments `A`, `B`, `C` (constants dropped).
    Formula(&'static str),
}

/// Stan's name, arity, spelling, and which arguments are locations (where a Gaussian latent
/// enters through its linear predictor; the others are scales and shapes).
const LIKELIHOODS: &[(&str, usize, Spelling, &[usize])] = &[
    ("normal", 2, Spelling::Library("normal"), &[0]),
    ("std_normal", 0, Spelling::Formula("-square(Y) / 2"), &[]),
    ("student_t", 3, Spelling::Library("student_t"), &[1]),
    ("double_exponential", 2, Spelling::Library("laplace"), &[0]),
    ("logistic", 2, Spelling::Library("logistic"), &[0]),
    (
        "bernoulli_logit",
        1,
        Spelling::Library("bernoulli_logit"),
        &[0],
    ),
    (
        "binomial_logit",
        2,
        Spelling::Library("binomial_logit"),
        &[1],
    ),
    ("poisson", 1, Spelling::Library("poisson"), &[0]),
    ("poisson_log", 1, Spelling::Library("poisson_log"), &[0]),
    (
        "neg_binomial_2_log",
        2,
        Spelling::Library("neg_binomial_2_log"),
        &[0],
    ),
    (
        "bernoulli",
        1,
        Spelling::Formula("Y * log(A) + (1 - Y) * log1p(-(A))"),
        &[0],
    ),
    (
        "binomial",
        2,
        Spelling::Formula("Y * log(B) + (A - Y) * log1p(-(B))"),
        &[1],
    ),
    (
        "neg_binomial_2",
        2,
        Spelling::Formula(
            "lgamma(Y + B) - lgamma(B) + Y * log(A) + B * log(B) - (Y + B) * log(A + B)",
        ),
        &[0],
    ),
    ("lognormal", 2, Spelling::Library("lognormal"), &[0]),
    (
        "exponential",
        1,
        Spelling::Formula("log(A) - (A) * Y"),
        &[0],
    ),
    (
        "gamma",
        2,
        Spelling::Formula("(A) * log(B) - lgamma(A) + ((A) - 1) * log(Y) - (B) * Y"),
        &[1],
    ),
    (
        "inv_gamma",
        2,
        Spelling::Formula("(A) * log(B) - lgamma(A) - ((A) + 1) * log(Y) - (B) / Y"),
        &[1],
    ),
    (
        "weibull",
        2,
        Spelling::Formula("log(A) - log(B) + ((A) - 1) * log(Y / (B)) - (Y / (B)) ^ (A)"),
        &[1],
    ),
    (
        "skew_normal",
        3,
        Spelling::Formula(
            "-log(B) - square((Y - (A)) / (B)) / 2 + log(normal_cdf((C) * (Y - (A)) / (B)))",
        ),
        &[0],
    ),
];

/// The arguments of `dist` where a latent enters through a linear predictor (all of them for a
/// distribution gpmc does not know: the lowering decides).
pub fn locations(dist: &str, args: usize) -> Vec<usize> {
    match canonical(dist) {
        Some(("bernoulli_logit_glm" | "poisson_log_glm", _)) => vec![0, 1, 2],
        Some(("normal_id_glm", _)) => vec![0, 1, 2],
        _ if dist == "cauchy" => vec![0],
        _ => LIKELIHOODS
            .iter()
            .find(|(n, a, _, _)| *n == dist && *a == args)
            .map(|(_, _, _, l)| l.to_vec())
            .unwrap_or_else(|| (0..args).collect()),
    }
}

fn canonical(dist: &str) -> Option<(&str, usize)> {
    match dist {
        "bernoulli_logit_glm" | "poisson_log_glm" => Some((dist, 3)),
        "normal_id_glm" => Some((dist, 4)),
        _ => None,
    }
}

/// The `.gpm` statement of one observation `y` of `dist(args)`, read in `ctx`.
pub fn likelihood(
    ctx: &Ctx,
    dist: &g::Ident,
    args: &[Expr],
    y: g::Expr,
    span: g::Span,
) -> Result<g::Stmt, StanError> {
    let (name, args) = rewrite(&dist.name, args, span);
    let Some((_, _, spelling, _)) = LIKELIHOODS
        .iter()
        .find(|(n, a, _, _)| *n == name && *a == args.len())
    else {
        return Err(unknown_likelihood(dist, args.len()));
    };
    let converted = args
        .iter()
        .map(|a| ctx.conv(a))
        .collect::<Result<Vec<_>, _>>()?;
    match spelling {
        Spelling::Library(lib) => Ok(g::Stmt::Sample {
            lhs: y,
            dist: g::Call {
                func: g::Ident {
                    name: (*lib).to_string(),
                    span: dist.span,
                },
                args: converted
                    .into_iter()
                    .map(|value| g::Arg { name: None, value })
                    .collect(),
                span,
            },
            modifier: None,
            span,
        }),
        Spelling::Formula(text) => {
            let mut with_y = converted;
            with_y.push(y);
            Ok(g::Stmt::Target {
                expr: formula(text, &with_y, span)?,
                span,
            })
        }
    }
}

/// Stan's shorthands, rewritten to the distribution they stand for: a GLM as its linear
/// predictor, `bernoulli(inv_logit(e))` as `bernoulli_logit(e)`, `poisson(exp(e))` as
/// `poisson_log(e)`, `neg_binomial_2(exp(e), phi)` as `neg_binomial_2_log(e, phi)`.
fn rewrite<'a>(dist: &'a str, args: &[Expr], span: g::Span) -> (&'a str, Vec<Expr>) {
    let bin = |op, a: &Expr, b: &Expr| Expr {
        kind: ExprKind::Binary(op, Box::new(a.clone()), Box::new(b.clone())),
        span,
    };
    let inner_of = |e: &Expr, f: &str| match &e.kind {
        ExprKind::Call { func, args, .. } if func.name == f && args.len() == 1 => {
            Some(args[0].clone())
        }
        _ => None,
    };
    match (dist, args) {
        ("bernoulli_logit_glm", [x, a, b]) => (
            "bernoulli_logit",
            vec![bin(BinOp::Add, a, &bin(BinOp::Mul, x, b))],
        ),
        ("poisson_log_glm", [x, a, b]) => (
            "poisson_log",
            vec![bin(BinOp::Add, a, &bin(BinOp::Mul, x, b))],
        ),
        ("normal_id_glm", [x, a, b, s]) => (
            "normal",
            vec![bin(BinOp::Add, a, &bin(BinOp::Mul, x, b)), s.clone()],
        ),
        ("cauchy", [m, s]) => {
            let one = Expr {
                kind: ExprKind::Num {
                    value: 1.0,
                    is_int: true,
                },
                span,
            };
            ("student_t", vec![one, m.clone(), s.clone()])
        }
        ("bernoulli", [p]) => match inner_of(p, "inv_logit") {
            Some(e) => ("bernoulli_logit", vec![e]),
            None => (dist, args.to_vec()),
        },
        ("binomial", [n, p]) => match inner_of(p, "inv_logit") {
            Some(e) => ("binomial_logit", vec![n.clone(), e]),
            None => (dist, args.to_vec()),
        },
        ("poisson", [r]) => match inner_of(r, "exp") {
            Some(e) => ("poisson_log", vec![e]),
            None => (dist, args.to_vec()),
        },
        ("neg_binomial_2", [m, phi]) => match inner_of(m, "exp") {
            Some(e) => ("neg_binomial_2_log", vec![e, phi.clone()]),
            None => (dist, args.to_vec()),
        },
        _ => (dist, args.to_vec()),
    }
}

/// The labels a likelihood needs its response declared with (`bernoulli`: `{0, 1}`).
pub fn needs_binary_labels(dist: &str) -> bool {
    matches!(
        dist,
        "bernoulli" | "bernoulli_logit" | "bernoulli_logit_glm"
    )
}

fn unknown_likelihood(dist: &g::Ident, arity: usize) -> StanError {
    let known: Vec<String> = LIKELIHOODS
        .iter()
        .map(|(n, a, _, _)| format!("{n}/{a}"))
        .collect();
    StanError::unsupported(
        format!(
            "the likelihood `{}` with {arity} arguments is not translated yet",
            dist.name
        ),
        dist.span,
        format!(
            "gpmc reads {} and the GLMs bernoulli_logit_glm, poisson_log_glm, normal_id_glm; any other density can be written per observation with `target +=`",
            known.join(", ")
        ),
    )
}

/// Whether a prior makes a parameter a Gaussian latent: a normal, or a Gaussian scale mixture
/// the compiler augments (Student-t, Cauchy, Laplace).
pub fn gaussian_family(dist: &str) -> bool {
    matches!(
        dist,
        "normal"
            | "std_normal"
            | "student_t"
            | "cauchy"
            | "double_exponential"
            | "multi_normal"
            | "multi_normal_cholesky"
    )
}

/// The `.gpm` prior call of a parameter (`latent` or not), from its Stan prior (`None`: Stan's
/// implicit flat prior).
pub fn prior(
    ctx: &Ctx,
    dist: Option<(&g::Ident, &[Expr])>,
    latent: bool,
    at: g::Span,
) -> Result<g::Call, StanError> {
    let Some((dist, args)) = dist else {
        return Ok(g::Call {
            func: g::Ident {
                name: "flat".into(),
                span: at,
            },
            args: vec![],
            span: at,
        });
    };
    if dist.name.starts_with("multi_normal") {
        if !latent {
            return Err(StanError::unsupported(
                format!("a `{}` prior on a hyperparameter is not translated", dist.name),
                dist.span,
                "a multivariate normal prior belongs to an unbounded vector the likelihood reads: a latent",
            ));
        }
        return crate::gp::prior(ctx, dist, args);
    }
    let mut converted = args
        .iter()
        .map(|a| ctx.conv(a))
        .collect::<Result<Vec<_>, _>>()?;
    let num = |v: f64| g::Expr {
        kind: g::ExprKind::Num {
            value: v,
            is_int: true,
        },
        span: dist.span,
    };
    let name = match dist.name.as_str() {
        "std_normal" if args.is_empty() => {
            converted = vec![num(0.0), num(1.0)];
            "normal"
        }
        "double_exponential" if latent => "laplace",
        other => other,
    };
    Ok(g::Call {
        func: g::Ident {
            name: name.to_string(),
            span: dist.span,
        },
        args: converted
            .into_iter()
            .map(|value| g::Arg { name: None, value })
            .collect(),
        span: dist.span,
    })
}
