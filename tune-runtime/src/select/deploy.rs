//! What ships: the chosen configurations and the decision tree that picks one per input,
//! as data ([`Selector`], kept as JSON beside the tuning database) and as Rust source
//! ([`Selector::rust`]) that `#[tunable(select = "..")]` compiles into its dispatch.
//!
//! The generated source is one expression, `Option<(&str, Self)>` inside the config
//! struct's `impl`: the fingerprint of the declaration it was tuned for, and nested
//! comparisons of the input features (bound by the macro as `f64` locals named after the
//! `input(..)` components) that end in struct literals. No allocation, no lock, no space:
//! a handful of compares and a copy.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::classify::{Node, TreeLimits};
use super::cost::{robust, train_tree_for, Objective};
use super::features::{extend, fit_features, Derived, Tiling};
use super::fit_guard::FitGuard;
use super::fit_shift::FitShift;
use super::matrix::Matrix;
use super::model::{Basis, Models};
use super::set::{self, SetMethod};
use crate::param::Value;
use crate::results::Named;
use crate::{Error, Result};

/// The deployed configurations of a tunable on a device and the tree that picks one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Selector {
    /// The tunable.
    pub tunable: String,
    /// The device it was tuned on.
    pub device: String,
    /// The input's own features, in order (the `input(..)` components).
    pub features: Vec<String>,
    /// Features computed from them, which the tree reads after them (its feature indices
    /// count the own features first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<Derived>,
    /// The deployed configurations.
    pub configs: Vec<Named<Value>>,
    /// The tree; leaves are positions in `configs`.
    pub tree: Node,
    /// How the set was chosen.
    pub method: SetMethod,
    /// The tree's limits.
    pub limits: TreeLimits,
    /// What the tree's splits optimise.
    #[serde(default)]
    pub objective: Objective,
    /// What runs where a feature lies outside the training inputs' range (`None`: the
    /// tree everywhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<Guard>,
    /// Which configurations a shape may run by their tiles' fit, after the tree and the
    /// range guard (`None`: whatever they choose; select9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_guard: Option<FitGuard>,
    /// What the tree's leaves saw of the set's output tiles: a pick on a shape it fits
    /// worse than every training shape of its leaf is re-weighed (`None`: the tree's
    /// pick; select10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_shift: Option<FitShift>,
    /// The training inputs' keys.
    pub trained_on: Vec<String>,
}

/// Where a selector's tree has no data: an input with a feature (own or derived) outside
/// the training inputs' range runs the set's most robust configuration ([`robust`])
/// rather than whatever the tree's outermost leaf holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Guard {
    /// Per feature the tree reads (own, then derived): the least and the largest value
    /// among the training inputs.
    pub ranges: Vec<(f64, f64)>,
    /// The set position run outside them.
    pub choice: usize,
}

impl Guard {
    /// The guard of the set `set` (configuration indices of `m`) fitted on `train`; `m`'s
    /// features are those the tree reads. `None` when no training input has a measured
    /// configuration of the set.
    pub fn fit(m: &Matrix, train: &[usize], set: &[usize]) -> Option<Guard> {
        let choice = robust(m, train, set)?;
        let ranges = (0..m.features.len())
            .map(|f| {
                train
                    .iter()
                    .map(|&i| m.inputs()[i].features.get(f).copied().unwrap_or(0.0))
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                        (lo.min(x), hi.max(x))
                    })
            })
            .collect();
        Some(Guard { ranges, choice })
    }

    /// Whether every feature lies within the training range.
    pub fn inside(&self, features: &[f64]) -> bool {
        self.ranges
            .iter()
            .zip(features)
            .all(|(&(lo, hi), &x)| lo <= x && x <= hi)
    }
}

impl Selector {
    /// Chooses `k` configurations from the training inputs `train` of `m` with `method`
    /// and trains a tree with `limits` to pick among them.
    ///
    /// # Errors
    /// As [`set::choose`] and [`train_tree`](super::classify::train_tree).
    pub fn fit(
        m: &Matrix,
        train: &[usize],
        k: usize,
        method: SetMethod,
        limits: TreeLimits,
    ) -> Result<Selector> {
        Selector::fit_with(m, train, k, (method, limits), &[])
    }

