//! Evaluation with Python's semantics.

use super::{err, Bin, Builtin, Cmp, Env, Expr, ExprError, Node, PyValue};

impl Expr {
    /// Evaluates the expression.
    ///
    /// # Errors
    /// Python's run-time errors (division by zero, wrong types), with their column.
    pub fn eval(&self, env: &dyn Env) -> Result<PyValue, ExprError> {
        let mut locals = Vec::new();
        self.ev(env, &mut locals)
    }

    fn ev(&self, env: &dyn Env, locals: &mut Vec<PyValue>) -> Result<PyValue, ExprError> {
        let c = self.column;
        Ok(match &self.node {
            Node::Const(v) => v.clone(),
            Node::Var(s) => env.get(*s),
            Node::Local(d) => locals.get(*d).cloned().unwrap_or(PyValue::None),
            Node::Neg(e) => match e.ev(env, locals)? {
                PyValue::Float(x) => PyValue::Float(-x),
                v => match v.as_int() {
                    Some(i) => PyValue::Int(i.checked_neg().ok_or_else(|| overflow(c))?),
                    None => {
                        return err(
                            c,
                            format!("bad operand type for unary -: `{}`", v.type_name()),
                        )
                    }
                },
            },
            Node::Pos(e) => match e.ev(env, locals)? {
                PyValue::Bool(b) => PyValue::Int(b as i64),
                v @ (PyValue::Int(_) | PyValue::Float(_)) => v,
                v => {
                    return err(
                        c,
                        format!("bad operand type for unary +: `{}`", v.type_name()),
                    )
                }
            },
            Node::Invert(e) => {
                let v = e.ev(env, locals)?;
                match v.as_int() {
                    Some(i) => PyValue::Int(!i),
                    None => {
                        return err(
                            c,
                            format!("bad operand type for unary ~: `{}`", v.type_name()),
                        )
                    }
                }
            }
            Node::Not(e) => PyValue::Bool(!e.ev(env, locals)?.truthy()),
            Node::And(a, b) => {
                let l = a.ev(env, locals)?;
                if l.truthy() {
                    b.ev(env, locals)?
                } else {
                    l
                }
            }
            Node::Or(a, b) => {
                let l = a.ev(env, locals)?;
                if l.truthy() {
                    l
                } else {
                    b.ev(env, locals)?
                }
            }
            Node::IfElse { cond, then, other } => {
                if cond.ev(env, locals)?.truthy() {
                    then.ev(env, locals)?
                } else {
                    other.ev(env, locals)?
                }
            }
            Node::Bin(op, a, b) => {
                let l = a.ev(env, locals)?;
                let r = b.ev(env, locals)?;
                binary(*op, &l, &r, c)?
            }
            Node::Compare(first, rest) => {
                let mut l = first.ev(env, locals)?;
                for (op, e) in rest {
                    let r = e.ev(env, locals)?;
                    if !compare(*op, &l, &r, e.column)? {
                        return Ok(PyValue::Bool(false));
                    }
                    l = r;
                }
                PyValue::Bool(true)
            }
            Node::List(items) => PyValue::List(
                items
                    .iter()
                    .map(|e| e.ev(env, locals))
                    .collect::<Result<Vec<_>, _>>()?
                    .into(),
            ),
            Node::Index(a, i) => {
                let v = a.ev(env, locals)?;
                let i = i.ev(env, locals)?;
                index(&v, &i, c)?
            }
            Node::Call(f, args) => {
                let args = args
                    .iter()
                    .map(|e| e.ev(env, locals))
                    .collect::<Result<Vec<_>, _>>()?;
                call(*f, &args, c)?
            }
            Node::Comprehension { elem, clauses } => {
                let mut out = Vec::new();
                comprehend(elem, clauses, env, locals, &mut out)?;
                PyValue::List(out.into())
            }
        })
    }
}

