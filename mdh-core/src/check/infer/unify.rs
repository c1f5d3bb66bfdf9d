//! Unification of type variables.

use crate::spec::ScalarType;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Any,
    IntLit,
    FloatLit,
    Known(ScalarType),
}

pub(super) fn class_text(c: Class) -> String {
    match c {
        Class::Any => "a value of unknown type".to_string(),
        Class::IntLit => "an integer".to_string(),
        Class::FloatLit => "a float".to_string(),
        Class::Known(t) => format!("`{t}`"),
    }
}

#[derive(Default)]
pub(super) struct Vars {
    parent: Vec<usize>,
    class: Vec<Class>,
}

impl Vars {
    pub(super) fn fresh(&mut self, c: Class) -> usize {
        self.parent.push(self.parent.len());
        self.class.push(c);
        self.parent.len() - 1
    }

    pub(super) fn find(&mut self, mut v: usize) -> usize {
        let mut root = v;
        while let Some(&p) = self.parent.get(root) {
            if p == root {
                break;
            }
            root = p;
        }
        while let Some(&p) = self.parent.get(v) {
            if p == v {
                break;
            }
            if let Some(slot) = self.parent.get_mut(v) {
                *slot = root;
            }
            v = p;
        }
        root
    }

    pub(super) fn class(&mut self, v: usize) -> Class {
        let r = self.find(v);
        self.class.get(r).copied().unwrap_or(Class::Any)
    }

    pub(super) fn set(&mut self, v: usize, c: Class) {
        let r = self.find(v);
        if let Some(slot) = self.class.get_mut(r) {
            *slot = c;
        }
    }

    pub(super) fn unify(&mut self, a: usize, b: usize) -> Result<(), (Class, Class)> {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return Ok(());
        }
        let (ca, cb) = (self.class(ra), self.class(rb));
        use Class::*;
        let merged = match (ca, cb) {
            (Any, x) | (x, Any) => x,
            (IntLit, IntLit) => IntLit,
            (IntLit, FloatLit) | (FloatLit, IntLit) | (FloatLit, FloatLit) => FloatLit,
            (IntLit, Known(t)) | (Known(t), IntLit) if t != ScalarType::Bool => Known(t),
            (FloatLit, Known(t)) | (Known(t), FloatLit) if t.is_float() => Known(t),
            (Known(x), Known(y)) if x == y => Known(x),
            _ => return Err((ca, cb)),
        };
        if let Some(p) = self.parent.get_mut(ra) {
            *p = rb;
        }
        if let Some(c) = self.class.get_mut(rb) {
            *c = merged;
        }
        Ok(())
    }

    /// Unifies `v` with a fresh variable of class `c`.
    pub(super) fn constrain(&mut self, v: usize, c: Class) -> Result<(), (Class, Class)> {
        let w = self.fresh(c);
        self.unify(v, w)
    }

    pub(super) fn resolve(&mut self, v: usize) -> Option<ScalarType> {
        match self.class(v) {
            Class::Known(t) => Some(t),
            Class::IntLit => Some(ScalarType::I32),
            Class::FloatLit => Some(ScalarType::F64),
            Class::Any => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Class, Vars};
    use crate::spec::ScalarType;

    #[test]
    fn unify_literal_classes() {
        let mut v = Vars::default();
        let a = v.fresh(Class::IntLit);
        let b = v.fresh(Class::Known(ScalarType::F32));
        assert!(v.unify(a, b).is_ok());
        assert_eq!(v.resolve(a), Some(ScalarType::F32));
        let c = v.fresh(Class::FloatLit);
        let d = v.fresh(Class::Known(ScalarType::I32));
        assert!(v.unify(c, d).is_err());
        let e = v.fresh(Class::IntLit);
        assert_eq!(v.resolve(e), Some(ScalarType::I32));
        let f = v.fresh(Class::Known(ScalarType::Bool));
        assert!(v.unify(e, f).is_err());
    }
}
