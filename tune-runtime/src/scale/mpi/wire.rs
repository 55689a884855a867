//! The messages between rank 0 and the other ranks, as JSON bytes in MPI messages of one
//! tag per direction (self-describing: a [`Failure`] is a tagged enum, and messages are
//! small next to a measurement).

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::evaluate::{Failure, Measured};
use crate::scale::Outcome;

/// The tag of messages to rank 0.
pub(super) const TO_ROOT: i32 = 1701;
/// The tag of messages from rank 0.
pub(super) const FROM_ROOT: i32 = 1702;

/// What a rank tells rank 0.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum ToRoot<C> {
    /// The rank's devices, its model, host, and the space it built.
    Hello {
        units: Vec<String>,
        model: String,
        host: String,
        space: String,
    },
    /// A device began to measure a job.
    Started { unit: u32, id: u64 },
    /// A job was measured.
    Done {
        unit: u32,
        id: u64,
        prep: Duration,
        outcome: Result<Measurement<C>, Failure>,
    },
    /// Still there (sent every [`super::ALIVE_EVERY`]).
    Alive,
    /// The rank cannot take part (its devices or space differ, or it failed).
    Quit(String),
}

/// What rank 0 tells a rank.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum FromRoot {
    /// The run starts: serve jobs.
    Start,
    /// Measure configuration `index` on device `unit`.
    Job { unit: u32, id: u64, index: u128 },
    /// The run is over (or refused, with why).
    Stop(Option<String>),
    /// Still there (sent every [`super::ALIVE_EVERY`] while the search runs).
    Alive,
}

/// A [`Measured`] and how long measuring took.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Measurement<C> {
    cost: C,
    samples: Vec<f64>,
    validation: Option<Duration>,
    stopped_early: bool,
    took: Duration,
}

pub(super) fn to_wire<C>(o: Outcome<C>) -> Result<Measurement<C>, Failure> {
    o.map(|(m, took)| Measurement {
        cost: m.cost,
        samples: m.samples,
        validation: m.validation,
        stopped_early: m.stopped_early,
        took,
    })
}

pub(super) fn from_wire<C>(m: Result<Measurement<C>, Failure>) -> Outcome<C> {
    m.map(|m| {
        (
            Measured {
                cost: m.cost,
                samples: m.samples,
                validation: m.validation,
                stopped_early: m.stopped_early,
            },
            m.took,
        )
    })
}

pub(super) fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    // Serialising these types cannot fail (no maps with non-string keys; costs are checked
    // finite before they are measured results): an empty message would be read as
    // malformed.
    serde_json::to_vec(msg).unwrap_or_default()
}

pub(super) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("malformed message ({e})"))
}