fn comprehend(
    elem: &Expr,
    clauses: &[(Expr, Vec<Expr>)],
    env: &dyn Env,
    locals: &mut Vec<PyValue>,
    out: &mut Vec<PyValue>,
) -> Result<(), ExprError> {
    let Some(((iter, conds), rest)) = clauses.split_first() else {
        out.push(elem.ev(env, locals)?);
        return Ok(());
    };
    let items = match iter.ev(env, locals)? {
        PyValue::List(v) => v,
        PyValue::Str(s) => s
            .chars()
            .map(|c| PyValue::Str(c.to_string().into()))
            .collect(),
        v => return err(iter.column, format!("`{}` is not iterable", v.type_name())),
    };
    for x in items.iter() {
        locals.push(x.clone());
        let mut keep = true;
        for cond in conds {
            if !cond.ev(env, locals)?.truthy() {
                keep = false;
                break;
            }
        }
        if keep {
            comprehend(elem, rest, env, locals, out)?;
        }
        locals.pop();
    }
    Ok(())
}

fn overflow(c: usize) -> ExprError {
    ExprError {
        column: c,
        message: "integer overflow (this reader's integers are 64-bit)".into(),
    }
}

fn zero_division(c: usize) -> ExprError {
    ExprError {
        column: c,
        message: "division by zero".into(),
    }
}

