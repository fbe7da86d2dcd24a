//! Responses and likelihood parameters that are data, checked against their domains on the
//! data before any sampling: each response within its likelihood's support (a count whole and
//! non-negative, a positive response above 0 — the registry's `ResponseKind`, whatever the
//! declaration says); a parameter that reads data (`normal(mu, s * x[i])`) within its
//! registry constraint at every row, over its hyperparameters' values (interval arithmetic,
//! [`gpm_ir::interval`]: the lowering checked it without the data); a class count within what
//! the logistic-softmax takes; a binomial's
//! response is at most its number of trials (the log-density's `lgamma(n − y + 1)` is not a
//! number beyond it, and the augmentation would run on regardless, returning nonsense with
//! success).

use super::{err, DataError};
use gpm_ir::{Model, Sx, SymRole};
use gpm_runtime::data::{Data, Value};

/// Check every factor whose parameters are data against their domains.
pub(super) fn check(model: &Model, data: &Data) -> Result<(), DataError> {
    for f in &model.factors {
        if let gpm_ir::FactorForm::Categorical {
            classes: gpm_ir::Dim::Var(c),
            ..
        } = &f.form
        {
            if let Some(n) = data.scalar(c).filter(|n| *n > gpm_ir::MAX_CLASSES as f64) {
                return Err(err(
                    c,
                    format!(
                        "`{c}` = {n} classes; the logistic-softmax takes at most {}",
                        gpm_ir::MAX_CLASSES
                    ),
                    Some("check the number of classes (the labels count them from 1)"),
                ));
            }
        }
        bijective_classes(model, data, &f.form)?;
        let (Some(rep), Some(y)) = (&f.replicate, &f.response) else {
            continue;
        };
        support(data, y, rep.likelihood, &f.source)?;
        for (k, param) in rep.params.iter().enumerate() {
            params_within(model, data, rep.likelihood, k, param, &f.source)?;
        }
        if let Some(t) = rep.likelihood.trials() {
            binomial_trials(data, y, &rep.params[t], &f.source)?;
        }
    }
    Ok(())
}

/// Under the bijective link (thesis §7.4.2) the labels' number of classes is the latent
/// matrix's columns plus one; when either is a datum the lowering could not check it.
fn bijective_classes(
    model: &Model,
    data: &Data,
    form: &gpm_ir::FactorForm,
) -> Result<(), DataError> {
    let gpm_ir::FactorForm::Categorical {
        classes,
        latent,
        link,
        ..
    } = form
    else {
        return Ok(());
    };
    let Some(gpm_ir::Shape::Matrix(_, columns)) = model.latent(latent).map(|z| &z.shape) else {
        return Ok(());
    };
    let size = |d: &gpm_ir::Dim| match d {
        gpm_ir::Dim::Const(c) => Some(*c as f64),
        gpm_ir::Dim::Var(v) => data.scalar(v),
    };
    let (Some(c), Some(k)) = (size(classes), size(columns)) else {
        return Ok(()); // a missing size is reported by the data checks
    };
    if link.bijective && c != k + 1.0 {
        return Err(err(
            &classes.to_string(),
            format!("`{classes}` = {c} classes, but `{latent}` has {columns} = {k} columns: the bijective link has one column fewer than classes"),
            Some("declare the columns `let J = C - 1;` and the latent `matrix[N, J]`"),
        ));
    }
    Ok(())
}

/// `y_i ≤ n_i` for a binomial with trials `n` a whole number or an integer datum (the
/// lowering admits nothing else).
fn binomial_trials(data: &Data, y: &str, trials: &Sx, source: &str) -> Result<(), DataError> {
    let Some(Value::Vector(ys)) = data.values.get(y) else {
        return Ok(());
    };
    let trial = |i: usize| -> Option<f64> {
        match trials {
            Sx::Num(x) => Some(*x),
            Sx::Sym(SymRole::Data, n) => datum(data, n, i),
            _ => None,
        }
    };
    for (i, &yi) in ys.iter().enumerate() {
        let Some(n) = trial(i) else { continue };
        // A response left out for prediction is NaN: nothing to check.
        if yi.is_finite() && !(n >= yi && n >= 0.0 && n.fract() == 0.0) {
            return Err(err(
                y,
                format!(
                    "`{y}[{}]` = {yi} but the number of trials there is {n} (in `{source}`): a binomial count is at most its trials",
                    i + 1
                ),
                Some("check the counts and the trials (they may be swapped, or come from different rows)"),
            ));
        }
    }
    Ok(())
}

