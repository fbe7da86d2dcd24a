//! Reading data: JSON in the layout CmdStan uses (`{"N": 3, "y": [1, 0, 1], "X": [[..], ..]}`)
//! and CSV with one row per observation (a matrix `X` as columns `X.1, X.2, ...` or
//! `X[1], X[2], ...`). Several files may be merged. Every datum is checked against its
//! declaration — present, right shape, finite, integral where declared `int`, inside its value
//! constraint — and a failure names the variable and points at its declaration.

use gpm_ir::{Bound, Dim, Elem, Model, Shape, ValueSet};
use gpm_runtime::data::{Data, Value};
use nalgebra::DMatrix;
use std::collections::BTreeMap;
use std::path::Path;

mod csv_file;
mod domains;
mod json;
mod limits;
mod missing;
mod shaped;
mod test_data;

pub(crate) use json::read_json_text;
use test_data::check_test;
pub use test_data::check_test_against;

/// Bad data: which variable, what is wrong, and where it is declared.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct DataError {
    /// The variable (empty when the file itself is unreadable).
    pub variable: String,
    /// One sentence.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
    /// Declaration span in the model source.
    pub declared: Option<gpm_syntax::Span>,
}

impl miette::Diagnostic for DataError {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new("gpm::data"))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let s = self.declared?;
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_primary_with_span(
                Some(format!("`{}` declared here", self.variable)),
                s,
            ),
        )))
    }
}

fn err(variable: &str, message: String, help: Option<&str>) -> DataError {
    DataError {
        variable: variable.into(),
        message,
        help: help.map(|h| h.into()),
        declared: None,
    }
}

/// Raw values as read from files, before checking against the model.
#[derive(Debug, Clone)]
pub(crate) enum Raw {
    Num(f64),
    Array(Vec<Raw>),
    Bad(String),
    /// A CSV column, already numbers (no per-entry `Raw`: 8 bytes per value).
    Column(Vec<f64>),
    /// CSV columns `X.1, X.2, ...`, already a matrix.
    Matrix(DMatrix<f64>),
}

/// Read one data file (`.json` or `.csv`) into raw named values.
fn read_file(path: &Path, into: &mut BTreeMap<String, Raw>) -> Result<(), DataError> {
    let name = path.display().to_string();
    let cannot =
        |e: std::io::Error| err("", format!("cannot read the data file `{name}`: {e}"), None);
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if is_csv {
        // Streamed: the file is never held as text, and each value is stored once, as f64.
        let file = std::fs::File::open(path).map_err(cannot)?;
        csv_file::read(
            limits::RunLimit::csv(std::io::BufReader::with_capacity(1 << 20, file)),
            &name,
            into,
        )
    } else {
        let file = std::fs::File::open(path).map_err(cannot)?;
        json::read(
            limits::RunLimit::json(std::io::BufReader::with_capacity(1 << 20, file)),
            &name,
            into,
        )
    }
}

/// A datum given by two files (or two columns): which one was meant is not for gpmc to guess.
fn given_twice(name: &str) -> DataError {
    err(
        name,
        format!("`{name}` is given twice in the data"),
        Some("each datum comes from one file and one column"),
    )
}

/// Check the bytes of one CSV data file (named `name` in messages) against the model.
pub fn from_csv(model: &Model, name: &str, bytes: &[u8]) -> Result<Data, DataError> {
    let mut raw = BTreeMap::new();
    csv_file::read(bytes, name, &mut raw)?;
    check(model, raw)
}

/// Load and merge data files, then check every datum against the model.
pub fn load(model: &Model, paths: &[&Path]) -> Result<Data, DataError> {
    let mut raw = BTreeMap::new();
    for p in paths {
        read_file(p, &mut raw)?;
    }
    check(model, raw)
}

/// Load test data: like [`load`], except that a likelihood's response may be left out (a test
/// file with inputs only). A response left out is a vector of NaN ("not observed"): prediction
/// then gives the predictive distribution without scoring it.
/// Sizes the files leave out are `train`'s, when given (they must be the same).
pub fn load_test(model: &Model, paths: &[&Path], train: Option<&Data>) -> Result<Data, DataError> {
    let mut raw = BTreeMap::new();
    for p in paths {
        read_file(p, &mut raw)?;
    }
    check_test(model, raw, train)
}

