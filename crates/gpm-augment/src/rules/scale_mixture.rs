//! Scale mixtures in `r = u²` (thesis ch. 5, Theorem 1): an atom that reads the predictors through one square `(y − f)²`, `|y − f|` or `max(u, 0)` is rewritten in `r`; the pieces are grouped per `u²` and named (or proved completely monotone by the CAS) after the worklist.

use super::*;

/// The rule.
pub(super) struct ScaleMixture;

impl Rule for ScaleMixture {
    fn apply(&self, w: &mut Work<'_>, atom: Atom<'_>, _pending: &mut Vec<T>) -> Applied {
        let Atom { a, core, .. } = atom;
        if let Some(u) = find_square_argument(core) {
            let r = T::sym(Role::Aux, "r");
            let substituted = substitute_square(a, &u, &r);
            let atoms = atomize(&normalize(&substituted, &w.signs), &w.signs);
            let mut in_r = Vec::new();
            for b in atoms {
                if b.has_predictor() {
                    if !w.add_poly(&b) || Poly::of(&b, 1).is_none() {
                        return Err(format!(
                            "after writing |u|, u² and max(u, 0) with r = u², u = {}, the atom still depends on the predictors nonlinearly: {b}",
                            u.to_tree()
                        ));
                    }
                } else if b.mentions(Role::Aux, Some("r")) {
                    in_r.push(b);
                } else {
                    w.log_c.push(b);
                }
            }
            if let Some(g) = w.mix.iter().position(|(v, _)| w.same_up_to_sign(v, &u)) {
                w.mix[g].1.extend(in_r);
            } else {
                w.mix.push((u, in_r));
            }
            return Ok(true);
        }
        Ok(false)
    }
}
