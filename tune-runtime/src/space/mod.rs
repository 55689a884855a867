//! The constrained search space: exact count, index <-> configuration, uniform sampling,
//! neighbours and iteration, without ever materialising the Cartesian product.
//!
//! A space is the product of independent groups of parameters. Each group is a tree of valid
//! prefixes stored as flat per-level arrays (see `tree`); a configuration's index is a mixed
//! radix number over the groups' local indices.

mod builder;
mod candidates;
mod diagnose;
mod grow;
mod memo;
mod plan;
mod tree;

use std::fmt;
use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Serialize};

pub use builder::{SpaceBuilder, DEFAULT_MEMORY_LIMIT};
use tree::Level;

use crate::param::{Domain, Kind, ParamType, Value};
use crate::{Error, Result};

/// A parameter as the space knows it: name, type and candidate values.
#[derive(Clone)]
pub struct ParamInfo {
    name: String,
    kind: Kind,
    type_name: &'static str,
    pub(crate) domain: Domain,
    default: Option<u64>,
    pub(crate) to_i128: fn(u64) -> i128,
    to_value: fn(u64) -> Value,
    from_value: fn(&Value) -> Option<u64>,
}

impl fmt::Debug for ParamInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParamInfo")
            .field("name", &self.name)
            .field("type", &self.type_name)
            .field("values", &self.domain.len())
            .finish()
    }
}

impl ParamInfo {
    pub(crate) fn new<T: ParamType>(name: String, domain: Domain, default: Option<u64>) -> Self {
        let to_i128: fn(u64) -> i128 = match T::KIND {
            Kind::Int => |r| r as i64 as i128,
            _ => |r| r as i128,
        };
        ParamInfo {
            name,
            kind: T::KIND,
            type_name: std::any::type_name::<T>(),
            domain,
            default,
            to_i128,
            to_value: |r| T::from_raw(r).to_value(),
            from_value: |v| T::from_value(v).map(T::to_raw),
        }
    }
    /// The parameter's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// What kind of values it takes.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// Its Rust type, as written by the compiler.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
    /// Number of candidate values before constraints.
    pub fn domain_len(&self) -> u64 {
        self.domain.len()
    }
    /// Candidate value `i` (before constraints), erased.
    pub fn domain_value(&self, i: u64) -> Option<Value> {
        (i < self.domain.len()).then(|| (self.to_value)(self.domain.raw(i as u32)))
    }
    /// The declared default, if any.
    pub fn default_value(&self) -> Option<Value> {
        self.default.map(self.to_value)
    }
    /// The erased form of a raw word of this parameter.
    pub fn value_of_raw(&self, raw: u64) -> Value {
        (self.to_value)(raw)
    }
    /// The raw word of an erased value, if it has this parameter's type.
    pub fn raw_of_value(&self, v: &Value) -> Option<u64> {
        (self.from_value)(v)
    }
    /// Position of a raw value among the candidate values.
    pub(crate) fn domain_index(&self, raw: u64) -> Option<u32> {
        match &self.domain {
            &Domain::Ints { lo, step, len } => {
                let v = (self.to_i128)(raw);
                let off = v - lo;
                (off >= 0 && off % step == 0 && off / step < len as i128)
                    .then(|| (off / step) as u32)
            }
            Domain::Set(s) => s.iter().position(|&x| x == raw).map(|i| i as u32),
        }
    }
}

/// One configuration: a value for every parameter, as raw words in declaration order.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Config(Box<[u64]>);

