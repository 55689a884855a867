//! Brute-forced spaces recorded by other tuners, KTT's JSON output and T4 results files, as
//! the Kernel Tuner cache document that [`Recording`](super::Recording) reads (written by
//! [`KernelTunerCache`](super::KernelTunerCache)), so that they replay like a cache: each
//! configuration's time in milliseconds or its failure, and what its evaluation cost.

use std::path::Path;

use serde_json::Value as Json;

use crate::import::{self, Format};
use crate::results::export::T4;
use crate::{Error, Result};

/// The cache document of a KTT or T4 file; `None` for any other document (a Kernel Tuner
/// cache is read as it is).
///
/// # Errors
/// [`Error::Format`] for a KTT or T4 file that cannot be read, or that records nothing.
pub(super) fn as_cache(doc: &Json, origin: &str) -> Result<Option<Json>> {
    let path = Path::new(origin);
    let records = match import::detect(doc) {
        Some(Format::Ktt) => import::ktt(doc, path)?,
        Some(Format::T4) => {
            let t4: T4 = serde_json::from_value(doc.clone()).map_err(|e| Error::Format {
                path: origin.into(),
                reason: format!("not a T4 results file: {e}"),
            })?;
            import::from_t4(&t4, origin)
        }
        _ => return Ok(None),
    };
    if records.is_empty() {
        return Err(Error::Format {
            path: origin.into(),
            reason: "the file records no configuration".into(),
        });
    }
    let cache = super::KernelTunerCache::from_records(&records, origin)?;
    Ok(Some(cache.into_json()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::super::Recording;
    use crate::evaluate::Failure;
    use crate::results::export::T4;

    fn data(name: &str) -> String {
        format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// KTT's output replays: one configuration per result, its time in milliseconds
    /// (KTT's microseconds converted) and failures as failures.
    #[test]
    fn ktt_output_replays_as_a_recording() {
        let path = data("ktt/pnpoly_excerpt.json");
        let (_, records) = crate::import::read(std::path::Path::new(&path)).unwrap();
        let rec = Recording::open(&path).unwrap();
        assert_eq!(rec.space().len(), records.len() as u128);
        let fastest = records
            .iter()
            .filter(|r| r.status == "ok")
            .filter_map(|r| r.cost)
            .fold(f64::INFINITY, f64::min);
        let (_, ms) = rec.true_best().unwrap();
        assert!((ms - fastest * 1e3).abs() < 1e-9, "{ms} vs {fastest}");
        assert!(rec.device().contains("2080 Ti"));
        let failed = records.iter().filter(|r| r.status != "ok").count();
        let failed_here = (0..rec.space().len())
            .filter(|&i| rec.record(i).unwrap().time.is_err())
            .count();
        assert_eq!(failed_here, failed);
    }

    /// A Kernel Tuner cache written out as T4 and read back is the same space with the same
    /// times and failures.
    #[test]
    fn a_t4_file_replays_like_the_cache_it_came_from() {
        let path = data("test_cache_file.json");
        let cache = Recording::open(&path).unwrap();
        let (_, records) = crate::import::read(std::path::Path::new(&path)).unwrap();
        let text = serde_json::to_string(&T4::from_records(&records)).unwrap();
        let t4 = Recording::from_json(&text, "t4.json").unwrap();
        assert_eq!(t4.space().len(), cache.space().len());
        for i in 0..cache.space().len() {
            let c = cache.space().get(i).unwrap();
            let named: Vec<String> = (0..c.raw().len())
                .map(|k| cache.label(&c, k).unwrap())
                .collect();
            let j = (0..t4.space().len())
                .find(|&j| {
                    let d = t4.space().get(j).unwrap();
                    (0..d.raw().len()).all(|k| t4.label(&d, k).unwrap() == named[k])
                })
                .unwrap();
            let (a, b) = (&cache.record(i).unwrap().time, &t4.record(j).unwrap().time);
            match (a, b) {
                (Ok(x), Ok(y)) => assert!((x - y).abs() < 1e-9 * x.max(1.0), "{x} vs {y}"),
                (Err(Failure::Compile(_)), Err(Failure::Compile(_))) => {}
                (Err(_), Err(_)) => {}
                _ => panic!("{a:?} vs {b:?}"),
            }
        }
    }

    #[test]
    fn an_empty_ktt_output_is_a_clear_error() {
        let doc = r#"{"Metadata": {"TimeUnit": "Microseconds"}, "Results": []}"#;
        let e = Recording::from_json(doc, "empty.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("records no configuration"), "{e}");
    }
}