    /// [`Selector::fit`] with a tree that reads the `derived` features too.
    ///
    /// # Errors
    /// As [`Selector::fit`].
    pub fn fit_with(
        m: &Matrix,
        train: &[usize],
        k: usize,
        (method, limits): (SetMethod, TreeLimits),
        derived: &[Derived],
    ) -> Result<Selector> {
        Selector::fit_full(
            m,
            train,
            k,
            (method, limits, Objective::Label, false),
            derived,
        )
    }

    /// [`Selector::fit_with`] with a tree that optimises `objective`, and with `guard`, a
    /// [`Guard`] for inputs outside the training range.
    ///
    /// # Errors
    /// As [`Selector::fit`].
    pub fn fit_full(
        m: &Matrix,
        train: &[usize],
        k: usize,
        recipe: (SetMethod, TreeLimits, Objective, bool),
        derived: &[Derived],
    ) -> Result<Selector> {
        Selector::fit_tiled(m, train, k, recipe, (derived, &[]))
    }

    /// [`Selector::fit_full`] with a tree that also reads how well each distinct tile of
    /// the chosen set fits the input ([`fit_features`] of `tilings`, after `derived`):
    /// features of the candidate configurations, kept in [`Selector::derived`], so that
    /// they compile into the same nested comparisons.
    ///
    /// # Errors
    /// As [`Selector::fit`].
    pub fn fit_tiled(
        m: &Matrix,
        train: &[usize],
        k: usize,
        (method, limits, objective, guard): (SetMethod, TreeLimits, Objective, bool),
        (derived, tilings): (&[Derived], &[Tiling]),
    ) -> Result<Selector> {
        let chosen = set::choose(m, train, k, method)?;
        let mut derived = derived.to_vec();
        let configs: Vec<Named<Value>> = chosen.iter().map(|&c| m.configs()[c].clone()).collect();
        derived.extend(fit_features(tilings, &configs, &m.features));
        let features = m.with_derived(&derived);
        let tree = train_tree_for(&features, train, &chosen, limits, objective)?;
        let guard = if guard {
            Some(Guard::fit(&features, train, &chosen).ok_or_else(|| {
                Error::Select("no training input has a measured configuration of the set".into())
            })?)
        } else {
            None
        };
        Ok(Selector {
            tunable: m.tunable.clone(),
            device: m.device.clone(),
            features: m.features.clone(),
            derived,
            configs,
            tree,
            method,
            limits,
            objective,
            guard,
            fit_guard: None,
            fit_shift: None,
            trained_on: train.iter().map(|&i| m.inputs()[i].key.clone()).collect(),
        })
    }

    /// The configuration for an input with these features (in [`Selector::features`]'
    /// order).
    pub fn choose(&self, features: &[f64]) -> Option<&Named<Value>> {
        let all = extend(features, &self.derived);
        let choice = match &self.guard {
            Some(g) if !g.inside(&all) => g.choice,
            _ => {
                let pick = self.tree.choose(&all);
                match &self.fit_shift {
                    Some(f) => f.apply(self.tree.leaf(&all), pick, features),
                    None => pick,
                }
            }
        };
        let choice = match &self.fit_guard {
            Some(f) => f.apply(choice, features),
            None => choice,
        };
        self.configs.get(choice)
    }

    /// This selector with a [`FitGuard`] of its set, fitted on `train` of `m` (the matrix
    /// it was fitted on, which holds its configurations), each configuration tiled by
    /// the first of `tilings` that fits it.
    ///
    /// # Errors
    /// [`Error::Select`] when `m` lacks a deployed configuration or no training input has
    /// a measured configuration of the set.
    pub fn with_fit_guard(
        mut self,
        m: &Matrix,
        train: &[usize],
        tilings: &[Tiling],
    ) -> Result<Selector> {
        if self.fit_shift.is_some() {
            return Err(Error::Select(
                "a selector has a fit guard or a fit shift, not both".into(),
            ));
        }
        let set = self.positions_in(m)?;
        self.fit_guard = Some(FitGuard::fit(m, train, &set, tilings).ok_or_else(|| {
            Error::Select("no training input has a measured configuration of the set".into())
        })?);
        Ok(self)
    }

