//! Dimensions and affine index functions: offsets, strides (coefficient 2)
//! and reversals (`K - 1 - k`), with the buffer extent each one needs, so
//! that every index the view makes lies in its buffer (at sizes where the
//! extents are positive; elsewhere kernel and interpreter both fail).

use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cc,
    Pw,
    Ps,
}

/// One md_hom dimension: its index name (`i`) and size parameter (`I`).
pub struct Dim {
    pub index: &'static str,
    pub size: &'static str,
    pub kind: Kind,
}

const NAMES: [(&str, &str); 3] = [("i", "I"), ("j", "J"), ("k", "K")];

/// `n` dimensions (at most 3) of random kinds, at most one of them PS.
pub fn dims(rng: &mut Rng, n: usize) -> Vec<Dim> {
    let mut scans = 0;
    NAMES[..n]
        .iter()
        .map(|&(index, size)| {
            let kind = match rng.below(20) {
                0..=8 => Kind::Cc,
                9..=16 => Kind::Pw,
                _ if scans == 0 => {
                    scans += 1;
                    Kind::Ps
                }
                _ => Kind::Pw,
            };
            Dim { index, size, kind }
        })
        .collect()
}

/// `coef · d`, or `S - 1 - d` when reversed (coefficient 1).
#[derive(Clone, Copy)]
struct Term {
    dim: usize,
    coef: i64,
    reversed: bool,
}

/// One component of an index function: a sum of terms plus an offset.
#[derive(Clone)]
pub struct Component {
    terms: Vec<Term>,
    offset: i64,
}

impl Component {
    /// A component of an input view: one dimension, sometimes two, rarely
    /// none (a constant index).
    pub fn input(rng: &mut Rng, dims: &[Dim]) -> Component {
        let n = match rng.below(20) {
            0 => 0,
            1..=3 if dims.len() > 1 => 2,
            _ => 1,
        };
        let mut used: Vec<usize> = Vec::new();
        while used.len() < n {
            let d = rng.below(dims.len());
            if !used.contains(&d) {
                used.push(d);
            }
        }
        let terms = used.into_iter().map(|d| Term::random(rng, d)).collect();
        Component {
            terms,
            offset: rng.pick(&[0, 0, 0, 1, 2]),
        }
    }

    /// A component of an output view over kept dimension `d`: injective.
    pub fn output(rng: &mut Rng, d: usize) -> Component {
        Component {
            terms: vec![Term::random(rng, d)],
            offset: rng.pick(&[0, 0, 0, 0, 1, 3]),
        }
    }

    /// The index expression, e.g. `2 * i + K - 1 - k + 1`.
    pub fn index(&self, dims: &[Dim]) -> String {
        let mut parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                let d = &dims[t.dim];
                match (t.reversed, t.coef) {
                    (true, _) => format!("{} - 1 - {}", d.size, d.index),
                    (false, 1) => d.index.to_string(),
                    (false, c) => format!("{c} * {}", d.index),
                }
            })
            .collect();
        if self.offset != 0 || parts.is_empty() {
            parts.push(self.offset.to_string());
        }
        parts.join(" + ")
    }

    /// The extent of the buffer dimension this component indexes: its
    /// largest index plus one, `Σ coef · S - Σ coef + offset + 1`.
    pub fn extent(&self, dims: &[Dim]) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut constant = self.offset + 1;
        for t in &self.terms {
            let s = dims[t.dim].size;
            parts.push(if t.coef == 1 {
                s.to_string()
            } else {
                format!("{} * {s}", t.coef)
            });
            constant -= t.coef;
        }
        let mut e = parts.join(" + ");
        match (e.is_empty(), constant) {
            (true, c) => e = c.to_string(),
            (false, 0) => {}
            (false, c) if c > 0 => e += &format!(" + {c}"),
            (false, c) => e += &format!(" - {}", -c),
        }
        e
    }
}

impl Term {
    fn random(rng: &mut Rng, dim: usize) -> Term {
        match rng.below(10) {
            0..=5 => Term {
                dim,
                coef: 1,
                reversed: false,
            },
            6..=7 => Term {
                dim,
                coef: 1,
                reversed: true,
            },
            _ => Term {
                dim,
                coef: 2,
                reversed: false,
            },
        }
    }
}

/// An index function: one component per dimension of its buffer.
#[derive(Clone)]
pub struct View {
    pub components: Vec<Component>,
}

impl View {
    /// `|i, j| (e1, e2)`.
    pub fn closure(&self, dims: &[Dim]) -> String {
        let params: Vec<&str> = dims.iter().map(|d| d.index).collect();
        let comps: Vec<String> = self.components.iter().map(|c| c.index(dims)).collect();
        format!("|{}| ({})", params.join(", "), comps.join(", "))
    }

    /// The shape of a buffer that holds every index of `views` (`variant`s
    /// of one view), e.g. `2 * I, J + 1`.
    pub fn shape(views: &[View], dims: &[Dim]) -> String {
        let e: Vec<String> = (0..views[0].components.len())
            .map(|c| {
                let offset = views.iter().map(|v| v.components[c].offset).max();
                let widest = Component {
                    terms: views[0].components[c].terms.clone(),
                    offset: offset.unwrap_or(0),
                };
                widest.extent(dims)
            })
            .collect();
        e.join(", ")
    }

    /// Another access of the same buffer: the same dimensions and strides,
    /// other offsets and reversals (which do not change the extent).
    pub fn variant(&self, rng: &mut Rng) -> View {
        let components = self
            .components
            .iter()
            .map(|c| Component {
                terms: c
                    .terms
                    .iter()
                    .map(|t| Term {
                        reversed: t.coef == 1 && rng.chance(30),
                        ..*t
                    })
                    .collect(),
                offset: rng.pick(&[0, 1, 2]),
            })
            .collect();
        View { components }
    }

    /// An output view: every kept dimension once, in random order.
    pub fn output(rng: &mut Rng, dims: &[Dim]) -> View {
        let mut kept: Vec<usize> = (0..dims.len())
            .filter(|&d| dims[d].kind != Kind::Pw)
            .collect();
        for i in (1..kept.len()).rev() {
            kept.swap(i, rng.below(i + 1));
        }
        View {
            components: kept
                .into_iter()
                .map(|d| Component::output(rng, d))
                .collect(),
        }
    }

    /// A second access of an output that writes other elements than this
    /// one: the odd elements of a component with stride 2 where this one
    /// writes the even ones (or the other way round); `None` without such
    /// a component.
    pub fn interleaved(&self) -> Option<View> {
        let c = self
            .components
            .iter()
            .position(|c| matches!(c.terms[..], [Term { coef: 2, .. }]))?;
        let mut other = self.clone();
        other.components[c].offset += 1;
        Some(other)
    }

    /// An input view of rank 1 to 3 (at most the number of dimensions).
    pub fn input(rng: &mut Rng, dims: &[Dim]) -> View {
        let rank = 1 + rng.below(dims.len());
        View {
            components: (0..rank).map(|_| Component::input(rng, dims)).collect(),
        }
    }
}