impl Config {
    /// A configuration from raw words (see [`ParamType::to_raw`]), in declaration order.
    pub fn from_raw(raw: impl Into<Box<[u64]>>) -> Self {
        Config(raw.into())
    }
    /// The value of parameter `slot`, typed with its declared type.
    #[inline]
    pub fn get<T: ParamType>(&self, slot: usize) -> T {
        T::from_raw(self.0.get(slot).copied().unwrap_or(0))
    }
    /// The raw words.
    pub fn raw(&self) -> &[u64] {
        &self.0
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

/// Which neighbours of a configuration to list (always one parameter changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Neighbourhood {
    /// For each parameter, the nearest valid value below and above the current one.
    Adjacent,
    /// For each parameter, every other valid value.
    Any,
}

pub(crate) struct Group {
    /// Slots of the group's parameters, in build order (one per level).
    pub(crate) slots: Vec<usize>,
    /// Empty for a free parameter (no constraints): its local index is its domain index.
    pub(crate) levels: Vec<Level>,
    pub(crate) free_len: u64,
}

impl Group {
    fn count(&self) -> u64 {
        match self.levels.last() {
            Some(l) => l.vals.len() as u64,
            None => self.free_len,
        }
    }
    fn bytes(&self) -> usize {
        self.levels
            .iter()
            .map(|l| l.vals.bytes() + l.starts.as_ref().map_or(0, |s| s.bytes()))
            .sum()
    }
    /// Writes the raw values of local configuration `local` into `raw`.
    fn fill(&self, params: &[ParamInfo], local: u64, raw: &mut [u64]) {
        if self.levels.is_empty() {
            let s = self.slots[0];
            raw[s] = params[s].domain.raw(local as u32);
            return;
        }
        let mut pos = local as usize;
        for l in (0..self.levels.len()).rev() {
            let s = self.slots[l];
            raw[s] = params[s].domain.raw(self.levels[l].vals.get(pos));
            if l > 0 {
                if let Some(st) = &self.levels[l - 1].starts {
                    pos = st.parent_of(pos as u64);
                }
            }
        }
    }
    /// Node positions, level by level, of the configuration with these domain indices.
    fn path_of(&self, dom: &[u32]) -> Option<Vec<usize>> {
        let mut path = Vec::with_capacity(self.levels.len());
        let (mut a, mut b) = (0, self.levels.first()?.vals.len());
        for (l, level) in self.levels.iter().enumerate() {
            let p = level.vals.find(a, b, dom[l])?;
            path.push(p);
            (a, b) = level.children(p);
        }
        Some(path)
    }
    /// Position of the leaf reached from node `pos` on level `l` by following `dom` below.
    fn descend(&self, l: usize, pos: usize, dom: &[u32]) -> Option<usize> {
        let mut p = pos;
        for (m, pair) in self.levels.windows(2).enumerate().skip(l) {
            let (a, b) = pair[0].children(p);
            p = pair[1].vals.find(a, b, dom[m + 1])?;
        }
        Some(p)
    }
    fn domain_indices(&self, params: &[ParamInfo], raw: &[u64]) -> Option<Vec<u32>> {
        self.slots
            .iter()
            .map(|&s| params[s].domain_index(raw[s]))
            .collect()
    }
    fn local_index(&self, params: &[ParamInfo], raw: &[u64]) -> Option<u64> {
        let dom = self.domain_indices(params, raw)?;
        if self.levels.is_empty() {
            return Some(dom[0] as u64);
        }
        self.path_of(&dom).and_then(|p| p.last().map(|&x| x as u64))
    }
    /// Local indices of the neighbours of `local`.
    fn neighbours(
        &self,
        params: &[ParamInfo],
        raw: &[u64],
        hood: Neighbourhood,
        out: &mut Vec<(usize, u64)>,
    ) {
        let Some(dom) = self.domain_indices(params, raw) else {
            return;
        };
        if self.levels.is_empty() {
            let (cur, len) = (dom[0] as u64, self.free_len);
            match hood {
                Neighbourhood::Adjacent => {
                    if cur > 0 {
                        out.push((self.slots[0], cur - 1));
                    }
                    if cur + 1 < len {
                        out.push((self.slots[0], cur + 1));
                    }
                }
                Neighbourhood::Any => {
                    out.extend((0..len).filter(|&i| i != cur).map(|i| (self.slots[0], i)))
                }
            }
            return;
        }
        let Some(path) = self.path_of(&dom) else {
            return;
        };
        for (l, &here) in path.iter().enumerate() {
            let (a, b) = if l == 0 {
                (0, self.levels[0].vals.len())
            } else {
                self.levels[l - 1].children(path[l - 1])
            };
            let slot = self.slots[l];
            match hood {
                Neighbourhood::Any => {
                    for p in (a..b).filter(|&p| p != here) {
                        if let Some(leaf) = self.descend(l, p, &dom) {
                            out.push((slot, leaf as u64));
                        }
                    }
                }
                Neighbourhood::Adjacent => {
                    if let Some(leaf) = (a..here).rev().find_map(|p| self.descend(l, p, &dom)) {
                        out.push((slot, leaf as u64));
                    }
                    if let Some(leaf) = (here + 1..b).find_map(|p| self.descend(l, p, &dom)) {
                        out.push((slot, leaf as u64));
                    }
                }
            }
        }
    }
}

/// A constrained search space. Cheap to clone.
#[derive(Clone)]
pub struct Space {
    inner: Arc<Inner>,
}

struct Inner {
    params: Arc<[ParamInfo]>,
    groups: Vec<Group>,
    counts: Vec<u128>,
    /// Index weight of each group (product of the counts of the groups after it).
    strides: Vec<u128>,
    len: u128,
}

impl fmt::Debug for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Space")
            .field(
                "params",
                &self
                    .inner
                    .params
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>(),
            )
            .field("groups", &self.group_sizes())
            .field("len", &self.inner.len)
            .finish()
    }
}

