//! The horseshoe's scale mixture, whose mixing measure is improper: `log φ(r) = log(e^(cr)
//! E₁(cr))` with `c > 0` is `φ(r) = ∫ e^(−rω) dω / (c + ω)` (Carvalho, Polson & Scott 2010,
//! Theorem 1, in the precision `ω = c/λ²`). `φ(0) = ∞` — the density's pole at the origin — so
//! the general scale-mixture rule, which normalises `φ` by `φ(0)`, cannot take it: this one
//! names the unnormalised measure, and `log C` gets no `log φ(0)`.

use super::mixing_law::poly_in_r;
use super::*;

/// The named (improper) mixing law when `atoms_r` is the single atom `log_e1_scaled(c·r)` with
/// `c > 0`; `None` when it is not that atom.
pub(super) fn name_improper(
    w: &Work,
    atoms_r: &[T],
    r: &T,
    r_expr: &T,
) -> Option<Result<super::mixing_law::Named, String>> {
    let [T::Call(SxFunc::LogE1Scaled, arg)] = atoms_r else {
        return None;
    };
    let (c0, c) = poly_in_r(&arg[0], r)?;
    let probe = w.probe(&[&c0, &c]);
    if !probe.equal(&c0, &T::Num(0.0)) {
        return None;
    }
    if !probe.sign_ok(&c, true) {
        return Some(Err(format!(
            "φ(r) = e^(cr) E₁(cr) needs c > 0; here c = {c}"
        )));
    }
    // E[ω | r] = E₂(cr) / (r E₁(cr)) = e^(−log(e^(cr)E₁(cr))) / r − c.
    let x = T::mul(vec![c.clone(), r_expr.clone()]);
    let mean = T::sub(
        T::mul(vec![
            T::exp(T::neg(T::call(SxFunc::LogE1Scaled, x))),
            T::pow(r_expr.clone(), T::Num(-1.0)),
        ]),
        c.clone(),
    );
    Some(Ok(super::mixing_law::Named {
        conditional: Family::Horseshoe {
            c: c.clone(),
            s: r_expr.clone(),
        },
        prior_family: Family::Horseshoe {
            c: c.clone(),
            s: T::Num(0.0),
        },
        proof: None,
        mean,
        form: "horseshoe scale mixture (improper mixing measure)",
    }))
}
