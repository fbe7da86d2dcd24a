//! Test data: inputs to predict at, responses optional, and checked against the training
//! data the fit was made from — a test file that would silently change what the posterior
//! means (one input column where the model was fitted on two, another class count or number
//! of groups) is refused rather than predicted from.

use super::*;

/// Check test data, a response left out being "not observed" (NaN).
/// A size the test data leave out is the training data's (when `train` is given): it must be
/// anyway ([`check_test_against`]), and a class count or a number of groups cannot be read off
/// test inputs.
pub(super) fn check_test(
    model: &Model,
    mut raw: BTreeMap<String, Raw>,
    train: Option<&Data>,
) -> Result<Data, DataError> {
    if let Some(train) = train {
        for name in fixed_sizes(model) {
            if let (false, Some(v)) = (raw.contains_key(name), train.scalar(name)) {
                raw.insert(name.to_string(), Raw::Num(v));
            }
        }
    }
    infer_sizes(model, &mut raw);
    let mut unobserved = Vec::new();
    // A transformed response (`let log_earn = log(earn)`) left out leaves out the vectors it
    // is computed from too: they are responses in all but name.
    let mut names: Vec<&String> = Vec::new();
    for name in model.factors.iter().filter_map(|f| f.response.as_ref()) {
        if let Some(expr) = model.datum(name).and_then(|d| d.derived.as_ref()) {
            if expr.reads().iter().all(|r| raw.contains_key(r)) {
                continue; // given through its inputs: computed and scored
            }
            let inputs = model.data.iter().filter(|d| expr.reads().contains(&d.name));
            names.extend(inputs.filter(|d| d.derived.is_none()).map(|d| &d.name));
        }
        names.push(name);
    }
    for name in names {
        let Some(d) = model.datum(name) else { continue };
        let (Shape::Vector(n), false) = (&d.shape, raw.contains_key(name)) else {
            continue;
        };
        let n = match n {
            Dim::Const(n) => *n,
            Dim::Var(v) => match raw.get(v) {
                // A size beyond what memory holds is reported by the checks, not allocated.
                Some(Raw::Num(x)) if *x >= 0.0 && *x <= MAX_SIZE => *x as usize,
                _ => continue, // reported by the checks: the size is missing or out of range
            },
        };
        // A value the declaration accepts, so that the checks pass; replaced by NaN below.
        let valid = match &d.constraint {
            ValueSet::Set(s) => s.first().map_or(0.0, |v| *v as f64),
            ValueSet::Range {
                lo: Some(Bound::Const(lo)),
                ..
            } => *lo,
            _ => 0.0,
        };
        raw.insert(name.clone(), Raw::Column(vec![valid; n]));
        unobserved.push((name.clone(), n));
    }
    let unobserved_names: Vec<String> = unobserved.iter().map(|u| u.0.clone()).collect();
    let mut data = check_with(model, raw, Some(&unobserved_names))?;
    for (name, n) in unobserved {
        data.values.insert(name, Value::Vector(vec![f64::NAN; n]));
    }
    Ok(data)
}

/// Check test data against the training data of the fit it is predicted from: every size
/// except the number of observations a likelihood reads (which is what test data change) must
/// be the training value — input columns, class counts, groups, basis sizes. Shared by every
/// prediction path (the CLI's `predict` and `infer --predict`, and Python's).
pub fn check_test_against(model: &Model, train: &Data, test: &Data) -> Result<(), DataError> {
    let fixed = fixed_sizes(model);
    for d in &model.data {
        if !fixed.contains(&d.name.as_str()) {
            continue;
        }
        let (Some(was), Some(now)) = (train.scalar(&d.name), test.scalar(&d.name)) else {
            continue;
        };
        if was != now {
            let uses = size_uses(model, &d.name);
            return Err(DataError {
                declared: Some(d.span),
                ..err(
                    &d.name,
                    format!(
                        "the test data have `{}` = {now} but the fit was made with `{}` = {was} ({uses}): predictions would not mean what the posterior means",
                        d.name, d.name
                    ),
                    Some("give test inputs of the training shape (the same columns, classes and groups); only the number of test points may differ"),
                )
            });
        }
    }
    Ok(())
}

/// What a size measures, for the message: the declarations that use it.
fn size_uses(model: &Model, name: &str) -> String {
    let uses = |s: &Shape| shape_uses(s, name);
    let names: Vec<String> = model
        .data
        .iter()
        .filter(|d| uses(&d.shape))
        .map(|d| format!("`{}`", d.name))
        .chain(
            model
                .latents
                .iter()
                .filter(|z| uses(&z.shape))
                .map(|z| format!("`{}`", z.name)),
        )
        .collect();
    format!("the size of {}", names.join(", "))
}

/// The sizes test data may not change: every size but the number of observations a
/// likelihood reads (input columns, class counts, groups, basis sizes).
fn fixed_sizes(model: &Model) -> Vec<&str> {
    let observations: Vec<&str> = model
        .factors
        .iter()
        .filter(|f| f.prior_of.is_none())
        .filter_map(|f| match &f.n {
            Dim::Var(v) => Some(v.as_str()),
            Dim::Const(_) => None,
        })
        .collect();
    model
        .data
        .iter()
        .filter(|d| matches!(d.shape, Shape::Scalar) && is_size(model, &d.name))
        .map(|d| d.name.as_str())
        .filter(|n| !observations.contains(n))
        .collect()
}
