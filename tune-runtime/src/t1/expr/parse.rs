//! Tokens and the recursive-descent parser (Python's grammar, precedence and all).

use super::{err, Bin, Binding, Cmp, Expr, ExprError, Node, PyValue, Resolve, BUILTINS};

// -------------------------------------------------------------------------------------------
// Tokens
// -------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Float(f64),
    Str(String),
    Name(String),
    Op(&'static str),
    End,
}

const OPS: [&str; 31] = [
    "**", "//", "<<", ">>", "<=", ">=", "==", "!=", ":=", "->", "+", "-", "*", "/", "%", "<", ">",
    "(", ")", "[", "]", ",", "&", "|", "^", "~", ":", ".", "{", "}", "=",
];

fn tokenize(src: &str) -> Result<Vec<(Tok, usize)>, ExprError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
                // An exponent's sign belongs to the number.
                if matches!(chars[i - 1], 'e' | 'E')
                    && !text(&chars, start, i).starts_with("0x")
                    && matches!(chars.get(i), Some('+' | '-'))
                {
                    i += 1;
                }
                if chars.get(i) == Some(&'.') {
                    i += 1;
                }
            }
            let t: String = text(&chars, start, i).replace('_', "");
            let tok = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                i64::from_str_radix(h, 16).ok().map(Tok::Int)
            } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
                i64::from_str_radix(b, 2).ok().map(Tok::Int)
            } else if t.contains(['.', 'e', 'E']) {
                t.parse::<f64>().ok().map(Tok::Float)
            } else {
                t.parse::<i64>().ok().map(Tok::Int)
            };
            match tok {
                Some(t) => out.push((t, start)),
                None => return err(start, format!("`{t}` is not a number this reader supports")),
            }
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((Tok::Name(text(&chars, start, i)), start));
            continue;
        }
        if c == '\'' || c == '"' {
            i += 1;
            let mut s = String::new();
            loop {
                match chars.get(i) {
                    None => return err(start, "unterminated string"),
                    Some(&q) if q == c => break,
                    Some('\\') => {
                        let e = chars.get(i + 1).copied().unwrap_or('\\');
                        s.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                        i += 2;
                    }
                    Some(&ch) => {
                        s.push(ch);
                        i += 1;
                    }
                }
            }
            i += 1;
            out.push((Tok::Str(s), start));
            continue;
        }
        let rest = text(&chars, i, (i + 2).min(chars.len()));
        match OPS.iter().find(|op| rest.starts_with(**op)) {
            Some(op) => {
                i += op.chars().count();
                out.push((Tok::Op(op), start));
            }
            None => return err(start, format!("unexpected character `{c}`")),
        }
    }
    out.push((Tok::End, chars.len()));
    Ok(out)
}

fn text(chars: &[char], a: usize, b: usize) -> String {
    chars[a..b].iter().collect()
}

struct Parser<'r> {
    toks: Vec<(Tok, usize)>,
    at: usize,
    resolver: &'r dyn Resolve,
    /// Comprehension variables in scope, innermost last.
    locals: Vec<String>,
    slots: Vec<usize>,
}

/// Parses `src`, binding free names through `resolver`.
///
/// # Errors
/// A syntax error, a construct outside the subset, or an unknown name, with its column.
pub fn parse(src: &str, resolver: &dyn Resolve) -> Result<Expr, ExprError> {
    slots_of(src, resolver).map(|(e, _)| e)
}

