//! Fingerprints: what a recorded result was tuned for, so that a changed kernel or space
//! turns the old best into a miss instead of an exact match.
//!
//! A [`Fingerprint`] has three parts, stored with every database entry:
//! - `code`: what the results depend on besides the space, if the caller said (the
//!   `#[tunable]` function's declaration, hashed at compile time; a kernel's source and
//!   defines through [`of`]; any version tag the user chooses);
//! - `space`: the space's parameters (names, kinds, candidate values, defaults) and its
//!   number of valid configurations (which reflects the constraints);
//! - `tune`: the version of tune that recorded it.
//!
//! Hashes are 64-bit FNV-1a, written as 16 hex digits: stable across Rust releases and
//! platforms (unlike `DefaultHasher`), and plenty to notice a change (they are not meant to
//! resist a deliberate collision).

use std::fmt::{self, Write as _};
use std::hash::Hasher;

use fnv::FnvHasher;
use serde::{Deserialize, Serialize};

use crate::param::{Domain, Kind};
use crate::space::Space;

/// The version of tune, as recorded in fingerprints.
pub const TUNE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A code fingerprint made of texts (e.g. a kernel's source and its defines): the stable
/// hash of each part, in order, as 16 hex digits. Pass it to
/// [`Tuner::fingerprint`](crate::tuner::Tuner::fingerprint) when tuning and to
/// [`Database::choose_with_code`](super::Database::choose_with_code) when dispatching.
pub fn of<I, P>(parts: I) -> String
where
    I: IntoIterator<Item = P>,
    P: AsRef<[u8]>,
{
    let mut h = FnvHasher::default();
    for p in parts {
        let p = p.as_ref();
        // The length first, so that ["ab", "c"] and ["a", "bc"] differ.
        h.write(&(p.len() as u64).to_le_bytes());
        h.write(p);
    }
    hex(h.finish())
}

fn hex(x: u64) -> String {
    format!("{x:016x}")
}

/// What a recorded entry was tuned for. See the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The code fingerprint the tuner was given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The hash of the space ([`space_hash`]).
    pub space: String,
    /// The version of tune that recorded the entry.
    pub tune: String,
}

impl Fingerprint {
    /// The fingerprint of results tuned now over `space`, with the code fingerprint `code`
    /// if the caller knows one.
    pub fn new(space: &Space, code: Option<&str>) -> Self {
        Fingerprint {
            code: code.map(str::to_string),
            space: space_hash(space),
            tune: TUNE_VERSION.to_string(),
        }
    }
}

/// Why a recorded entry was passed over.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StaleReason {
    /// Recorded without a fingerprint (by a tune older than fingerprints).
    NoFingerprint,
    /// Recorded by another version of tune.
    TuneVersion {
        /// The version that recorded it.
        recorded: String,
    },
    /// The code changed (the `#[tunable]` declaration, or the code fingerprint given to the
    /// tuner).
    Code,
    /// The search space changed (parameters, values or constraints).
    Space,
}

impl fmt::Display for StaleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StaleReason::NoFingerprint => {
                f.write_str("it was recorded without a fingerprint, by an older tune")
            }
            StaleReason::TuneVersion { recorded } => write!(
                f,
                "it was recorded by tune {recorded}, and this is tune {TUNE_VERSION}"
            ),
            StaleReason::Code => f.write_str("the code it was tuned for has changed since"),
            StaleReason::Space => f.write_str("the search space has changed since"),
        }
    }
}

/// A recorded result that [`Database::choose`](super::Database::choose) passed over because
/// it was tuned for something else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stale {
    /// The input key of the entry passed over.
    pub input_key: String,
    /// Why.
    pub reason: StaleReason,
}

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the result recorded for input `{}` was not used: {}; tune again to record a current one",
            self.input_key, self.reason
        )
    }
}

/// What recorded entries must match: computed once per lookup, the space's hash only when
/// an entry asks for it.
pub(crate) struct Expected<'a> {
    pub(crate) code: Option<&'a str>,
    pub(crate) space: &'a Space,
    space_hash: std::cell::OnceCell<String>,
}

impl<'a> Expected<'a> {
    pub(crate) fn new(space: &'a Space, code: Option<&'a str>) -> Self {
        Expected {
            code,
            space,
            space_hash: std::cell::OnceCell::new(),
        }
    }

    /// Whether an entry recorded with `recorded` was tuned for the same code and tune
    /// version (what any use of it needs; the space may differ between input keys).
    pub(crate) fn same_code(&self, recorded: Option<&Fingerprint>) -> Result<(), StaleReason> {
        let Some(r) = recorded else {
            return Err(StaleReason::NoFingerprint);
        };
        if r.tune != TUNE_VERSION {
            return Err(StaleReason::TuneVersion {
                recorded: r.tune.clone(),
            });
        }
        // A caller that does not know the code cannot check it.
        match self.code {
            Some(c) if r.code.as_deref() != Some(c) => Err(StaleReason::Code),
            _ => Ok(()),
        }
    }

    /// Whether an entry is valid as an exact match: same code, version and space.
    pub(crate) fn exact(&self, recorded: Option<&Fingerprint>) -> Result<(), StaleReason> {
        self.same_code(recorded)?;
        let here = self.space_hash.get_or_init(|| space_hash(self.space));
        match recorded {
            Some(r) if r.space == *here => Ok(()),
            _ => Err(StaleReason::Space),
        }
    }
}