    /// The configuration index in `m` of each deployed configuration.
    ///
    /// # Errors
    /// [`Error::Select`] when `m` lacks one.
    pub(super) fn positions_in(&self, m: &Matrix) -> Result<Vec<usize>> {
        self.configs
            .iter()
            .map(|c| {
                m.configs().iter().position(|x| x == c).ok_or_else(|| {
                    Error::Select(format!(
                        "configuration `{c}` is not in the matrix: fit the guard on the matrix the selector was fitted on"
                    ))
                })
            })
            .collect()
    }

    /// [`Selector::rust`] for a declaration whose `input(..)` names `inputs`: the
    /// generated code reads its features as locals of those names, so a feature the
    /// declaration does not name would fail to compile in the user's crate.
    ///
    /// # Errors
    /// [`Error::Select`] naming the first feature of [`Selector::features`] that `inputs`
    /// lacks; as [`Selector::rust`].
    pub fn rust_for(&self, fingerprint: &str, inputs: &[&str]) -> Result<String> {
        if let Some(f) = self.features.iter().find(|f| !inputs.contains(&f.as_str())) {
            return Err(Error::Select(format!(
                "the selector of `{}` reads the feature `{f}`, which the tunable's `input(..)` does not name (it names {}): fit it on a matrix of those features",
                self.tunable,
                inputs.join(", ")
            )));
        }
        self.rust(fingerprint)
    }

