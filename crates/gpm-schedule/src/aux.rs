//! A factor's auxiliary variables as the runtime draws them: each one's law with its parameters
//! compiled to tapes ([`AuxKind`]: a named mixing law, or the tilted law of a CAS-proved `φ`),
//! and its conditional mean.

use crate::tape::Tape;
use gpm_families::MixingLaw;

/// How an auxiliary variable is drawn, with compiled parameters.
#[derive(Debug, Clone)]
pub enum AuxKind {
    /// A named law ([`gpm_families`]) with its parameters, in the order of
    /// [`MixingLaw::params`].
    Law {
        /// The law.
        law: &'static dyn MixingLaw,
        /// Its parameters.
        params: Vec<Tape>,
    },
    /// The tilted inverse-Laplace law of a CAS-proved completely monotone `φ`.
    Tilted(Tilted),
}

impl AuxKind {
    /// The law's name for people (`Pólya-Gamma`; the same as the augmentation plan's).
    pub fn name(&self) -> &'static str {
        match self {
            AuxKind::Law { law, .. } => law.name(),
            AuxKind::Tilted(_) => gpm_augment::plan::TILTED_LAW,
        }
    }
}

/// A completely monotone `φ(r) = exp(−ψ(r))` with no named law: evaluated by the CAS (in
/// complex arithmetic for Laplace inversion), its parameters read from slots.
#[derive(Debug, Clone)]
pub struct Tilted {
    /// `ψ(r)`, its symbols bound to `[r, params…]`.
    pub psi: gpm_cas::SlotExpr,
    /// `ψ'(r)`, bound alike: `E[ω | c] = ψ'(c²)`.
    pub dpsi: gpm_cas::SlotExpr,
    /// The tilt `c²`.
    pub c2: Tape,
    /// The factor's slots of `ψ`'s symbols other than `r`, in binding order.
    pub params: Vec<usize>,
}

impl Tilted {
    /// The arguments of `ψ` and `ψ'` at `r`: `[r, params…]` read from a factor's slot values.
    pub fn args<V: Copy + From<f64>>(&self, r: V, vals: &[f64], out: &mut Vec<V>) {
        out.clear();
        out.push(r);
        out.extend(self.params.iter().map(|&k| V::from(vals[k])));
    }
}

/// One auxiliary variable of a factor (one value per observation).
#[derive(Debug, Clone)]
pub struct AuxProgram {
    /// Name.
    pub name: String,
    /// Its slot.
    pub slot: usize,
    /// Its conditional.
    pub kind: AuxKind,
    /// Its conditional mean as a function of the slots (CAVI uses it with `c² = E[r]`).
    pub mean: Tape,
}
