//! The candidate values of a level: integer aliases (`divides`, `multiple_of`, bounds,
//! `equal`) generate them instead of testing every value of the domain.

use super::plan::LevelPlan;
use crate::param::{Domain, IntOp};

impl LevelPlan<'_> {
    /// Writes to `out` the domain indices, ascending, that satisfy this level's aliases.
    pub(super) fn candidates(&self, bound: &[u64], out: &mut Vec<u32>) {
        out.clear();
        let mut lo_v = i128::MIN;
        let mut hi_v = i128::MAX;
        let mut div: Option<i128> = None; // smallest non-zero dividend
        let mut mult: Option<i128> = None; // largest modulus
                                           // Right-hand sides, evaluated once per node.
        let mut rhs_buf = [0i128; 8];
        let many;
        let rhs: &[i128] = if self.gens.len() <= rhs_buf.len() {
            for (i, g) in self.gens.iter().enumerate() {
                match (g.rhs)(&g.access.bound(bound)) {
                    Some(r) => rhs_buf[i] = r,
                    None => return,
                }
            }
            &rhs_buf[..self.gens.len()]
        } else {
            match self
                .gens
                .iter()
                .map(|g| (g.rhs)(&g.access.bound(bound)))
                .collect::<Option<Vec<_>>>()
            {
                Some(v) => {
                    many = v;
                    &many
                }
                None => return,
            }
        };
        let mut simple = true;
        for (g, &r) in self.gens.iter().zip(rhs) {
            match g.op {
                IntOp::AtMost => hi_v = hi_v.min(r),
                IntOp::LessThan => hi_v = hi_v.min(r.saturating_sub(1)),
                IntOp::AtLeast => lo_v = lo_v.max(r),
                IntOp::GreaterThan => lo_v = lo_v.max(r.saturating_add(1)),
                IntOp::Equal => {
                    lo_v = lo_v.max(r);
                    hi_v = hi_v.min(r);
                }
                IntOp::Divides => {
                    simple = false;
                    if r != 0 && div.is_none_or(|d| r.abs() < d) {
                        div = Some(r.abs());
                    }
                }
                IntOp::MultipleOf => {
                    simple = false;
                    if r == 0 {
                        return;
                    }
                    if mult.is_none_or(|m| r.abs() > m) {
                        mult = Some(r.abs());
                    }
                }
                IntOp::Unequal => simple = false,
            }
        }
        if lo_v > hi_v {
            return;
        }
        let ok = |v: i128| self.gens.iter().zip(rhs).all(|(g, &r)| g.op.holds(v, r));
        match &self.domain {
            Domain::Set(_) => {
                for (i, &v) in self.set_ints.iter().enumerate() {
                    if self.gens.is_empty() || (v >= lo_v && v <= hi_v && ok(v)) {
                        out.push(i as u32);
                    }
                }
            }
            &Domain::Ints { lo, step, len } => {
                if len == 0 {
                    return;
                }
                let hi = lo + (len as i128 - 1) * step;
                let (a, z) = (lo_v.max(lo), hi_v.min(hi));
                if a > z {
                    return;
                }
                let ia = (a - lo + step - 1) / step;
                let iz = (z - lo) / step;
                if ia > iz {
                    return;
                }
                let scan = iz - ia + 1;
                let push = |v: i128, out: &mut Vec<u32>| {
                    if v >= a && v <= z && (v - lo) % step == 0 && ok(v) {
                        out.push(((v - lo) / step) as u32);
                    }
                };
                if simple {
                    out.extend((ia..=iz).map(|i| i as u32));
                } else if let Some(d) = div.filter(|&d| isqrt(d) * 2 < scan) {
                    for_each_divisor(d, a, z, |v| push(v, out));
                } else if let Some(m) = mult.filter(|&m| m > step) {
                    let first = if a >= 0 {
                        (a + m - 1) / m * m
                    } else {
                        a / m * m
                    };
                    let mut v = first;
                    while v <= z {
                        push(v, out);
                        v += m;
                    }
                } else {
                    for i in ia..=iz {
                        push(lo + i * step, out);
                    }
                }
            }
        }
    }
}

fn isqrt(n: i128) -> i128 {
    let mut r = (n as f64).sqrt() as i128;
    while r * r > n {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= n {
        r += 1;
    }
    r
}

/// Calls `f` with every divisor of `d > 0` in `[a, z]`, ascending (negative ones first).
fn for_each_divisor(d: i128, a: i128, z: i128, mut f: impl FnMut(i128)) {
    let r = isqrt(d);
    if a < 0 {
        // -d .. -1: the negated divisors, largest magnitude first.
        for i in 1..=r {
            if d % i == 0 {
                let v = -(d / i);
                if v >= a && v <= z {
                    f(v);
                }
            }
        }
        for i in (1..=r).rev() {
            if d % i == 0 && i * i != d && -i >= a && -i <= z {
                f(-i);
            }
        }
    }
    for i in 1..=r.min(z) {
        if d % i == 0 && i >= a {
            f(i);
        }
    }
    for i in (1..=r).rev() {
        if d % i == 0 && i * i != d {
            let v = d / i;
            if v > z {
                break;
            }
            if v >= a {
                f(v);
            }
        }
    }
}

impl Domain {
    #[inline]
    pub(crate) fn raw(&self, idx: u32) -> u64 {
        match self {
            Domain::Ints { lo, step, .. } => (lo + idx as i128 * step) as u64,
            Domain::Set(v) => v[idx as usize],
        }
    }
}
