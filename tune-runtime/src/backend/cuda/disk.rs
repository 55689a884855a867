//! NVRTC's output kept on disk between runs ([`Cuda::compile_cache`](super::Cuda::compile_cache)):
//! a configuration compiled once is loaded from its CUBIN (or PTX) the next time, and one
//! that NVRTC refused is refused again without compiling. Compilations of large unrolled
//! kernels take seconds, and a tuning run is often repeated (another seed, a longer
//! budget, the finalists of yesterday).
//!
//! One file per compilation, named by a hash of everything NVRTC was given (its version,
//! the architecture, the options with the tuning parameters' defines, the source) and
//! holding that text too: a hash collision is a miss, never a wrong kernel. Files are
//! written atomically; an unreadable or foreign file is a miss, and a cache that cannot be
//! written only costs the compilation.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

use super::compile::{self, Arch, Compiled};
use crate::Failure;

const MAGIC: &[u8] = b"tune-nvrtc 1\n";

/// A folder of NVRTC outputs.
#[derive(Clone, Debug)]
pub(super) struct DiskCache {
    dir: PathBuf,
}

/// What a cache file holds.
enum Entry {
    Compiled {
        cubin: bool,
        log: String,
        image: Vec<u8>,
    },
    Refused(String),
}

impl DiskCache {
    pub(super) fn new(dir: impl Into<PathBuf>) -> Self {
        DiskCache { dir: dir.into() }
    }

    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// [`compile::compile`], answered from the cache when it holds the same compilation.
    /// Returns whether NVRTC ran.
    pub(super) fn compile(
        &self,
        source: &str,
        name: &str,
        arch: &Arch,
        defines: &[(String, String)],
        extra: &[String],
    ) -> (Result<Compiled, Failure>, bool) {
        let key = format!(
            "nvrtc {:?}\nprogram {name}\n{}\n\n{source}",
            compile::nvrtc_version(),
            compile::options(arch, defines, extra).join("\n")
        );
        self.lookup(&key, arch, || {
            compile::compile(source, name, arch, defines, extra)
        })
    }

    /// The entry for `key`, else `compile`'s result, kept when it is the compiler's verdict.
    fn lookup(
        &self,
        key: &str,
        arch: &Arch,
        compile: impl FnOnce() -> Result<Compiled, Failure>,
    ) -> (Result<Compiled, Failure>, bool) {
        let mut h = fnv::FnvHasher::default();
        h.write(key.as_bytes());
        let path = self.dir.join(format!("{:016x}.nvrtc", h.finish()));
        match read(&path, key) {
            Some(Entry::Compiled { cubin, log, image }) if cubin == arch.cubin => {
                let hit = Compiled {
                    image,
                    arch: arch.clone(),
                    log,
                    seconds: 0.0,
                };
                return (Ok(hit), false);
            }
            Some(Entry::Refused(message)) => {
                let refused = Failure::Compile(format!(
                    "{message}\n(from the compile cache {}; delete it to compile again)",
                    self.dir.display()
                ));
                return (Err(refused), false);
            }
            _ => {}
        }
        let result = compile();
        let entry = match &result {
            Ok(c) => Some(encode(
                key,
                if c.arch.cubin { b"cubin" } else { b"ptx" },
                &c.log,
                &c.image,
            )),
            // Only the compiler's verdict on this source; not a missing NVRTC.
            Err(Failure::Compile(m)) => Some(encode(key, b"refused", "", m.as_bytes())),
            Err(_) => None,
        };
        if let Some(bytes) = entry {
            // A cache that cannot be written costs the next run this compilation, no more.
            let _ = crate::results::write_atomic(&path, &bytes);
        }
        (result, true)
    }
}

fn encode(key: &str, kind: &[u8], log: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + key.len() + log.len() + body.len() + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(format!("{}\n", key.len()).as_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\n");
    out.extend_from_slice(kind);
    out.extend_from_slice(format!("\n{}\n", log.len()).as_bytes());
    out.extend_from_slice(log.as_bytes());
    out.extend_from_slice(body);
    out
}

/// The next line of `rest`, without its newline.
fn take_line<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = rest.iter().position(|&b| b == b'\n')?;
    let (line, r) = rest.split_at(n);
    *rest = &r[1..];
    Some(line)
}