fn floor_div_i(a: i64, b: i64, c: usize) -> Result<i64, ExprError> {
    if b == 0 {
        return Err(zero_division(c));
    }
    let q = a.checked_div(b).ok_or_else(|| overflow(c))?;
    Ok(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

fn mod_i(a: i64, b: i64, c: usize) -> Result<i64, ExprError> {
    if b == 0 {
        return Err(zero_division(c));
    }
    let r = a.checked_rem(b).ok_or_else(|| overflow(c))?;
    Ok(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

fn mod_f(a: f64, b: f64, c: usize) -> Result<f64, ExprError> {
    if b == 0.0 {
        return Err(zero_division(c));
    }
    let r = a % b;
    Ok(if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    })
}

fn binary(op: Bin, l: &PyValue, r: &PyValue, c: usize) -> Result<PyValue, ExprError> {
    use PyValue::{Float, Int, List, Str};
    // Sequences: concatenation and repetition.
    match (op, l, r) {
        (Bin::Add, Str(a), Str(b)) => return Ok(Str(format!("{a}{b}").into())),
        (Bin::Add, List(a), List(b)) => {
            return Ok(List(a.iter().chain(b.iter()).cloned().collect()))
        }
        (Bin::Mul, List(a), n) | (Bin::Mul, n, List(a)) if n.as_int().is_some() => {
            let n = n.as_int().unwrap_or(0).max(0) as usize;
            return Ok(List(
                std::iter::repeat_n(a.iter(), n)
                    .flatten()
                    .cloned()
                    .collect(),
            ));
        }
        _ => {}
    }
    let bad = || {
        err(
            c,
            format!(
                "unsupported operand types for {}: `{}` and `{}`",
                bin_symbol(op),
                l.type_name(),
                r.type_name()
            ),
        )
    };
    if let (Some(a), Some(b)) = (l.as_int(), r.as_int()) {
        return Ok(match op {
            Bin::Add => Int(a.checked_add(b).ok_or_else(|| overflow(c))?),
            Bin::Sub => Int(a.checked_sub(b).ok_or_else(|| overflow(c))?),
            Bin::Mul => Int(a.checked_mul(b).ok_or_else(|| overflow(c))?),
            Bin::Div => {
                if b == 0 {
                    return Err(zero_division(c));
                }
                Float(a as f64 / b as f64)
            }
            Bin::FloorDiv => Int(floor_div_i(a, b, c)?),
            Bin::Mod => Int(mod_i(a, b, c)?),
            Bin::Pow => {
                if b < 0 {
                    if a == 0 {
                        return Err(zero_division(c));
                    }
                    Float((a as f64).powf(b as f64))
                } else {
                    let e = u32::try_from(b).map_err(|_| overflow(c))?;
                    Int(a.checked_pow(e).ok_or_else(|| overflow(c))?)
                }
            }
            Bin::BitAnd if matches!((l, r), (PyValue::Bool(_), PyValue::Bool(_))) => {
                PyValue::Bool(a & b != 0)
            }
            Bin::BitOr if matches!((l, r), (PyValue::Bool(_), PyValue::Bool(_))) => {
                PyValue::Bool(a | b != 0)
            }
            Bin::BitXor if matches!((l, r), (PyValue::Bool(_), PyValue::Bool(_))) => {
                PyValue::Bool(a ^ b != 0)
            }
            Bin::BitAnd => Int(a & b),
            Bin::BitOr => Int(a | b),
            Bin::BitXor => Int(a ^ b),
            Bin::Shl => {
                let s = u32::try_from(b).map_err(|_| err_msg(c, "negative shift count"))?;
                let v = a.checked_shl(s).ok_or_else(|| overflow(c))?;
                if v >> s != a {
                    return Err(overflow(c));
                }
                Int(v)
            }
            Bin::Shr => {
                let s = u32::try_from(b).map_err(|_| err_msg(c, "negative shift count"))?;
                Int(a >> s.min(63))
            }
        });
    }
    let (Some(a), Some(b)) = (l.as_f64(), r.as_f64()) else {
        return bad();
    };
    Ok(Float(match op {
        Bin::Add => a + b,
        Bin::Sub => a - b,
        Bin::Mul => a * b,
        Bin::Div => {
            if b == 0.0 {
                return Err(zero_division(c));
            }
            a / b
        }
        Bin::FloorDiv => {
            if b == 0.0 {
                return Err(zero_division(c));
            }
            (a / b).floor()
        }
        Bin::Mod => mod_f(a, b, c)?,
        Bin::Pow => a.powf(b),
        _ => return bad(),
    }))
}

fn err_msg(c: usize, m: &str) -> ExprError {
    ExprError {
        column: c,
        message: m.into(),
    }
}

fn bin_symbol(op: Bin) -> &'static str {
    match op {
        Bin::Add => "+",
        Bin::Sub => "-",
        Bin::Mul => "*",
        Bin::Div => "/",
        Bin::FloorDiv => "//",
        Bin::Mod => "%",
        Bin::Pow => "**",
        Bin::BitAnd => "&",
        Bin::BitOr => "|",
        Bin::BitXor => "^",
        Bin::Shl => "<<",
        Bin::Shr => ">>",
    }
}

/// Python's `==`: numbers by value, otherwise same type and equal.
fn py_eq(a: &PyValue, b: &PyValue) -> bool {
    match (a, b) {
        (PyValue::Str(x), PyValue::Str(y)) => x == y,
        (PyValue::List(x), PyValue::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| py_eq(p, q))
        }
        (PyValue::None, PyValue::None) => true,
        _ => match (a.as_int(), b.as_int()) {
            (Some(x), Some(y)) => x == y,
            _ => match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
        },
    }
}

fn order(a: &PyValue, b: &PyValue, c: usize) -> Result<std::cmp::Ordering, ExprError> {
    use std::cmp::Ordering;
    match (a, b) {
        (PyValue::Str(x), PyValue::Str(y)) => Ok(x.cmp(y)),
        (PyValue::List(x), PyValue::List(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                if !py_eq(p, q) {
                    return order(p, q, c);
                }
            }
            Ok(x.len().cmp(&y.len()))
        }
        _ => match (a.as_int(), b.as_int()) {
            (Some(x), Some(y)) => Ok(x.cmp(&y)),
            _ => match (a.as_f64(), b.as_f64()) {
                // NaN compares false both ways; `Equal` makes `<` and `>` false, and `==`
                // does not come here.
                (Some(x), Some(y)) => Ok(x.partial_cmp(&y).unwrap_or(Ordering::Equal)),
                _ => err(
                    c,
                    format!(
                        "`<`, `>` are not supported between `{}` and `{}`",
                        a.type_name(),
                        b.type_name()
                    ),
                ),
            },
        },
    }
}

fn compare(op: Cmp, l: &PyValue, r: &PyValue, c: usize) -> Result<bool, ExprError> {
    use std::cmp::Ordering::{Greater, Less};
    let nan = matches!(l, PyValue::Float(x) if x.is_nan())
        || matches!(r, PyValue::Float(x) if x.is_nan());
    Ok(match op {
        Cmp::Eq => py_eq(l, r),
        Cmp::Ne => !py_eq(l, r),
        Cmp::In | Cmp::NotIn => {
            let found = match r {
                PyValue::List(v) => v.iter().any(|x| py_eq(x, l)),
                PyValue::Str(s) => match l {
                    PyValue::Str(sub) => s.contains(&**sub),
                    _ => return err(c, "`in <string>` needs a string on the left"),
                },
                _ => return err(c, format!("`{}` is not a container", r.type_name())),
            };
            found == (op == Cmp::In)
        }
        _ if nan => false,
        Cmp::Lt => order(l, r, c)? == Less,
        Cmp::Le => order(l, r, c)? != Greater,
        Cmp::Gt => order(l, r, c)? == Greater,
        Cmp::Ge => order(l, r, c)? != Less,
    })
}

fn index(v: &PyValue, i: &PyValue, c: usize) -> Result<PyValue, ExprError> {
    let Some(i) = i.as_int() else {
        return err(
            c,
            format!("indices must be integers, not `{}`", i.type_name()),
        );
    };
    let pick = |len: usize| -> Result<usize, ExprError> {
        let j = if i < 0 { i + len as i64 } else { i };
        if j < 0 || j >= len as i64 {
            err(c, format!("index {i} is out of range (length {len})"))
        } else {
            Ok(j as usize)
        }
    };
    match v {
        PyValue::List(items) => Ok(items[pick(items.len())?].clone()),
        PyValue::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            Ok(PyValue::Str(chars[pick(chars.len())?].to_string().into()))
        }
        other => err(c, format!("`{}` cannot be indexed", other.type_name())),
    }
}