    /// Rust source for `#[tunable(select = "path")]`: an expression of type
    /// `Option<(&'static str, Self)>` (see the module docs), with a header that says what
    /// it was generated from. `fingerprint` is the declaration's
    /// (`<XConfig as Tunable>::FINGERPRINT`, as recorded in the tuning database's
    /// entries); the dispatch ignores a selector generated for another declaration.
    ///
    /// # Errors
    /// [`Error::Select`] for a feature that is not a Rust identifier, or a parameter value
    /// a struct literal cannot hold (enum variants).
    pub fn rust(&self, fingerprint: &str) -> Result<String> {
        for f in &self.features {
            ident(f)?;
        }
        for d in &self.derived {
            ident(d.name())?;
        }
        let literals = self
            .configs
            .iter()
            .map(literal)
            .collect::<Result<Vec<String>>>()?;
        let (depth, leaves) = self.tree.shape();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "// @generated by tune (select): do not edit; generate it again after tuning.\n\
             // tunable `{}` on `{}`\n\
             // {} configurations chosen by {} from {} inputs; {}\n\
             // features: {}{}",
            self.tunable,
            self.device,
            self.configs.len(),
            self.method.name(),
            self.trained_on.len(),
            match self.objective {
                Objective::Model(_) => "a model per configuration".to_string(),
                _ => format!(
                    "decision tree {} (depth {depth}, {leaves} leaves)",
                    limits_name(self.limits)
                ),
            },
            self.features.join(", "),
            self.derived
                .iter()
                .map(|d| format!(", {} (derived)", d.name()))
                .collect::<String>(),
        );
        match self.objective {
            Objective::GeoMean => out.push_str("// the tree's splits maximise the geometric mean of the leaves' configurations (cost-sensitive)\n"),
            Objective::Model(b) => {
                let _ = writeln!(
                    out,
                    "// no tree: a {} per configuration of its log share of the best, over the features' log2(1 + x) clamped to the training range; the best predicted runs",
                    b.name()
                );
            }
            Objective::Label => {}
        }
        if let Some(g) = &self.guard {
            let _ = writeln!(
                out,
                "// outside the training inputs' range of any feature: configuration {} (the set's most robust)",
                g.choice
            );
        }
        if let Some(f) = &self.fit_guard {
            let _ = writeln!(
                out,
                "// fit guard: a configuration whose tile's useful share of the padded work is below the best's and at most {:?} of it never runs; then the first allowed of {:?}",
                f.ratio, f.order
            );
        }
        if self.fit_shift.is_some() {
            out.push_str("// fit shift: where the pick's output tile fits the call worse than every training input of its leaf, each configuration weighs its leaf's share by its fit lost\n");
        }
        for (i, c) in self.configs.iter().enumerate() {
            let _ = writeln!(out, "// {i}: {c}");
        }
        // Derived features are closures of a block around the tree, prefixed so that they
        // cannot shadow an argument: a call computes only those its path reads (select10:
        // the GEMM's five, divisions among them, cost more than the tree's comparisons).
        let own: Vec<String> = self.features.iter().map(|f| raw(f)).collect();
        if !self.derived.is_empty() {
            out.push_str("{\n");
            for d in &self.derived {
                let _ = writeln!(
                    out,
                    "    let {} = || -> f64 {{ {} }};",
                    derived_local(d.name()),
                    d.rust(&own)
                );
            }
        }
        let _ = write!(out, "::core::option::Option::Some(({fingerprint:?}, ");
        match &self.fit_guard {
            // One configuration: nothing to exclude.
            Some(f) if literals.len() > 1 => self.emit_fit_guard(f, &literals, &own, &mut out),
            _ => match &self.fit_shift {
                Some(f) if literals.len() > 1 => self.emit_fit_shift(f, &literals, &own, &mut out),
                _ => self.emit_choice(&literals, None, &mut out),
            },
        }
        out.push_str("))\n");
        if !self.derived.is_empty() {
            out.push_str("}\n");
        }
        Ok(out)
    }

    /// The range guard (where there is one) and the tree, ending in `leaves` (struct
    /// literals, or set positions for the fit guard).
    /// With `shift`, each leaf is its [`FitShift::rust_leaf`] (`leaves` are positions).
    fn emit_choice(&self, leaves: &[String], shift: Option<&FitShift>, out: &mut String) {
        let mut leaf = 0;
        if let Some(g) = &self.guard {
            // Outside the training range (or NaN): the set's most robust configuration.
            let within: Vec<String> = g
                .ranges
                .iter()
                .enumerate()
                .map(|(f, (lo, hi))| {
                    let x = self.feature_name(f);
                    format!("({lo:?}..={hi:?}).contains(&{x})")
                })
                .collect();
            let lit = leaves.get(g.choice).map_or("Self", String::as_str);
            let _ = write!(out, "if !({}) {{\n    {lit}\n}} else ", within.join(" && "));
            out.push_str("{\n    ");
            self.emit(&self.tree, (leaves, shift, &mut leaf), 1, out);
            out.push_str("\n}");
        } else {
            self.emit(&self.tree, (leaves, shift, &mut leaf), 0, out);
        }
    }

    /// A block that computes each configuration's tile fit from the own features (`own`:
    /// their locals), lets the tree choose a set position, and runs it or the first
    /// allowed of the guard's order, as [`FitGuard::apply`] does.
    fn emit_fit_guard(&self, f: &FitGuard, literals: &[String], own: &[String], out: &mut String) {
        let n = literals.len();
        out.push_str("{\n");
        for p in 0..n {
            let expr = match f.tiles.get(p) {
                Some(t) if !t.is_empty() => Derived::Fit {
                    name: String::new(),
                    tiles: t.clone(),
                }
                .rust(own),
                _ => "1.0".to_string(),
            };
            let _ = writeln!(out, "    let __tune_f{p}: f64 = {expr};");
        }
        let top = (1..n).fold("__tune_f0".to_string(), |acc, p| {
            format!("{acc}.max(__tune_f{p})")
        });
        let _ = writeln!(out, "    let __tune_top: f64 = {top};");
        let _ = writeln!(
            out,
            "    let __tune_ok = |f: f64| f >= __tune_top || f > {:?} * __tune_top;",
            f.ratio
        );
        let positions: Vec<String> = (0..n).map(|p| format!("{p}usize")).collect();
        out.push_str("    let __tune_pick: usize = ");
        self.emit_choice(&positions, None, out);
        out.push_str(";\n");
        let last = n.saturating_sub(1);
        let arms = |out: &mut String, value: &dyn Fn(usize) -> String| {
            for p in 0..last {
                let _ = writeln!(out, "        {p} => {},", value(p));
            }
            let _ = writeln!(out, "        _ => {},", value(last));
        };
        out.push_str("    let __tune_fit: f64 = match __tune_pick {\n");
        arms(out, &|p| format!("__tune_f{p}"));
        out.push_str("    };\n    let __tune_pick: usize = if __tune_ok(__tune_fit) {\n        __tune_pick\n    }");
        for &p in &f.order {
            let _ = write!(
                out,
                " else if __tune_ok(__tune_f{p}) {{\n        {p}\n    }}"
            );
        }
        out.push_str(" else {\n        __tune_pick\n    };\n    match __tune_pick {\n");
        arms(out, &|p| {
            literals.get(p).cloned().unwrap_or_else(|| "Self".into())
        });
        out.push_str("    }\n}");
    }

    /// A block that binds [`FitShift::rust_prelude`]'s locals, lets the tree choose a
    /// set position (each leaf re-weighing its pick, as [`FitShift::apply`] does) and
    /// runs it.
    fn emit_fit_shift(&self, f: &FitShift, literals: &[String], own: &[String], out: &mut String) {
        out.push_str("{\n");
        f.rust_prelude(own, out);
        let n = literals.len();
        let positions: Vec<String> = (0..n).map(|p| format!("{p}usize")).collect();
        out.push_str("    let __tune_pick: usize = ");
        self.emit_choice(&positions, Some(f), out);
        out.push_str(";\n    match __tune_pick {\n");
        let last = n.saturating_sub(1);
        let lit = |p: usize| literals.get(p).map_or("Self", String::as_str);
        for p in 0..last {
            let _ = writeln!(out, "        {p} => {},", lit(p));
        }
        let _ = writeln!(out, "        _ => {},", lit(last));
        out.push_str("    }\n}");
    }

    /// The local a feature (own, then derived) is bound to in the generated source.
    fn feature_name(&self, feature: usize) -> String {
        match self.features.get(feature) {
            Some(own) => raw(own),
            None => self
                .derived
                .get(feature - self.features.len())
                .map_or("_".into(), |d| derived_value(d.name())),
        }
    }

    /// The tree from `node`, each leaf its literal (or, with a shift, its expression;
    /// `leaf` counts the leaves emitted, in [`Node::leaf`]'s order).
    fn emit(
        &self,
        node: &Node,
        (literals, shift, leaf): (&[String], Option<&FitShift>, &mut usize),
        depth: usize,
        out: &mut String,
    ) {
        let pad = "    ".repeat(depth + 1);
        match node {
            Node::Leaf { choice } => {
                match shift {
                    Some(f) => out.push_str(&f.rust_leaf(*leaf, *choice)),
                    None => out.push_str(literals.get(*choice).map_or("Self", String::as_str)),
                }
                *leaf += 1;
            }
            Node::Models(models) => {
                self.emit_models(models, literals, depth, out);
                *leaf += 1;
            }
            Node::Split {
                feature,
                threshold,
                below,
                above,
            } => {
                let name = self.feature_name(*feature);
                let _ = write!(out, "if {name} <= {threshold:?} {{\n{pad}");
                self.emit(below, (literals, shift, &mut *leaf), depth + 1, out);
                let _ = write!(out, "\n{}}} else {{\n{pad}", &pad[4..]);
                self.emit(above, (literals, shift, &mut *leaf), depth + 1, out);
                let _ = write!(out, "\n{}}}", &pad[4..]);
            }
        }
    }
}