/// Parses `src` like [`parse`], and also returns the slots it reads, sorted and without
/// duplicates.
///
/// # Errors
/// As [`parse`].
pub fn slots_of(src: &str, resolver: &dyn Resolve) -> Result<(Expr, Vec<usize>), ExprError> {
    let mut p = Parser {
        toks: tokenize(src)?,
        at: 0,
        resolver,
        locals: Vec::new(),
        slots: Vec::new(),
    };
    let e = p.expr()?;
    if !matches!(p.peek(), Tok::End) {
        return err(
            p.col(),
            format!("unexpected {} after the expression", describe(p.peek())),
        );
    }
    let mut s = p.slots;
    s.sort_unstable();
    s.dedup();
    Ok((e, s))
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Int(i) => format!("number `{i}`"),
        Tok::Float(x) => format!("number `{x}`"),
        Tok::Str(s) => format!("string '{s}'"),
        Tok::Name(n) => format!("`{n}`"),
        Tok::Op(o) => format!("`{o}`"),
        Tok::End => "end of expression".into(),
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.at.min(self.toks.len() - 1)].0
    }
    fn col(&self) -> usize {
        self.toks[self.at.min(self.toks.len() - 1)].1
    }
    fn bump(&mut self) -> (Tok, usize) {
        let t = self.toks[self.at.min(self.toks.len() - 1)].clone();
        self.at += 1;
        t
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }
    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }
    fn expect_op(&mut self, op: &str) -> Result<(), ExprError> {
        if self.is_op(op) {
            self.at += 1;
            Ok(())
        } else {
            err(
                self.col(),
                format!("expected `{op}`, found {}", describe(self.peek())),
            )
        }
    }
    fn mk(node: Node, column: usize) -> Expr {
        Expr { node, column }
    }

    fn expr(&mut self) -> Result<Expr, ExprError> {
        if self.is_kw("lambda") {
            return err(self.col(), "`lambda` is not supported in T1 expressions");
        }
        let col = self.col();
        let then = self.or_test()?;
        if self.is_kw("if") {
            self.at += 1;
            let cond = self.or_test()?;
            if !self.is_kw("else") {
                return err(self.col(), "expected `else` in a conditional expression");
            }
            self.at += 1;
            let other = self.expr()?;
            return Ok(Self::mk(
                Node::IfElse {
                    cond: Box::new(cond),
                    then: Box::new(then),
                    other: Box::new(other),
                },
                col,
            ));
        }
        if self.is_op(":=") {
            return err(
                self.col(),
                "assignment expressions (`:=`) are not supported",
            );
        }
        Ok(then)
    }
    fn or_test(&mut self) -> Result<Expr, ExprError> {
        let mut l = self.and_test()?;
        while self.is_kw("or") {
            let col = self.col();
            self.at += 1;
            let r = self.and_test()?;
            l = Self::mk(Node::Or(Box::new(l), Box::new(r)), col);
        }
        Ok(l)
    }
    fn and_test(&mut self) -> Result<Expr, ExprError> {
        let mut l = self.not_test()?;
        while self.is_kw("and") {
            let col = self.col();
            self.at += 1;
            let r = self.not_test()?;
            l = Self::mk(Node::And(Box::new(l), Box::new(r)), col);
        }
        Ok(l)
    }
    fn not_test(&mut self) -> Result<Expr, ExprError> {
        if self.is_kw("not") {
            let col = self.col();
            self.at += 1;
            let e = self.not_test()?;
            return Ok(Self::mk(Node::Not(Box::new(e)), col));
        }
        self.comparison()
    }
    fn comp_op(&mut self) -> Result<Option<Cmp>, ExprError> {
        let op = match self.peek() {
            Tok::Op("<") => Cmp::Lt,
            Tok::Op("<=") => Cmp::Le,
            Tok::Op(">") => Cmp::Gt,
            Tok::Op(">=") => Cmp::Ge,
            Tok::Op("==") => Cmp::Eq,
            Tok::Op("!=") => Cmp::Ne,
            Tok::Name(n) if n == "in" => Cmp::In,
            Tok::Name(n) if n == "not" => {
                if matches!(self.toks.get(self.at + 1), Some((Tok::Name(m), _)) if m == "in") {
                    self.at += 1;
                    Cmp::NotIn
                } else {
                    return Ok(None);
                }
            }
            Tok::Name(n) if n == "is" => {
                return err(
                    self.col(),
                    "`is` is not supported; compare values with `==` or `!=`",
                )
            }
            _ => return Ok(None),
        };
        self.at += 1;
        Ok(Some(op))
    }
    fn comparison(&mut self) -> Result<Expr, ExprError> {
        let col = self.col();
        let first = self.bitor()?;
        let mut rest = Vec::new();
        while let Some(op) = self.comp_op()? {
            rest.push((op, self.bitor()?));
        }
        if rest.is_empty() {
            Ok(first)
        } else {
            Ok(Self::mk(Node::Compare(Box::new(first), rest), col))
        }
    }
    fn binary_level(
        &mut self,
        ops: &[(&str, Bin)],
        next: fn(&mut Self) -> Result<Expr, ExprError>,
    ) -> Result<Expr, ExprError> {
        let mut l = next(self)?;
        'outer: loop {
            for &(s, b) in ops {
                if self.is_op(s) {
                    let col = self.col();
                    self.at += 1;
                    let r = next(self)?;
                    l = Self::mk(Node::Bin(b, Box::new(l), Box::new(r)), col);
                    continue 'outer;
                }
            }
            return Ok(l);
        }
    }
    fn bitor(&mut self) -> Result<Expr, ExprError> {
        self.binary_level(&[("|", Bin::BitOr)], Self::bitxor)
    }
    fn bitxor(&mut self) -> Result<Expr, ExprError> {
        self.binary_level(&[("^", Bin::BitXor)], Self::bitand)
    }
    fn bitand(&mut self) -> Result<Expr, ExprError> {
        self.binary_level(&[("&", Bin::BitAnd)], Self::shift)
    }
    fn shift(&mut self) -> Result<Expr, ExprError> {
        self.binary_level(&[("<<", Bin::Shl), (">>", Bin::Shr)], Self::arith)
    }
    fn arith(&mut self) -> Result<Expr, ExprError> {
        self.binary_level(&[("+", Bin::Add), ("-", Bin::Sub)], Self::term)
    }
    fn term(&mut self) -> Result<Expr, ExprError> {
        self.binary_level(
            &[
                ("*", Bin::Mul),
                ("//", Bin::FloorDiv),
                ("/", Bin::Div),
                ("%", Bin::Mod),
            ],
            Self::factor,
        )
    }
    fn factor(&mut self) -> Result<Expr, ExprError> {
        let col = self.col();
        let wrap: fn(Box<Expr>) -> Node = match self.peek() {
            Tok::Op("-") => Node::Neg,
            Tok::Op("+") => Node::Pos,
            Tok::Op("~") => Node::Invert,
            _ => return self.power(),
        };
        self.at += 1;
        let e = self.factor()?;
        Ok(Self::mk(wrap(Box::new(e)), col))
    }
    fn power(&mut self) -> Result<Expr, ExprError> {
        let base = self.primary()?;
        if self.is_op("**") {
            let col = self.col();
            self.at += 1;
            // Right-associative, and binds tighter than a unary minus on its left only.
            let exp = self.factor()?;
            return Ok(Self::mk(
                Node::Bin(Bin::Pow, Box::new(base), Box::new(exp)),
                col,
            ));
        }
        Ok(base)
    }
    fn primary(&mut self) -> Result<Expr, ExprError> {
        let mut e = self.atom()?;
        loop {
            if self.is_op("[") {
                let col = self.col();
                self.at += 1;
                if self.is_op(":") {
                    return err(self.col(), "slices are not supported; index one element");
                }
                let i = self.expr()?;
                if self.is_op(":") {
                    return err(self.col(), "slices are not supported; index one element");
                }
                self.expect_op("]")?;
                e = Self::mk(Node::Index(Box::new(e), Box::new(i)), col);
            } else if self.is_op("(") {
                return err(
                    self.col(),
                    "only the built-in functions can be called (range, min, max, abs, int, float, bool, len, sum, list, tuple, round, pow)",
                );
            } else if self.is_op(".") {
                return err(
                    self.col(),
                    "attribute access (`.`) is not supported; the built-in functions need no module",
                );
            } else {
                return Ok(e);
            }
        }
    }
    fn atom(&mut self) -> Result<Expr, ExprError> {
        let (tok, col) = self.bump();
        match tok {
            Tok::Int(i) => Ok(Self::mk(Node::Const(PyValue::Int(i)), col)),
            Tok::Float(x) => Ok(Self::mk(Node::Const(PyValue::Float(x)), col)),
            Tok::Str(s) => {
                // Adjacent string literals concatenate.
                let mut s = s;
                while let Tok::Str(t) = self.peek().clone() {
                    s.push_str(&t);
                    self.at += 1;
                }
                Ok(Self::mk(Node::Const(PyValue::Str(s.into())), col))
            }
            Tok::Name(n) => self.name(n, col),
            Tok::Op("(") => {
                if self.is_op(")") {
                    self.at += 1;
                    return Ok(Self::mk(Node::List(Vec::new()), col));
                }
                if !self.loop_vars().is_empty() {
                    return err(
                        self.col(),
                        "generator expressions are not supported; use a list comprehension `[..]`",
                    );
                }
                let first = self.expr()?;
                if self.is_kw("for") {
                    return err(
                        self.col(),
                        "generator expressions are not supported; use a list comprehension `[..]`",
                    );
                }
                if self.is_op(")") {
                    self.at += 1;
                    return Ok(first);
                }
                let items = self.rest_of_list(first, ")")?;
                Ok(Self::mk(Node::List(items), col))
            }
            Tok::Op("[") => {
                if self.is_op("]") {
                    self.at += 1;
                    return Ok(Self::mk(Node::List(Vec::new()), col));
                }
                let vars = self.loop_vars();
                if !vars.is_empty() {
                    return self.comprehension(vars, col);
                }
                let first = self.expr()?;
                let items = self.rest_of_list(first, "]")?;
                Ok(Self::mk(Node::List(items), col))
            }
            Tok::Op("{") => err(col, "sets and dictionaries are not supported; use a list"),
            Tok::Op(o) => err(col, format!("unexpected `{o}`")),
            Tok::End => err(col, "the expression ends too early"),
        }
    }
    /// After the first item of a list or tuple: `, item ...` then `close`.
    fn rest_of_list(&mut self, first: Expr, close: &str) -> Result<Vec<Expr>, ExprError> {
        let mut items = vec![first];
        while self.is_op(",") {
            self.at += 1;
            if self.is_op(close) {
                break;
            }
            items.push(self.expr()?);
        }
        self.expect_op(close)?;
        Ok(items)
    }
    /// The loop variables of a list comprehension starting at the current token (just after
    /// its `[`), or none if the brackets hold a plain list.
    fn loop_vars(&self) -> Vec<String> {
        let mut depth = 0usize;
        let mut out = Vec::new();
        for k in self.at..self.toks.len() {
            match &self.toks[k].0 {
                Tok::Op("(" | "[" | "{") => depth += 1,
                Tok::Op(")" | "]" | "}") if depth == 0 => break,
                Tok::Op(")" | "]" | "}") => depth -= 1,
                Tok::Name(n) if n == "for" && depth == 0 => {
                    if let Some((Tok::Name(v), _)) = self.toks.get(k + 1) {
                        out.push(v.clone());
                    }
                }
                Tok::End => break,
                _ => {}
            }
        }
        out
    }
    /// `[elem for v0 in it0 if c .. for v1 in it1 ..]`: the element sees every loop variable,
    /// each iterable and condition the variables of its own and earlier clauses.
    fn comprehension(&mut self, vars: Vec<String>, col: usize) -> Result<Expr, ExprError> {
        let depth0 = self.locals.len();
        self.locals.extend(vars.iter().cloned());
        let elem = self.expr()?;
        self.locals.truncate(depth0);
        let mut clauses = Vec::new();
        while self.is_kw("for") {
            self.at += 1;
            let (tok, vcol) = self.bump();
            let Tok::Name(var) = tok else {
                return err(vcol, "expected a loop variable name after `for`");
            };
            if self.is_op(",") {
                return err(
                    self.col(),
                    "unpacking several loop variables is not supported",
                );
            }
            if !self.is_kw("in") {
                return err(self.col(), "expected `in` after the loop variable");
            }
            self.at += 1;
            let iter = self.or_test()?;
            self.locals.push(var);
            let mut conds = Vec::new();
            while self.is_kw("if") {
                self.at += 1;
                conds.push(self.or_test()?);
            }
            clauses.push((iter, conds));
        }
        self.locals.truncate(depth0);
        self.expect_op("]")?;
        Ok(Self::mk(
            Node::Comprehension {
                elem: Box::new(elem),
                clauses,
            },
            col,
        ))
    }
    fn name(&mut self, n: String, col: usize) -> Result<Expr, ExprError> {
        match n.as_str() {
            "True" => return Ok(Self::mk(Node::Const(PyValue::Bool(true)), col)),
            "False" => return Ok(Self::mk(Node::Const(PyValue::Bool(false)), col)),
            "None" => return Ok(Self::mk(Node::Const(PyValue::None), col)),
            "lambda" | "yield" | "await" => {
                return err(col, format!("`{n}` is not supported in T1 expressions"))
            }
            _ => {}
        }
        if self.is_op("(") {
            let Some(&(_, f)) = BUILTINS.iter().find(|(name, _)| *name == n) else {
                return err(
                    col,
                    format!("unknown function `{n}`; supported: range, min, max, abs, int, float, bool, len, sum, list, tuple, round, pow"),
                );
            };
            self.at += 1;
            if !self.loop_vars().is_empty() {
                return err(
                    self.col(),
                    "generator expressions are not supported; use a list comprehension `[..]`",
                );
            }
            let mut args = Vec::new();
            while !self.is_op(")") {
                if matches!(self.peek(), Tok::Name(_))
                    && matches!(self.toks.get(self.at + 1), Some((Tok::Op("="), _)))
                {
                    return err(self.col(), "keyword arguments are not supported");
                }
                if self.is_op("*") {
                    return err(self.col(), "argument unpacking (`*`) is not supported");
                }
                let a = self.expr()?;
                if self.is_kw("for") {
                    return err(
                        self.col(),
                        "generator expressions are not supported; use a list comprehension `[..]`",
                    );
                }
                args.push(a);
                if !self.is_op(")") {
                    self.expect_op(",")?;
                }
            }
            self.at += 1;
            return Ok(Self::mk(Node::Call(f, args), col));
        }
        if self.is_op(".") {
            let attr = match self.toks.get(self.at + 1) {
                Some((Tok::Name(a), _)) => format!("{n}.{a}"),
                _ => n.clone(),
            };
            return err(
                col,
                format!("attribute access (`{attr}`) is not supported; the built-in functions need no module"),
            );
        }
        if let Some(depth) = self.locals.iter().rposition(|l| *l == n) {
            return Ok(Self::mk(Node::Local(depth), col));
        }
        match self.resolver.resolve(&n) {
            Some(Binding::Slot(s)) => {
                self.slots.push(s);
                Ok(Self::mk(Node::Var(s), col))
            }
            Some(Binding::Value(v)) => Ok(Self::mk(Node::Const(v), col)),
            None => err(
                col,
                format!("unknown name `{n}`; known names: {}", self.resolver.known()),
            ),
        }
    }
}
