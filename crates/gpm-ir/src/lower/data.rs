//! The `data` block: each declaration's type, shape and value constraint.

use super::*;

impl Lowerer {
    pub(super) fn data_decl(&mut self, d: &ast::DataDecl) {
        let elem = match d.ty.kind {
            TypeKind::Int | TypeKind::IntArray(_) => Elem::Int,
            _ => Elem::Real,
        };
        let shape = shape_of(&d.ty, &mut |e| self.dim(e));
        let constraint = self.value_set(&d.constraint, elem);
        if !self.declare(&d.name, Binding::Data) {
            return;
        }
        if let Some(shape) = shape {
            self.model.data.push(DataVar {
                name: d.name.name.clone(),
                elem,
                shape,
                constraint,
                span: d.span,
                derived: None,
            });
        }
    }
}