impl Selector {
    /// A block that computes each configuration's predicted share as [`Models::predict`]
    /// does (the same operations in the same order) and runs the first of the best.
    fn emit_models(&self, models: &Models, literals: &[String], depth: usize, out: &mut String) {
        // One configuration: nothing to compare.
        if models.models.len() <= 1 {
            let _ = write!(out, "{}", literals.first().map_or("Self", String::as_str));
            return;
        }
        let pad = "    ".repeat(depth + 1);
        let _ = writeln!(out, "{{");
        for (j, v) in models.variables.iter().enumerate() {
            let x = self.feature_name(v.feature);
            // `max` then `min`, as `Variable::value`: `clamp` would panic on bounds a
            // hand-edited selector got wrong.
            let _ = writeln!(
                out,
                "{pad}#[allow(clippy::manual_clamp)]\n{pad}let __tune_z{j}: f64 = ((1.0 + {x}.max(0.0)).log2().max({:?}).min({:?}) - {:?}) / {:?};",
                v.lo, v.hi, v.mean, v.sd
            );
        }
        let columns: Vec<String> = match models.basis {
            Basis::Linear => (0..models.variables.len())
                .map(|j| format!("__tune_z{j}"))
                .collect(),
            Basis::Quadratic => (0..models.variables.len())
                .map(|j| format!("__tune_z{j}"))
                .chain((0..models.variables.len()).map(|j| format!("(__tune_z{j} * __tune_z{j})")))
                .collect(),
        };
        for (p, l) in models.models.iter().enumerate() {
            let mut sum = format!("{:?}", l.intercept);
            for (w, c) in l.weights.iter().zip(&columns) {
                let _ = write!(sum, " + {w:?} * {c}");
            }
            let _ = writeln!(out, "{pad}let __tune_s{p}: f64 = {sum};");
        }
        let _ = writeln!(
            out,
            "{pad}let mut __tune_best: (usize, f64) = (0, __tune_s0);"
        );
        for p in 1..models.models.len() {
            let _ = writeln!(
                out,
                "{pad}if __tune_s{p} > __tune_best.1 {{ __tune_best = ({p}, __tune_s{p}); }}"
            );
        }
        let _ = writeln!(out, "{pad}match __tune_best.0 {{");
        let last = models.models.len().saturating_sub(1);
        for p in 0..last {
            let lit = literals.get(p).map_or("Self", String::as_str);
            let _ = writeln!(out, "{pad}    {p} => {lit},");
        }
        let lit = literals.get(last).map_or("Self", String::as_str);
        let _ = writeln!(out, "{pad}    _ => {lit},");
        let _ = write!(out, "{pad}}}\n{}}}", &pad[4..]);
    }
}