/// The entry for `key` in `path`, if the file is whole and holds that key.
fn read(path: &Path, key: &str) -> Option<Entry> {
    let bytes = std::fs::read(path).ok()?;
    let mut rest = bytes.strip_prefix(MAGIC)?;
    let number = |l: &[u8]| -> Option<usize> { std::str::from_utf8(l).ok()?.parse().ok() };
    let key_len = number(take_line(&mut rest)?)?;
    // The key spans lines: taken by its length.
    let (stored, r) = rest.split_at_checked(key_len)?;
    if stored != key.as_bytes() {
        return None;
    }
    rest = r.strip_prefix(b"\n")?;
    let kind = take_line(&mut rest)?;
    let log_len = number(take_line(&mut rest)?)?;
    let (log, body) = rest.split_at_checked(log_len)?;
    let log = String::from_utf8_lossy(log).into_owned();
    match kind {
        b"cubin" | b"ptx" => Some(Entry::Compiled {
            cubin: kind == b"cubin",
            log,
            image: body.to_vec(),
        }),
        b"refused" => Some(Entry::Refused(String::from_utf8_lossy(body).into_owned())),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_only_under_their_own_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.nvrtc");
        let key = "nvrtc Some((13, 0))\nprogram k.cu\n--gpu-architecture=sm_90\n-DX=1\n\nsource\nwith lines";
        let image = [0u8, 1, 10, 255, b'\n', 7];
        std::fs::write(&path, encode(key, b"cubin", "a log\nof two lines", &image)).unwrap();
        match read(&path, key) {
            Some(Entry::Compiled {
                cubin,
                log,
                image: got,
            }) => {
                assert!(cubin);
                assert_eq!(log, "a log\nof two lines");
                assert_eq!(got, image);
            }
            _ => panic!("not read back"),
        }
        assert!(read(&path, "another key").is_none());
        std::fs::write(&path, encode(key, b"refused", "", b"error: too big")).unwrap();
        assert!(matches!(read(&path, key), Some(Entry::Refused(m)) if m == "error: too big"));
        // Cut short (a crash while writing without the atomic rename): a miss.
        let whole = encode(key, b"ptx", "", b"ptx text");
        std::fs::write(&path, &whole[..MAGIC.len() + 10]).unwrap();
        assert!(read(&path, key).is_none());
    }

    #[test]
    fn compiled_and_refused_are_kept_and_other_failures_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path().join("nvrtc"));
        let arch = Arch {
            sm: 90,
            cubin: true,
        };
        let calls = std::cell::Cell::new(0);
        let compiled = || {
            calls.set(calls.get() + 1);
            Ok(Compiled {
                image: vec![1, 2, 3],
                arch: arch.clone(),
                log: "ok".into(),
                seconds: 1.5,
            })
        };
        let (first, ran) = cache.lookup("good", &arch, compiled);
        assert!(ran && first.is_ok());
        let (again, ran) = cache.lookup("good", &arch, compiled);
        let again = again.unwrap();
        assert!(!ran && again.image == [1, 2, 3] && again.log == "ok" && again.seconds == 0.0);
        assert_eq!(calls.get(), 1);
        // Kept for the architecture it was made for only.
        let ptx = Arch {
            sm: 90,
            cubin: false,
        };
        assert!(cache.lookup("good", &ptx, compiled).1);
        // A refusal is refused again without compiling, saying where it came from.
        let refuse = || Err(Failure::Compile("error: nope".into()));
        assert!(cache.lookup("bad", &arch, refuse).1);
        let (again, ran) = cache.lookup("bad", &arch, || panic!("compiled again"));
        assert!(!ran);
        assert!(
            matches!(again, Err(Failure::Compile(m)) if m.contains("error: nope") && m.contains("compile cache"))
        );
        // A missing compiler is no verdict on the source: nothing is kept.
        let missing = || Err(Failure::Other("libnvrtc not found".into()));
        assert!(cache.lookup("other", &arch, missing).1);
        assert!(cache.lookup("other", &arch, missing).1);
        assert_eq!(
            std::fs::read_dir(dir.path().join("nvrtc")).unwrap().count(),
            2
        );
    }
}
