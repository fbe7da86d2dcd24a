//! What a draw row holds, as typed variables with their declared shapes. The runtime never
//! names a column: the CmdStan names (`f.3`, `F.2.1`) are made by the writer in `gpmc`, and
//! prediction finds a variable by its id, not by parsing a name.

use gpm_schedule::{HyperId, LatentId};

/// What a variable of the draws is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarKind {
    /// The log joint density up to a constant (`lp__`).
    LogJoint,
    /// A sampled hyperparameter.
    Hyper(HyperId),
    /// A latent variable, in its declared shape.
    Latent(LatentId),
    /// The whitened inducing coordinates `v` of a sparse GP latent (`M`, or `M × C` for a
    /// matrix latent): an internal coordinate that prediction needs.
    Inducing(LatentId),
    /// Each observation's log-likelihood under the original model (`log_lik`).
    LogLik,
    /// A response replicated from the model at the draw (`y_rep`).
    Replicate,
}

/// One variable: where its values sit in a row and their shape. A matrix's values are stored
/// column-major (the first index runs fastest), as CmdStan writes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    /// What it is.
    pub kind: VarKind,
    /// Its shape: `[]` scalar, `[n]` vector, `[r, c]` matrix.
    pub dims: Vec<usize>,
    /// Offset of its first value in a row.
    pub offset: usize,
}

impl Var {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether it has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The variables of a draw row, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Layout {
    /// The variables.
    pub vars: Vec<Var>,
}

impl Layout {
    /// Append a variable after the others.
    pub fn push(&mut self, kind: VarKind, dims: Vec<usize>) {
        let offset = self.width();
        self.vars.push(Var { kind, dims, offset });
    }

    /// Values per row.
    pub fn width(&self) -> usize {
        self.vars.last().map_or(0, |v| v.offset + v.len())
    }

    /// The variable of this kind.
    pub fn find(&self, kind: VarKind) -> Option<&Var> {
        self.vars.iter().find(|v| v.kind == kind)
    }
}

/// The per-entry suffixes of a variable in CmdStan's order: `""` for a scalar, `.i` for a
/// vector, `.i.j` for a matrix with `i` running fastest (1-based).
pub fn entry_suffixes(dims: &[usize]) -> Vec<String> {
    let n: usize = dims.iter().product();
    (0..n)
        .map(|mut k| {
            let mut s = String::new();
            for &d in dims {
                s.push_str(&format!(".{}", k % d + 1));
                k /= d;
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_are_named_column_major() {
        assert_eq!(entry_suffixes(&[]), vec![""]);
        assert_eq!(entry_suffixes(&[2]), vec![".1", ".2"]);
        assert_eq!(
            entry_suffixes(&[2, 3]),
            vec![".1.1", ".2.1", ".1.2", ".2.2", ".1.3", ".2.3"]
        );
    }

    #[test]
    fn offsets_follow_the_shapes() {
        let mut l = Layout::default();
        l.push(VarKind::LogJoint, vec![]);
        l.push(VarKind::Latent(LatentId(0)), vec![3, 2]);
        l.push(VarKind::Hyper(HyperId(1)), vec![]);
        assert_eq!(l.vars[1].offset, 1);
        assert_eq!(l.vars[2].offset, 7);
        assert_eq!(l.width(), 8);
        assert_eq!(l.find(VarKind::Hyper(HyperId(1))).unwrap().offset, 7);
    }
}