fn items_of(args: &[PyValue], c: usize, name: &str) -> Result<Vec<PyValue>, ExprError> {
    match args {
        [PyValue::List(v)] => Ok(v.to_vec()),
        [one] => err(
            c,
            format!("`{name}` of a `{}`: expected a list", one.type_name()),
        ),
        [] => err(c, format!("`{name}` needs arguments")),
        many => Ok(many.to_vec()),
    }
}

fn call(f: Builtin, args: &[PyValue], c: usize) -> Result<PyValue, ExprError> {
    let int_arg = |k: usize| -> Result<i64, ExprError> {
        args.get(k)
            .and_then(PyValue::as_int)
            .ok_or_else(|| ExprError {
                column: c,
                message: "expected an integer argument".into(),
            })
    };
    let arity = |n: std::ops::RangeInclusive<usize>, name: &str| -> Result<(), ExprError> {
        if n.contains(&args.len()) {
            Ok(())
        } else {
            err(
                c,
                format!(
                    "`{name}` takes {} to {} arguments, got {}",
                    n.start(),
                    n.end(),
                    args.len()
                ),
            )
        }
    };
    Ok(match f {
        Builtin::Range => {
            arity(1..=3, "range")?;
            let (start, stop, step) = match args.len() {
                1 => (0, int_arg(0)?, 1),
                2 => (int_arg(0)?, int_arg(1)?, 1),
                _ => (int_arg(0)?, int_arg(1)?, int_arg(2)?),
            };
            if step == 0 {
                return err(c, "`range` step must not be zero");
            }
            let mut out = Vec::new();
            let mut x = start;
            while (step > 0 && x < stop) || (step < 0 && x > stop) {
                out.push(PyValue::Int(x));
                if out.len() > 100_000_000 {
                    return err(c, "`range` is too long");
                }
                x = match x.checked_add(step) {
                    Some(v) => v,
                    None => break,
                };
            }
            PyValue::List(out.into())
        }
        Builtin::Min | Builtin::Max => {
            let name = if f == Builtin::Min { "min" } else { "max" };
            let items = items_of(args, c, name)?;
            let mut best: Option<PyValue> = None;
            for x in items {
                best = Some(match best {
                    None => x,
                    Some(b) => {
                        let o = order(&x, &b, c)?;
                        let better = if f == Builtin::Min {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        };
                        if better {
                            x
                        } else {
                            b
                        }
                    }
                });
            }
            best.ok_or_else(|| err_msg(c, &format!("`{name}` of an empty list")))?
        }
        Builtin::Abs => {
            arity(1..=1, "abs")?;
            match &args[0] {
                PyValue::Float(x) => PyValue::Float(x.abs()),
                v => PyValue::Int(
                    v.as_int()
                        .ok_or_else(|| err_msg(c, "`abs` of a non-number"))?
                        .checked_abs()
                        .ok_or_else(|| overflow(c))?,
                ),
            }
        }
        Builtin::Int => {
            arity(1..=1, "int")?;
            match &args[0] {
                PyValue::Float(x) if x.is_finite() && x.abs() < 9.2e18 => {
                    PyValue::Int(x.trunc() as i64)
                }
                PyValue::Str(s) => PyValue::Int(
                    s.trim()
                        .parse()
                        .map_err(|_| err_msg(c, &format!("invalid literal for int(): '{s}'")))?,
                ),
                v => PyValue::Int(
                    v.as_int()
                        .ok_or_else(|| err_msg(c, "`int` of a non-number"))?,
                ),
            }
        }
        Builtin::Float => {
            arity(1..=1, "float")?;
            match &args[0] {
                PyValue::Str(s) => PyValue::Float(s.trim().parse().map_err(|_| {
                    err_msg(c, &format!("could not convert string to float: '{s}'"))
                })?),
                v => PyValue::Float(
                    v.as_f64()
                        .ok_or_else(|| err_msg(c, "`float` of a non-number"))?,
                ),
            }
        }
        Builtin::Bool => {
            arity(0..=1, "bool")?;
            PyValue::Bool(args.first().is_some_and(PyValue::truthy))
        }
        Builtin::Len => {
            arity(1..=1, "len")?;
            match &args[0] {
                PyValue::List(v) => PyValue::Int(v.len() as i64),
                PyValue::Str(s) => PyValue::Int(s.chars().count() as i64),
                v => return err(c, format!("`{}` has no length", v.type_name())),
            }
        }
        Builtin::Sum => {
            arity(1..=2, "sum")?;
            let PyValue::List(items) = &args[0] else {
                return err(c, "`sum` needs a list");
            };
            let mut acc = args.get(1).cloned().unwrap_or(PyValue::Int(0));
            for x in items.iter() {
                acc = binary(Bin::Add, &acc, x, c)?;
            }
            acc
        }
        Builtin::List => {
            arity(0..=1, "list")?;
            match args.first() {
                None => PyValue::List(Vec::new().into()),
                Some(PyValue::List(v)) => PyValue::List(v.clone()),
                Some(PyValue::Str(s)) => PyValue::List(
                    s.chars()
                        .map(|ch| PyValue::Str(ch.to_string().into()))
                        .collect(),
                ),
                Some(v) => return err(c, format!("`{}` is not iterable", v.type_name())),
            }
        }
        Builtin::Round => {
            arity(1..=2, "round")?;
            let x = args[0]
                .as_f64()
                .ok_or_else(|| err_msg(c, "`round` of a non-number"))?;
            match args.get(1) {
                None => {
                    if let Some(i) = args[0].as_int() {
                        PyValue::Int(i)
                    } else {
                        let r = x.round_ties_even();
                        if !r.is_finite() || r.abs() >= 9.2e18 {
                            return Err(overflow(c));
                        }
                        PyValue::Int(r as i64)
                    }
                }
                Some(n) => {
                    let n = n
                        .as_int()
                        .ok_or_else(|| err_msg(c, "`round` digits must be an integer"))?;
                    let p = 10f64.powi(n.clamp(-300, 300) as i32);
                    let r = (x * p).round_ties_even() / p;
                    if args[0].as_int().is_some() {
                        PyValue::Int(r as i64)
                    } else {
                        PyValue::Float(r)
                    }
                }
            }
        }
        Builtin::Pow => {
            arity(2..=2, "pow")?;
            binary(Bin::Pow, &args[0], &args[1], c)?
        }
    })
}