/// The stable hash of a space: every parameter's name, kind, candidate values (an integer
/// range by its bounds and step, a list value by value) and default, and the number of valid
/// configurations. It costs one pass over the lists of values (no allocation), done by a
/// lookup only when an entry for the exact input key exists.
pub fn space_hash(space: &Space) -> String {
    let mut h = HashWriter(FnvHasher::default());
    // A format tag, so that a change of what is hashed is a change of every hash.
    h.0.write(b"tune-space-1");
    for p in space.params() {
        let _ = write!(h, "\u{1}{}\u{2}{:?}", p.name(), p.kind());
        match &p.domain {
            Domain::Ints { lo, step, len } => {
                let _ = write!(h, "\u{3}{lo}:{step}:{len}");
            }
            Domain::Set(values) => {
                let _ = write!(h, "\u{4}{}", values.len());
                // Enum variants by name (their words are positions); other values by their
                // words, which are their bits: exact, and cheap on long lists.
                if p.kind() == Kind::Enum {
                    for &raw in values {
                        let _ = write!(h, "\u{5}{}", p.value_of_raw(raw));
                    }
                } else {
                    for &raw in values {
                        h.0.write(&raw.to_le_bytes());
                    }
                }
            }
        }
        if let Some(d) = p.default_value() {
            let _ = write!(h, "\u{6}{d}");
        }
    }
    let _ = write!(h, "\u{7}{}", space.len());
    hex(h.0.finish())
}

/// Feeds formatted text to a hasher without allocating.
struct HashWriter(FnvHasher);

impl fmt::Write for HashWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::param::Param;
    use crate::space::SpaceBuilder;

    #[test]
    fn hashes_are_stable_and_separate_parts() {
        // FNV-1a is fixed by its definition: these values must never change.
        assert_eq!(of([""; 0]), "cbf29ce484222325");
        assert_eq!(of(["abc"]), of(["abc"]));
        assert_ne!(of(["ab", "c"]), of(["a", "bc"]));
        assert_eq!(of(["kernel"]).len(), 16);
        // Pinned: a change here makes every recorded entry of every user stale. Change the
        // format tag with it, on purpose, in a release that says so.
        assert_eq!(of(["kernel", "-DWPT=4"]), "21ca26af7df6d544");
        assert_eq!(space_hash(&pinned_space()), "77364ea0bd20c03e");
    }

    fn pinned_space() -> Space {
        SpaceBuilder::new()
            .param(Param::<u32>::values("BS", [16, 32, 64]).default_value(32))
            .param(Param::<i64>::range("X", -4..=4).step(2))
            .param(Param::<bool>::bool("PAD"))
            .build()
            .unwrap()
    }

    #[test]
    fn space_hashes_follow_values_constraints_and_defaults() {
        let base = || SpaceBuilder::new().param(Param::<u32>::values("BS", [16, 32, 64]));
        let a = space_hash(&base().build().unwrap());
        assert_eq!(a, space_hash(&base().build().unwrap()));
        let values = SpaceBuilder::new().param(Param::<u32>::values("BS", [16, 32, 128]));
        assert_ne!(a, space_hash(&values.build().unwrap()));
        let renamed = SpaceBuilder::new().param(Param::<u32>::values("TS", [16, 32, 64]));
        assert_ne!(a, space_hash(&renamed.build().unwrap()));
        let constrained = SpaceBuilder::new()
            .param(Param::<u32>::values("BS", [16, 32, 64]).at_most(&[], |_| 32));
        assert_ne!(a, space_hash(&constrained.build().unwrap()));
        let range = |hi| {
            space_hash(
                &SpaceBuilder::new()
                    .param(Param::<u32>::range("X", 1..=hi))
                    .build()
                    .unwrap(),
            )
        };
        assert_ne!(range(100), range(101));
        let defaulted =
            SpaceBuilder::new().param(Param::<u32>::values("BS", [16, 32, 64]).default_value(32));
        assert_ne!(a, space_hash(&defaulted.build().unwrap()));
    }

    #[test]
    fn checks_name_what_changed() {
        let s = SpaceBuilder::new()
            .param(Param::<u32>::values("BS", [16, 32]))
            .build()
            .unwrap();
        let other = SpaceBuilder::new()
            .param(Param::<u32>::values("BS", [16, 64]))
            .build()
            .unwrap();
        let fp = Fingerprint::new(&s, Some("k1"));
        let e = Expected::new(&s, Some("k1"));
        assert_eq!(e.exact(Some(&fp)), Ok(()));
        assert_eq!(e.exact(None), Err(StaleReason::NoFingerprint));
        let e2 = Expected::new(&s, Some("k2"));
        assert_eq!(e2.exact(Some(&fp)), Err(StaleReason::Code));
        // A caller that knows no code checks the rest.
        assert_eq!(Expected::new(&s, None).exact(Some(&fp)), Ok(()));
        assert_eq!(
            Expected::new(&other, Some("k1")).exact(Some(&fp)),
            Err(StaleReason::Space)
        );
        assert_eq!(
            Expected::new(&other, Some("k1")).same_code(Some(&fp)),
            Ok(())
        );
        let old = Fingerprint {
            tune: "0.0.1".into(),
            ..fp
        };
        let r = e.exact(Some(&old)).unwrap_err();
        assert_eq!(
            r,
            StaleReason::TuneVersion {
                recorded: "0.0.1".into()
            }
        );
        assert!(r.to_string().contains("tune 0.0.1"), "{r}");
    }
}