/// [`load_test`] of JSON values already parsed.
pub fn test_from_json_value(
    model: &Model,
    v: &serde_json::Value,
    train: Option<&Data>,
) -> Result<Data, DataError> {
    let serde_json::Value::Object(map) = v else {
        return Err(err("", "data must be a JSON object".into(), None));
    };
    check_test(
        model,
        map.iter()
            .map(|(k, v)| (k.clone(), json::value(v)))
            .collect(),
        train,
    )
}

/// Transformed data (`let` in the data block): computes `d` from the data checked before it
/// and puts the value among the raw values, where it is checked like a given one. A value
/// given for it is an error (it would be silently replaced). For prediction (`test`), a `let`
/// whose inputs are not all given (a transformed response left out) is left to the response
/// rules, and one that reduces the data (`mean`, `sd`, `sum`) is refused: recomputed over the
/// new data it would not be the value the model was fitted with.
fn derive(
    d: &gpm_ir::DataVar,
    expr: &gpm_ir::DataExpr,
    data: &Data,
    raw: &mut BTreeMap<String, Raw>,
    unobserved: Option<&[String]>,
) -> Result<(), DataError> {
    use gpm_ir::DataArray;
    let name = &d.name;
    let test = unobserved.is_some();
    if !test && raw.contains_key(name) {
        return Err(err(
            name,
            format!(
                "`{name}` is computed by its `let` in the data block, but the data also give it"
            ),
            Some("remove it from the data (or rename the `let`)"),
        ));
    }
    let reads = expr.reads();
    if let Some(missing) = reads.iter().find(|r| !data.values.contains_key(*r)) {
        // Reported here rather than as a missing `name`: the data to add are its inputs.
        return Err(err(
            name,
            format!(
                "`{name}` is computed by its `let` from `{missing}`, which the data do not give"
            ),
            Some("add the data it reads"),
        ));
    }
    // New inputs with a response left out: a `let` reading that response would be computed
    // from its placeholder.
    if let Some(r) = reads
        .iter()
        .find(|r| unobserved.is_some_and(|u| u.contains(*r)))
    {
        return Err(err(
            name,
            format!("`{name}` is computed from the response `{r}`, which the new data leave out"),
            Some(&format!(
                "give `{r}` in the new data, or compute `{name}` from inputs only"
            )),
        ));
    }
    if test && expr.has_reduction() {
        return Err(err(
            name,
            format!("`{name}` reduces the data (mean, sd or sum); prediction would recompute it over the new inputs instead of the training data"),
            Some("compute the training value once and write it as a number in the `let` (e.g. `x - 3.7` instead of `x - mean(x)`)"),
        ));
    }
    let get = |n: &str| -> Option<DataArray> {
        Some(match data.values.get(n)? {
            Value::Scalar(v) => DataArray::Scalar(*v),
            Value::Vector(v) => DataArray::Vector(v.clone()),
            Value::Matrix(m) => DataArray::Matrix {
                rows: m.nrows(),
                cols: m.ncols(),
                values: m.as_slice().to_vec(),
            },
        })
    };
    let value = expr.eval(&get).map_err(|why| {
        err(
            name,
            format!("`{name}` cannot be computed: {why}"),
            Some("check the shapes of the data its `let` reads"),
        )
    })?;
    let (entries, r) = match value {
        DataArray::Scalar(v) => (vec![v], Raw::Num(v)),
        DataArray::Vector(v) => (v.clone(), Raw::Column(v)),
        DataArray::Matrix { rows, cols, values } => (
            values.clone(),
            Raw::Matrix(DMatrix::from_column_slice(rows, cols, &values)),
        ),
    };
    if let Some(k) = entries.iter().position(|v| !v.is_finite()) {
        return Err(err(
            name,
            format!(
                "`{name}` is {} at entry {} (its `let` gives no finite number there, e.g. the log of 0 or a division by 0)",
                entries[k],
                k + 1
            ),
            Some("fix the data it reads, or the `let`"),
        ));
    }
    raw.insert(name.clone(), r);
    Ok(())
}

/// The training data and, if test files are given, the test data, both read before any work,
/// so that a bad test file fails before a long run rather than after it.
pub fn load_train_and_test(
    model: &Model,
    data: &[std::path::PathBuf],
    test: &[std::path::PathBuf],
) -> Result<(Data, Option<Data>), DataError> {
    fn paths(files: &[std::path::PathBuf]) -> Vec<&Path> {
        files.iter().map(|p| p.as_path()).collect()
    }
    let train = load(model, &paths(data))?;
    let test = if test.is_empty() {
        None
    } else {
        let test = load_test(model, &paths(test), Some(&train))?;
        check_test_against(model, &train, &test)?;
        Some(test)
    };
    Ok((train, test))
}