/// The local closure of a derived feature in the generated source.
fn derived_local(name: &str) -> String {
    format!("__tune_{name}")
}

/// A derived feature's value in the generated source: its closure called.
fn derived_value(name: &str) -> String {
    format!("{}()", derived_local(name))
}

fn limits_name(l: TreeLimits) -> String {
    format!(
        "with depth {} and leaves of at least {} inputs",
        l.max_depth
            .map_or("unlimited".into(), |d| format!("at most {d}")),
        l.min_leaf
    )
}

const KEYWORDS: [&str; 38] = [
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box",
];

/// A name as a Rust identifier (`r#` before keywords).
fn raw(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

fn ident(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !matches!(name, "_" | "self" | "Self" | "super" | "crate");
    if ok {
        Ok(())
    } else {
        Err(Error::Select(format!(
            "`{name}` is no Rust identifier: name the input key's components (and the `#[tp]` arguments) with identifiers to generate a selector"
        )))
    }
}

/// `Self { a: 1, b: true }`.
fn literal(config: &Named<Value>) -> Result<String> {
    let mut fields = Vec::new();
    for (name, v) in &config.0 {
        ident(name)?;
        let value = match v {
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::UInt(u) => u.to_string(),
            Value::Float(x) if x.is_finite() => format!("{x:?}"),
            other => {
                return Err(Error::Select(format!(
                    "parameter `{name}` = `{other}`: the generated selector holds integers, floats and bools only"
                )))
            }
        };
        fields.push(format!("{}: {value}", raw(name)));
    }
    Ok(format!("Self {{ {} }}", fields.join(", ")))
}

#[cfg(test)]
#[path = "deploy_tests.rs"]
mod tests;