impl Space {
    fn from_groups(params: Arc<[ParamInfo]>, groups: Vec<Group>) -> Result<Space> {
        let counts: Vec<u128> = groups.iter().map(|g| g.count() as u128).collect();
        let mut strides = vec![1u128; groups.len()];
        let mut acc: u128 = 1;
        for g in (0..groups.len()).rev() {
            strides[g] = acc;
            acc = acc
                .checked_mul(counts[g])
                .ok_or(Error::TooManyConfigurations)?;
        }
        let len = if groups.is_empty() { 1 } else { acc };
        Ok(Space {
            inner: Arc::new(Inner {
                params,
                groups,
                counts,
                strides,
                len,
            }),
        })
    }

    /// The number of valid configurations. A space without parameters has one (empty) one.
    pub fn len(&self) -> u128 {
        self.inner.len
    }
    /// Whether no configuration is valid.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }
    /// The parameters, in declaration order (slot order).
    pub fn params(&self) -> &[ParamInfo] {
        &self.inner.params
    }
    /// The slot of the parameter called `name`.
    ///
    /// # Errors
    /// [`Error::UnknownParam`] listing the declared names.
    pub fn slot(&self, name: &str) -> Result<usize> {
        self.params()
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| Error::UnknownParam {
                name: name.into(),
                known: self
                    .params()
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
    /// The independent groups: each group's parameter names and its number of valid
    /// combinations.
    pub fn groups(&self) -> Vec<(Vec<&str>, u128)> {
        self.inner
            .groups
            .iter()
            .zip(&self.inner.counts)
            .map(|(g, &c)| {
                (
                    g.slots
                        .iter()
                        .map(|&s| self.inner.params[s].name.as_str())
                        .collect(),
                    c,
                )
            })
            .collect()
    }
    fn group_sizes(&self) -> Vec<u128> {
        self.inner.counts.clone()
    }
    /// Bytes used by the stored trees.
    pub fn memory_bytes(&self) -> usize {
        self.inner.groups.iter().map(Group::bytes).sum()
    }

    /// The configuration at `index` (`0..len()`), in O(depth log n).
    pub fn get(&self, index: u128) -> Option<Config> {
        if index >= self.inner.len {
            return None;
        }
        let mut raw = vec![0u64; self.inner.params.len()];
        for (g, group) in self.inner.groups.iter().enumerate() {
            let local = (index / self.inner.strides[g]) % self.inner.counts[g];
            group.fill(&self.inner.params, local as u64, &mut raw);
        }
        Some(Config(raw.into()))
    }

    /// The index of a configuration, or `None` if it is not valid.
    pub fn index_of(&self, config: &Config) -> Option<u128> {
        if config.0.len() != self.inner.params.len() {
            return None;
        }
        let mut index = 0u128;
        for (g, group) in self.inner.groups.iter().enumerate() {
            let local = group.local_index(&self.inner.params, &config.0)?;
            index += local as u128 * self.inner.strides[g];
        }
        Some(index)
    }

    /// Whether a configuration satisfies every constraint.
    pub fn contains(&self, config: &Config) -> bool {
        self.index_of(config).is_some()
    }

    /// A uniformly random index, or `None` if the space is empty.
    pub fn sample_index<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<u128> {
        (self.inner.len > 0).then(|| rng.random_range(0..self.inner.len))
    }

    /// A uniformly random configuration, or `None` if the space is empty.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<Config> {
        self.sample_index(rng).and_then(|i| self.get(i))
    }

    /// The valid configurations that differ from `config` in exactly one parameter, as
    /// indices. Empty if `config` is not valid.
    pub fn neighbour_indices(&self, config: &Config, hood: Neighbourhood) -> Vec<u128> {
        let Some(index) = self.index_of(config) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut local = Vec::new();
        for (g, group) in self.inner.groups.iter().enumerate() {
            local.clear();
            group.neighbours(&self.inner.params, &config.0, hood, &mut local);
            let stride = self.inner.strides[g];
            let mine = (index / stride) % self.inner.counts[g];
            let base = index - mine * stride;
            out.extend(local.iter().map(|&(_, l)| base + l as u128 * stride));
        }
        out
    }

    /// The valid configurations that differ from `config` in exactly one parameter.
    pub fn neighbours(&self, config: &Config, hood: Neighbourhood) -> Vec<Config> {
        self.neighbour_indices(config, hood)
            .into_iter()
            .filter_map(|i| self.get(i))
            .collect()
    }

    /// Every configuration in index order.
    pub fn iter(&self) -> impl Iterator<Item = Config> + '_ {
        (0..self.inner.len).filter_map(move |i| self.get(i))
    }