/// A datum given as numbers by an embedding language (the Python package): already numbers,
/// checked against the model like a file's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    /// A scalar.
    Scalar(f64),
    /// A vector.
    Vector(Vec<f64>),
    /// A matrix (rows = observations).
    Matrix(DMatrix<f64>),
}

fn given_raw(values: Vec<(String, Given)>) -> BTreeMap<String, Raw> {
    values
        .into_iter()
        .map(|(k, v)| {
            let raw = match v {
                Given::Scalar(x) => Raw::Num(x),
                Given::Vector(v) => Raw::Column(v),
                Given::Matrix(m) => Raw::Matrix(m),
            };
            (k, raw)
        })
        .collect()
}

/// Check given values against the model (as [`load`] checks a file's).
pub fn from_given(model: &Model, values: Vec<(String, Given)>) -> Result<Data, DataError> {
    check(model, given_raw(values))
}

/// Check given test values against the model, responses optional (as [`load_test`]).
pub fn test_from_given(
    model: &Model,
    values: Vec<(String, Given)>,
    train: Option<&Data>,
) -> Result<Data, DataError> {
    check_test(model, given_raw(values), train)
}

/// Check raw JSON values (already parsed) against the model.
pub fn from_json_value(model: &Model, v: &serde_json::Value) -> Result<Data, DataError> {
    let serde_json::Value::Object(map) = v else {
        return Err(err("", "data must be a JSON object".into(), None));
    };
    check(
        model,
        map.iter()
            .map(|(k, v)| (k.clone(), json::value(v)))
            .collect(),
    )
}

fn check(model: &Model, raw: BTreeMap<String, Raw>) -> Result<Data, DataError> {
    check_with(model, raw, None)
}

/// [`check`]; `unobserved`: the data are new inputs for prediction and these responses were
/// left out (placeholders stand for them; see [`derive`]).
fn check_with(
    model: &Model,
    mut raw: BTreeMap<String, Raw>,
    unobserved: Option<&[String]>,
) -> Result<Data, DataError> {
    infer_sizes(model, &mut raw);
    let given: Vec<String> = raw.keys().cloned().collect();
    let mut data = Data::default();
    for d in &model.data {
        let with_span = |mut e: DataError| {
            e.declared = Some(d.span);
            e
        };
        let placeholder = unobserved.is_some_and(|u| u.contains(&d.name));
        if let Some(expr) = d.derived.as_ref().filter(|_| !placeholder) {
            derive(d, expr, &data, &mut raw, unobserved).map_err(with_span)?;
        }
        let Some(r) = raw.remove(&d.name) else {
            let e = missing::missing(model, &raw, &given, d);
            let span = model.datum(&e.variable).map_or(d.span, |x| x.span);
            return Err(DataError {
                declared: Some(span),
                ..e
            });
        };
        let dim = |dim: &Dim| -> Result<usize, DataError> {
            match dim {
                Dim::Const(n) => Ok(*n),
                Dim::Var(v) => data
                    .scalar(v)
                    .map(|x| x as usize)
                    .ok_or_else(|| err(v, format!("the size `{v}` is missing"), None)),
            }
        };
        let value = shaped::shaped(d, r, &dim).map_err(with_span)?;
        check_values(model, &data, d, &value).map_err(with_span)?;
        data.values.insert(d.name.clone(), value);
    }
    domains::check(model, &data)?;
    Ok(data)
}

fn raw_text(r: &Raw) -> String {
    match r {
        Raw::Num(x) => format!("the number {x}"),
        Raw::Array(a) => format!("an array of {} entries", a.len()),
        Raw::Bad(s) => s.clone(),
        // As `Raw::Array` says it: a JSON array is read as a column when it holds numbers only.
        Raw::Column(v) => format!("an array of {} entries", v.len()),
        Raw::Matrix(m) => format!("{} columns of {} numbers", m.ncols(), m.nrows()),
    }
}

