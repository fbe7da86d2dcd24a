//! Reading the recognizers' trees ([`gpm_augment::T`]) where a factor's programs are compiled:
//! the symbols a tree reads, the trees of a family's parameters.

use gpm_augment::{Family, Role, T};

/// Every symbol `t` reads, each once, in order of first appearance.
pub(crate) fn collect(t: &T, out: &mut Vec<(Role, String)>) {
    match t {
        T::Num(_) => {}
        T::Sym(r, n) => {
            if !out.iter().any(|(r2, n2)| r2 == r && n2 == n) {
                out.push((*r, n.clone()));
            }
        }
        T::Add(v) | T::Mul(v) | T::Call(_, v) => v.iter().for_each(|u| collect(u, out)),
        T::Pow(a, b) => {
            collect(a, out);
            collect(b, out);
        }
    }
}

/// The trees of a family's parameters that the runtime evaluates per observation (none of the
/// CAS-evaluated `φ`, whose symbol `r` is not a slot).
pub(crate) fn family_trees(f: &Family) -> Vec<&T> {
    match (f.law(), f) {
        (Some((_, params)), _) => params,
        // φ is evaluated by the CAS; its symbol `r` is not a slot.
        (None, Family::TiltedLaplace { c2, .. }) => vec![c2],
        (None, _) => vec![],
    }
}
