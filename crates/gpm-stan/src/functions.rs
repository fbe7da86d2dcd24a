//! Stan's math functions in `.gpm`: one table, each entry the `.gpm` spelling of the function
//! (the same name, another name, or a formula of its arguments).

use crate::error::StanError;
use crate::gexpr::formula;
use gpm_syntax as g;

/// How a Stan function is written in `.gpm`.
enum Spelling {
    /// The `.gpm` function of this name, same arguments.
    Named(&'static str),
    /// A formula of the arguments `A`, `B` (parsed as `.gpm`).
    Formula(&'static str),
}

/// Stan's name, its arity, and its `.gpm` spelling.
const FUNCTIONS: &[(&str, usize, Spelling)] = &[
    ("exp", 1, Spelling::Named("exp")),
    ("log", 1, Spelling::Named("log")),
    ("log1p", 1, Spelling::Named("log1p")),
    ("sqrt", 1, Spelling::Named("sqrt")),
    ("square", 1, Spelling::Named("square")),
    ("abs", 1, Spelling::Named("abs")),
    ("fabs", 1, Spelling::Named("abs")),
    ("cosh", 1, Spelling::Named("cosh")),
    ("sinh", 1, Spelling::Named("sinh")),
    ("tanh", 1, Spelling::Named("tanh")),
    ("inv_logit", 1, Spelling::Named("logistic")),
    ("log_inv_logit", 1, Spelling::Named("log_logistic")),
    (
        "log1m_inv_logit",
        1,
        Spelling::Formula("log_logistic(-(A))"),
    ),
    ("log1p_exp", 1, Spelling::Named("softplus")),
    ("lgamma", 1, Spelling::Named("lgamma")),
    ("Phi", 1, Spelling::Named("normal_cdf")),
    (
        "Phi_approx",
        1,
        Spelling::Formula("logistic(0.07056 * (A)^3 + 1.5976 * (A))"),
    ),
    ("fmax", 2, Spelling::Named("max")),
    ("fmin", 2, Spelling::Named("min")),
    ("mean", 1, Spelling::Named("mean")),
    ("sd", 1, Spelling::Named("sd")),
    ("sum", 1, Spelling::Named("sum")),
    ("inv", 1, Spelling::Formula("1 / (A)")),
    ("inv_sqrt", 1, Spelling::Formula("1 / sqrt(A)")),
    ("inv_square", 1, Spelling::Formula("1 / (A)^2")),
    ("log1m", 1, Spelling::Formula("log1p(-(A))")),
    ("logit", 1, Spelling::Formula("log((A) / (1 - (A)))")),
    ("log2", 1, Spelling::Formula("log(A) / log(2)")),
    ("log10", 1, Spelling::Formula("log(A) / log(10)")),
    ("exp2", 1, Spelling::Formula("2 ^ (A)")),
    ("pow", 2, Spelling::Formula("(A) ^ (B)")),
    ("inv_cloglog", 1, Spelling::Formula("1 - exp(-exp(A))")),
    ("pi", 0, Spelling::Formula("3.141592653589793")),
    ("e", 0, Spelling::Formula("2.718281828459045")),
    ("sqrt2", 0, Spelling::Formula("1.4142135623730951")),
    ("log2", 0, Spelling::Formula("0.6931471805599453")),
    ("log10", 0, Spelling::Formula("2.302585092994046")),
    ("dot_product", 2, Spelling::Formula("(A) * (B)")),
    ("rep_vector", 2, Spelling::Formula("A")),
    ("rep_array", 2, Spelling::Formula("A")),
];

/// The `.gpm` expression of `func(args)`, each argument converted by `conv` once the function
/// is known (so that an unknown function is named before anything inside it).
pub fn call(
    func: &g::Ident,
    args: &[crate::ast::Expr],
    conv: &dyn Fn(&crate::ast::Expr) -> Result<g::Expr, StanError>,
    span: g::Span,
) -> Result<g::Expr, StanError> {
    let entry = FUNCTIONS
        .iter()
        .find(|(name, arity, _)| *name == func.name && *arity == args.len());
    let Some((_, _, spelling)) = entry else {
        return Err(unknown(func, args.len(), span));
    };
    let converted = args.iter().map(conv).collect::<Result<Vec<_>, _>>()?;
    match spelling {
        Spelling::Named(name) => Ok(g::Expr {
            kind: g::ExprKind::Call(g::Call {
                func: g::Ident {
                    name: (*name).to_string(),
                    span: func.span,
                },
                args: converted
                    .into_iter()
                    .map(|value| g::Arg { name: None, value })
                    .collect(),
                span,
            }),
            span,
        }),
        // `rep_vector(c, n)` is `c`: broadcast over the statement's observations.
        Spelling::Formula(text) => formula(text, &converted, span),
    }
}

fn unknown(func: &g::Ident, arity: usize, span: g::Span) -> StanError {
    let known: Vec<&str> = FUNCTIONS
        .iter()
        .filter(|(n, a, _)| *n == func.name && *a != arity)
        .map(|(n, _, _)| *n)
        .collect();
    let name = &func.name;
    if !known.is_empty() {
        return StanError::new(
            "stan::wrong_arity",
            format!("`{name}` does not take {arity} arguments here"),
            span,
        );
    }
    let what = if name.ends_with("_lpdf") || name.ends_with("_lpmf") {
        "a log density inside an expression"
    } else if name.starts_with("gp_") || name.starts_with("cholesky") {
        "a covariance function or matrix factorisation"
    } else {
        "this function"
    };
    StanError::unsupported(
        format!("`{name}` ({what}) is not translated into a gpmc model yet"),
        span,
        "docs/stan_models.md lists the Stan functions gpmc reads; write the model with those, or as a .gpm file",
    )
}