    /// The named, erased values of a configuration.
    pub fn values(&self, config: &Config) -> Vec<(&str, Value)> {
        self.params()
            .iter()
            .zip(config.0.iter())
            .map(|(p, &r)| (p.name.as_str(), (p.to_value)(r)))
            .collect()
    }

    /// A configuration from named values (every parameter must be given).
    ///
    /// # Errors
    /// Unknown or missing names, values of the wrong type, or a configuration that breaks a
    /// constraint.
    pub fn config_from_values<'a>(
        &self,
        values: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> Result<Config> {
        let mut raw: Vec<Option<u64>> = vec![None; self.params().len()];
        for (name, v) in values {
            let slot = self.slot(name)?;
            let p = &self.params()[slot];
            raw[slot] = Some((p.from_value)(&v).ok_or_else(|| Error::WrongType {
                name: name.into(),
                value: v.to_string(),
                expected: p.type_name.into(),
            })?);
        }
        let raw: Vec<u64> = raw
            .into_iter()
            .zip(self.params())
            .map(|(r, p)| {
                r.ok_or_else(|| Error::MissingValue {
                    param: p.name.clone(),
                })
            })
            .collect::<Result<_>>()?;
        let config = Config(raw.into());
        if self.contains(&config) {
            Ok(config)
        } else {
            Err(Error::NotInSpace(self.describe(&config)))
        }
    }

    /// `NAME=value NAME=value ...`, for messages and logs.
    pub fn describe(&self, config: &Config) -> String {
        self.values(config)
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The configuration made of every parameter's declared default, if all have one and it
    /// is valid.
    pub fn default_config(&self) -> Option<Config> {
        let raw: Option<Vec<u64>> = self.params().iter().map(|p| p.default).collect();
        let config = Config(raw?.into());
        self.contains(&config).then_some(config)
    }
}

impl Space {
    #[doc(hidden)]
    pub fn __level_sizes(&self) -> Vec<Vec<usize>> {
        self.inner
            .groups
            .iter()
            .map(|g| g.levels.iter().map(|l| l.vals.len()).collect())
            .collect()
    }
}
impl Space {
    #[doc(hidden)]
    pub fn __build_order(&self) -> Vec<Vec<&str>> {
        self.inner
            .groups
            .iter()
            .map(|g| {
                g.slots
                    .iter()
                    .map(|&s| self.inner.params[s].name.as_str())
                    .collect()
            })
            .collect()
    }
}