/// Fill in sizes the files leave out when a vector or matrix declared with them determines them
/// (CSV files never carry sizes).
fn infer_sizes(model: &Model, raw: &mut BTreeMap<String, Raw>) {
    for d in &model.data {
        let dims: Vec<(&Dim, usize)> = match (&d.shape, raw.get(&d.name)) {
            (Shape::Vector(n), Some(Raw::Array(a))) => vec![(n, a.len())],
            (Shape::Vector(n), Some(Raw::Column(v))) => vec![(n, v.len())],
            (Shape::Vector(n), Some(Raw::Matrix(m))) if m.ncols() == 1 => vec![(n, m.nrows())],
            (Shape::Matrix(r, c), Some(Raw::Matrix(m))) => vec![(r, m.nrows()), (c, m.ncols())],
            (Shape::Matrix(r, c), Some(Raw::Array(a))) => {
                let cols = match a.first() {
                    Some(Raw::Array(row)) => Some(row.len()),
                    Some(Raw::Column(row)) => Some(row.len()),
                    _ => None,
                };
                let mut v = vec![(r, a.len())];
                if let Some(c2) = cols {
                    v.push((c, c2));
                }
                v
            }
            _ => vec![],
        };
        for (dim, n) in dims {
            if let Dim::Var(v) = dim {
                raw.entry(v.clone()).or_insert(Raw::Num(n as f64));
            }
        }
    }
}

/// The largest magnitude of a datum: squares (distances, residuals) of anything larger overflow.
pub const MAX_MAGNITUDE: f64 = 1e150;

/// The largest size (`N`, `D`) a data file may give: 10⁹ entries of a vector are 8 GB.
const MAX_SIZE: f64 = 1e9;

/// Whether a shape is measured by the size `name` (`vector[name]`, `matrix[name, _]`, …).
fn shape_uses(s: &Shape, name: &str) -> bool {
    match s {
        Shape::Vector(Dim::Var(v)) => v == name,
        Shape::Matrix(r, c) => {
            matches!(r, Dim::Var(v) if v == name) || matches!(c, Dim::Var(v) if v == name)
        }
        _ => false,
    }
}

/// Whether the scalar datum `name` is the size of a data or latent vector or matrix.
fn is_size(model: &Model, name: &str) -> bool {
    model.data.iter().any(|d| shape_uses(&d.shape, name))
        || model.latents.iter().any(|z| shape_uses(&z.shape, name))
}