/// Every observed `y_i` within the likelihood's support (a response left out for prediction is
/// NaN: nothing to check). Binary and class labels are checked against their declared sets.
fn support(
    data: &Data,
    y: &str,
    likelihood: gpm_ir::LikelihoodRef,
    source: &str,
) -> Result<(), DataError> {
    use gpm_ir::ResponseKind;
    let Some(Value::Vector(ys)) = data.values.get(y) else {
        return Ok(());
    };
    let (inside, what, fix): (fn(f64) -> bool, &str, &str) = match likelihood.response() {
        ResponseKind::Count => (
            |v| v >= 0.0 && v.fract() == 0.0,
            "a count: a whole number ≥ 0",
            "check the counts (a negative or fractional value is a coding error, or the data of another variable)",
        ),
        ResponseKind::Positive => (
            |v| v > 0.0,
            "positive",
            "drop or correct the values ≤ 0 (a zero duration or size needs a likelihood that allows it)",
        ),
        ResponseKind::Real | ResponseKind::Binary | ResponseKind::Category => return Ok(()),
    };
    if let Some((i, v)) = ys
        .iter()
        .enumerate()
        .find(|(_, v)| v.is_finite() && !inside(**v))
    {
        return Err(err(
            y,
            format!(
                "`{y}[{}]` = {v}, but `{}` needs each `{y}` to be {what} (in `{source}`)",
                i + 1,
                likelihood.name()
            ),
            Some(fix),
        ));
    }
    Ok(())
}

/// Parameter `k` of `likelihood`, an expression `param` that reads data but no predictor, within
/// the registry's constraint at each row, whatever values its hyperparameters take (a scale
/// `s * x[i]` with a negative `x[i]` would be run with a negative scale).
fn params_within(
    model: &Model,
    data: &Data,
    likelihood: gpm_ir::LikelihoodRef,
    k: usize,
    param: &Sx,
    source: &str,
) -> Result<(), DataError> {
    let symbols = param.symbols();
    let reads = |role: SymRole| symbols.iter().any(|(r, _)| *r == role);
    let Some(c) = likelihood.constraints().get(k).copied() else {
        return Ok(());
    };
    if !reads(SymRole::Data) || reads(SymRole::Predictor) {
        return Ok(());
    }
    let rows = symbols
        .iter()
        .filter_map(|(_, name)| match data.values.get(name) {
            Some(Value::Vector(v)) => Some(v.len()),
            _ => None,
        })
        .max()
        .unwrap_or(1);
    for i in 0..rows {
        let at = |role: SymRole, name: &str| match role {
            SymRole::Hyper => model.hyper(name).map(gpm_ir::interval::hyper_range),
            SymRole::Data => finite_datum(data, name, i).map(|v| (v, v)),
            SymRole::Predictor => None,
        };
        let Some(range) = gpm_ir::interval::range(param, &at) else {
            continue;
        };
        if c.admits_range(Some(range.0), Some(range.1)) {
            continue;
        }
        return Err(out_of_constraint(
            data,
            (likelihood, k, c),
            param,
            i,
            range,
            source,
        ));
    }
    Ok(())
}

/// Datum `name` at row `i` (a scalar at every row); `None` for a matrix.
fn datum(data: &Data, name: &str, i: usize) -> Option<f64> {
    match data.values.get(name)? {
        Value::Scalar(x) => Some(*x),
        Value::Vector(v) => v.get(i).copied(),
        Value::Matrix(_) => None,
    }
}

/// [`datum`] where it is a number (a value left out for prediction is NaN: nothing to check).
fn finite_datum(data: &Data, name: &str, i: usize) -> Option<f64> {
    datum(data, name, i).filter(|v| v.is_finite())
}

/// The error of a parameter outside its constraint at row `i`: the parameter, its expression's
/// range there and the data it read.
fn out_of_constraint(
    data: &Data,
    (likelihood, k, c): (gpm_ir::LikelihoodRef, usize, gpm_library::Constraint),
    param: &Sx,
    i: usize,
    range: gpm_ir::interval::Interval,
    source: &str,
) -> DataError {
    let mut read = Vec::new();
    let mut first = None;
    for (role, name) in param.symbols() {
        if role != SymRole::Data {
            continue;
        }
        first.get_or_insert(name.clone());
        if let Some(v) = finite_datum(data, &name, i) {
            let at = match data.values.get(&name) {
                Some(Value::Vector(_)) => format!("`{name}[{}]` = {v}", i + 1),
                _ => format!("`{name}` = {v}"),
            };
            if !read.contains(&at) {
                read.push(at);
            }
        }
    }
    let name = likelihood.params()[k];
    let must = c.describe();
    err(
        first.as_deref().unwrap_or(name),
        format!(
            "the `{name}` of `{}` must be {must}, but at row {} `{param}` {} (with {}; in `{source}`)",
            likelihood.name(),
            i + 1,
            gpm_ir::interval::spread(range),
            read.join(", ")
        ),
        Some("check the data that enter the parameter, or write it so that it stays inside (and its hyperparameters' ranges or priors with it)"),
    )
}
