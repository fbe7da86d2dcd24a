//! JSON data files, read as a stream into [`Raw`] values without a document tree: a numeric
//! array becomes a column of `f64` (8 bytes a number, as the CSV path stores them) and an array
//! of equally long numeric rows a matrix, so a JSON file costs the memory of its numbers, not
//! of a `serde_json::Value` per entry. A key given twice in one object is an error naming it
//! (`serde_json::Value` would silently keep the last). Values already parsed go through the
//! same visitor ([`value`]).

use super::{err, given_twice, DataError, Raw};
use nalgebra::DMatrix;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;

/// The text of a JSON file (`--init`) read as the data files are: past a byte-order mark and
/// within [`super::limits::RunLimit::json`]'s limits (a FIFO or device streaming forever, or a file larger
/// than memory could hold, is an error, not a hang).
pub(crate) fn read_json_text(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    super::limits::RunLimit::json(without_bom(std::fs::File::open(path)?)?)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// `reader` after a UTF-8 byte-order mark, if it starts with one (editors on Windows write it;
/// the CSV and `.gpm` readers accept it too).
fn without_bom<R: std::io::Read>(
    mut reader: R,
) -> std::io::Result<std::io::Chain<std::io::Cursor<Vec<u8>>, R>> {
    use std::io::Read;
    const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
    let mut head = Vec::with_capacity(3);
    while head.len() < 3 {
        let mut byte = [0u8; 1];
        if reader.read(&mut byte)? == 0 {
            break;
        }
        head.push(byte[0]);
        if head[..] != BOM[..head.len()] {
            break;
        }
    }
    if head == BOM {
        head.clear();
    }
    Ok(std::io::Cursor::new(head).chain(reader))
}

/// Read the JSON object in `reader` (the file `name`) into `into`.
pub(super) fn read<R: std::io::Read>(
    reader: R,
    name: &str,
    into: &mut BTreeMap<String, Raw>,
) -> Result<(), DataError> {
    let mut problem = None;
    let reader = without_bom(reader)
        .map_err(|e| err("", format!("cannot read the data file `{name}`: {e}"), None))?;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let read = Object {
        into,
        problem: &mut problem,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    if let Some(p) = problem {
        return Err(p);
    }
    read.map_err(|e| {
        let what = match e.classify() {
            // Valid JSON of another shape (an array, a number at the top).
            serde_json::error::Category::Data => {
                format!("`{name}` must hold a JSON object of named values ({e})")
            }
            _ => format!("`{name}` is not valid JSON: {e}"),
        };
        err(
            "",
            what,
            Some("data files are JSON objects `{\"N\": 3, \"y\": [..]}` or CSV with a header"),
        )
    })
}

/// One JSON value already parsed (the Python package's and the tests' data) as [`Raw`], by the
/// same visitor as a file's values: one reading of JSON for both.
pub(super) fn value(v: &serde_json::Value) -> Raw {
    use serde::Deserialize;
    Raw::deserialize(v).unwrap_or_else(|e| Raw::Bad(e.to_string()))
}

/// The top-level object: each key once, in this file and across the files read before.
struct Object<'a> {
    into: &'a mut BTreeMap<String, Raw>,
    problem: &'a mut Option<DataError>,
}

impl<'de> DeserializeSeed<'de> for Object<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Object<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object of named values")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut here = std::collections::BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !here.insert(key.clone()) {
                *self.problem = Some(err(
                    &key,
                    format!("`{key}` is given twice in the same data file"),
                    Some("each datum is given once: remove one of the two entries"),
                ));
                return Err(de::Error::custom("a key given twice"));
            }
            if self.into.contains_key(&key) {
                *self.problem = Some(given_twice(&key));
                return Err(de::Error::custom("a key given twice"));
            }
            let value: Raw = map.next_value()?;
            self.into.insert(key, value);
        }
        Ok(())
    }
}

impl<'de> de::Deserialize<'de> for Raw {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

/// An array being read: numbers so far, equally long numeric rows so far, or anything.
enum Items {
    Numbers(Vec<f64>),
    Rows { ncols: usize, cells: Vec<f64> },
    Mixed(Vec<Raw>),
}

impl Items {
    fn push(&mut self, item: Raw) {
        *self = match (std::mem::replace(self, Items::Mixed(vec![])), item) {
            (Items::Numbers(mut v), Raw::Num(x)) => {
                v.push(x);
                Items::Numbers(v)
            }
            (Items::Numbers(v), Raw::Column(row)) if v.is_empty() => Items::Rows {
                ncols: row.len(),
                cells: row,
            },
            (Items::Rows { ncols, mut cells }, Raw::Column(row)) if row.len() == ncols => {
                cells.extend_from_slice(&row);
                Items::Rows { ncols, cells }
            }
            (other, item) => {
                let mut v = other.into_raws();
                v.push(item);
                Items::Mixed(v)
            }
        }
    }

    fn into_raws(self) -> Vec<Raw> {
        match self {
            Items::Numbers(v) => v.into_iter().map(Raw::Num).collect(),
            Items::Rows { ncols, cells } if ncols > 0 => cells
                .chunks(ncols)
                .map(|row| Raw::Column(row.to_vec()))
                .collect(),
            Items::Rows { .. } => vec![],
            Items::Mixed(v) => v,
        }
    }

    fn finish(self) -> Raw {
        match self {
            Items::Numbers(v) if v.is_empty() => Raw::Array(vec![]),
            Items::Numbers(v) => Raw::Column(v),
            Items::Rows { ncols, cells } if ncols > 0 => {
                let nrows = cells.len() / ncols;
                Raw::Matrix(DMatrix::from_row_slice(nrows, ncols, &cells))
            }
            other => Raw::Array(other.into_raws()),
        }
    }
}

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or an array")
    }
    fn visit_f64<E>(self, x: f64) -> Result<Raw, E> {
        Ok(Raw::Num(x))
    }
    fn visit_i64<E>(self, x: i64) -> Result<Raw, E> {
        Ok(Raw::Num(x as f64))
    }
    fn visit_u64<E>(self, x: u64) -> Result<Raw, E> {
        Ok(Raw::Num(x as f64))
    }
    // CmdStan writes non-finite numbers as strings.
    fn visit_str<E>(self, s: &str) -> Result<Raw, E> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "nan" => Raw::Num(f64::NAN),
            "inf" | "+inf" | "infinity" => Raw::Num(f64::INFINITY),
            "-inf" | "-infinity" => Raw::Num(f64::NEG_INFINITY),
            _ => Raw::Bad(format!("the string {s:?}")),
        })
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw::Bad("null".into()))
    }
    fn visit_bool<E>(self, b: bool) -> Result<Raw, E> {
        Ok(Raw::Bad(format!("the boolean {b}")))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Raw::Bad("an object".into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Items::Numbers(Vec::new());
        while let Some(item) = seq.next_element::<Raw>()? {
            items.push(item);
        }
        Ok(items.finish())
    }
}