fn check_values(
    model: &Model,
    data: &Data,
    d: &gpm_ir::DataVar,
    value: &Value,
) -> Result<(), DataError> {
    // Borrowed, not copied: at 10⁶ rows a copy would double the data's memory.
    let entries: &[f64] = match value {
        Value::Scalar(x) => std::slice::from_ref(x),
        Value::Vector(v) => v,
        Value::Matrix(m) => m.as_slice(),
    };
    let locate = |k: usize| match value {
        Value::Scalar(_) => String::new(),
        Value::Vector(_) => format!(" (entry {})", k + 1),
        Value::Matrix(m) => format!(" (row {}, column {})", k % m.nrows() + 1, k / m.nrows() + 1),
    };
    for (k, x) in entries.iter().enumerate() {
        if !x.is_finite() {
            return Err(err(
                &d.name,
                format!("`{}` contains {x}{}", d.name, locate(k)),
                Some("remove or impute missing values before inference"),
            ));
        }
        if d.elem == Elem::Int && x.fract() != 0.0 {
            return Err(err(
                &d.name,
                format!("`{}` is declared int but contains {x}{}", d.name, locate(k)),
                None,
            ));
        }
        if d.elem == Elem::Int && d.shape == Shape::Scalar && *x < 0.0 {
            return Err(err(
                &d.name,
                format!("the size `{}` is negative ({x})", d.name),
                None,
            ));
        }
        if d.elem == Elem::Int
            && d.shape == Shape::Scalar
            && *x > MAX_SIZE
            && is_size(model, &d.name)
        {
            return Err(err(
                &d.name,
                format!(
                    "the size `{}` is {x}, more than gpmc handles ({MAX_SIZE:e})",
                    d.name
                ),
                None,
            ));
        }
        if d.elem == Elem::Int && d.shape == Shape::Scalar && *x == 0.0 && is_size(model, &d.name) {
            return Err(err(
                &d.name,
                format!(
                    "the size `{}` is 0: there is nothing to infer from or about",
                    d.name
                ),
                Some("give at least one observation"),
            ));
        }
        if x.abs() > MAX_MAGNITUDE {
            return Err(err(
                &d.name,
                format!(
                    "`{}` contains {x:e}{}, beyond ±{MAX_MAGNITUDE:e}: its square overflows double precision",
                    d.name,
                    locate(k)
                ),
                Some("rescale the data (divide by a constant) before inference"),
            ));
        }
        let bound = |b: &Bound| match b {
            Bound::Const(c) => Some(*c),
            Bound::Var(v) => data.scalar(v),
        };
        match &d.constraint {
            ValueSet::Any => {}
            ValueSet::Set(s) => {
                if !s.iter().any(|v| *v as f64 == *x) {
                    return Err(err(
                        &d.name,
                        format!(
                            "`{}` contains {x}{}, outside its declared set {{{}}}",
                            d.name,
                            locate(k),
                            s.iter()
                                .map(|v| v.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        Some("recode the labels or change the declared set"),
                    ));
                }
            }
            ValueSet::Range { lo, hi } => {
                if let Some(lo) = lo.as_ref().and_then(bound) {
                    if *x < lo {
                        return Err(err(
                            &d.name,
                            format!(
                                "`{}` contains {x}{}, below its declared lower bound {lo}",
                                d.name,
                                locate(k)
                            ),
                            // Labels and indices coded from 0 (Python, scikit-learn).
                            (*x == 0.0 && lo == 1.0 && d.elem == Elem::Int).then_some(
                                "labels and indices are 1-based here, as in Stan: add 1 to 0-based codes (`y + 1`)",
                            ),
                        ));
                    }
                }
                if let Some(hi) = hi.as_ref().and_then(bound) {
                    if *x > hi {
                        return Err(err(
                            &d.name,
                            format!(
                                "`{}` contains {x}{}, above its declared upper bound {hi}",
                                d.name,
                                locate(k)
                            ),
                            None,
                        ));
                    }
                }
            }
        }
    }
    // Group indices (`u[g[i]]`) must point into their latent vector.
    for p in &model.predictors {
        for t in &p.terms {
            if let gpm_ir::Design::Gather { index } = &t.design {
                if *index == d.name {
                    let len = model.latent(&t.latent).and_then(|z| match &z.shape {
                        Shape::Vector(Dim::Const(n)) => Some(*n as f64),
                        Shape::Vector(Dim::Var(v)) => data.scalar(v),
                        _ => None,
                    });
                    if let Some(len) = len {
                        if let Some((k, x)) = entries
                            .iter()
                            .enumerate()
                            .find(|(_, x)| **x < 1.0 || **x > len)
                        {
                            return Err(err(
                                &d.name,
                                format!(
                                    "`{}` contains {x}{}, but `{}` has entries 1..{len}",
                                    d.name,
                                    locate(k),
                                    t.latent
                                ),
                                Some("group indices count from 1"),
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The data files merged into one JSON object (CmdStan's format), read with the same limits
/// as every data file: what a Stan program run on its whole log density binds
/// ([`gpm_density::Model::bind`], which checks each datum against its declaration).
pub fn json_object(
    paths: &[std::path::PathBuf],
) -> Result<serde_json::Map<String, serde_json::Value>, DataError> {
    use std::io::Read;
    let mut out = serde_json::Map::new();
    for path in paths {
        let name = path.display().to_string();
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if !is_json {
            return Err(err(
                "",
                format!("`{name}`: a Stan program run by NUTS on its log density reads CmdStan JSON data"),
                Some("write the data as a JSON object of the data block's names (as CmdStan's `--data file=...json`)"),
            ));
        }
        let cannot =
            |e: std::io::Error| err("", format!("cannot read the data file `{name}`: {e}"), None);
        let file = std::fs::File::open(path).map_err(cannot)?;
        let mut text = String::new();
        limits::RunLimit::json(std::io::BufReader::with_capacity(1 << 20, file))
            .read_to_string(&mut text)
            .map_err(cannot)?;
        let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let value: serde_json::Value = serde_json::from_str(body)
            .map_err(|e| err("", format!("`{name}` is not valid JSON: {e}"), None))?;
        let serde_json::Value::Object(map) = value else {
            return Err(err(
                "",
                format!("`{name}` is not a JSON object of named data"),
                Some("write {\"N\": 3, \"y\": [1, 2, 3]}"),
            ));
        };
        for (k, v) in map {
            if out.contains_key(&k) {
                return Err(err(
                    &k,
                    format!("`{k}` is given by more than one data file"),
                    Some("give each datum once"),
                ));
            }
            out.insert(k, v);
        }
    }
    Ok(out)
}
