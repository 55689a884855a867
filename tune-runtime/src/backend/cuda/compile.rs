//! Run-time compilation with NVRTC: tuning parameters become `-D` defines, the architecture
//! comes from the device, and the result is a CUBIN (or PTX for a device newer than NVRTC).

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;
use std::time::Instant;

use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};

use super::device::{probe_nvrtc, CudaProps};
use crate::Failure;

/// The target NVRTC compiles for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Arch {
    /// Compute capability as `major * 10 + minor` (90 for Hopper).
    pub sm: u32,
    /// `true`: machine code for exactly this architecture (`sm_XX`, a CUBIN). `false`: PTX
    /// for a virtual architecture (`compute_XX`) that the driver compiles when loading.
    pub cubin: bool,
}

impl Arch {
    /// The NVRTC option, e.g. `--gpu-architecture=sm_90`.
    pub fn option(&self) -> String {
        let prefix = if self.cubin { "sm" } else { "compute" };
        format!("--gpu-architecture={prefix}_{}", self.sm)
    }

    /// Chooses the architecture for a device among those NVRTC supports: the device's own
    /// (CUBIN) when NVRTC knows it, otherwise PTX for the newest older one, which the driver
    /// compiles at load time.
    pub fn for_device(info: &CudaProps) -> Arch {
        let (ma, mi) = info.compute_capability;
        Self::choose(ma * 10 + mi, supported_archs())
    }

    /// The choice of [`Arch::for_device`] for a compute capability and a list of supported
    /// architectures (empty: unknown, assume supported).
    pub fn choose(sm: u32, supported: &[u32]) -> Arch {
        if supported.is_empty() || supported.contains(&sm) {
            return Arch { sm, cubin: true };
        }
        match supported.iter().copied().filter(|&s| s <= sm).max() {
            Some(older) => Arch {
                sm: older,
                cubin: false,
            },
            None => Arch { sm, cubin: true },
        }
    }
}

/// The architectures the loaded NVRTC can compile for (empty if unknown).
pub fn supported_archs() -> &'static [u32] {
    static ARCHS: OnceLock<Vec<u32>> = OnceLock::new();
    ARCHS.get_or_init(|| {
        if probe_nvrtc().is_err() {
            return Vec::new();
        }
        let mut n: c_int = 0;
        // SAFETY: NVRTC is loaded (probed above); plain out-parameters.
        unsafe {
            if nvrtc_sys::nvrtcGetNumSupportedArchs(&mut n)
                .result()
                .is_err()
                || n <= 0
            {
                return Vec::new();
            }
            let mut v = vec![0 as c_int; n as usize];
            if nvrtc_sys::nvrtcGetSupportedArchs(v.as_mut_ptr())
                .result()
                .is_err()
            {
                return Vec::new();
            }
            v.into_iter().map(|a| a.max(0) as u32).collect()
        }
    })
}

/// The loaded NVRTC's version, e.g. `(13, 0)`.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    probe_nvrtc().ok()?;
    let (mut ma, mut mi) = (0, 0);
    // SAFETY: NVRTC is loaded; plain out-parameters.
    unsafe { nvrtc_sys::nvrtcVersion(&mut ma, &mut mi).result().ok()? };
    Some((ma, mi))
}

/// What NVRTC made.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// CUBIN (`arch.cubin`) or NUL-free PTX text.
    pub image: Vec<u8>,
    /// The target.
    pub arch: Arch,
    /// NVRTC's log (warnings; the resource report when `--ptxas-options=-v` was given).
    pub log: String,
    /// Seconds NVRTC took.
    pub seconds: f64,
}

/// The full NVRTC option list for a compilation: architecture, then `-D` defines, then extra
/// options.
pub fn options(arch: &Arch, defines: &[(String, String)], extra: &[String]) -> Vec<String> {
    let mut opts = Vec::with_capacity(defines.len() + extra.len() + 1);
    opts.push(arch.option());
    opts.extend(defines.iter().map(|(k, v)| format!("-D{k}={v}")));
    opts.extend(extra.iter().cloned());
    opts
}

struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by create_program and destroyed once, here.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

fn c_chars_to_string(v: &[c_char]) -> String {
    let bytes: Vec<u8> = v.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles CUDA C++ `source` with NVRTC. `name` names the program in messages (e.g. the
/// kernel's file name).
///
/// # Errors
/// [`Failure::Compile`] with the options and NVRTC's log; [`Failure::Other`] when NVRTC is
/// missing.
pub fn compile(
    source: &str,
    name: &str,
    arch: &Arch,
    defines: &[(String, String)],
    extra: &[String],
) -> Result<Compiled, Failure> {
    probe_nvrtc().map_err(|e| Failure::Other(e.to_string()))?;
    let t0 = Instant::now();
    let src = CString::new(source)
        .map_err(|_| Failure::Compile("the kernel source contains a NUL byte".into()))?;
    let cname = CString::new(name).unwrap_or_default();
    let prog = nvrtc::create_program(&src, Some(cname.as_c_str()))
        .map_err(|e| Failure::Compile(format!("nvrtcCreateProgram failed: {e:?}")))?;
    let prog = Program(prog);
    let opts = options(arch, defines, extra);
    if opts.iter().any(|o| o.contains('\0')) {
        return Err(Failure::Compile("an option contains a NUL byte".into()));
    }
    // SAFETY: `prog` is a live program; options are NUL-free (checked above).
    let status = unsafe { nvrtc::compile_program(prog.0, &opts) };
    // SAFETY: `prog` is live.
    let log = unsafe { nvrtc::get_program_log(prog.0) }
        .map(|l| c_chars_to_string(&l))
        .unwrap_or_default();
    if let Err(e) = status {
        return Err(Failure::Compile(format!(
            "{name}: {e:?}\noptions: {}\n{}",
            opts.join(" "),
            log.trim_end()
        )));
    }
    let image = if arch.cubin {
        let mut size = 0usize;
        // SAFETY: `prog` compiled successfully; the buffer has the size NVRTC reports.
        unsafe {
            nvrtc_sys::nvrtcGetCUBINSize(prog.0, &mut size)
                .result()
                .map_err(|e| Failure::Compile(format!("nvrtcGetCUBINSize: {e:?}")))?;
            let mut buf = vec![0u8; size];
            nvrtc_sys::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr() as *mut c_char)
                .result()
                .map_err(|e| Failure::Compile(format!("nvrtcGetCUBIN: {e:?}")))?;
            buf
        }
    } else {
        // SAFETY: `prog` compiled successfully.
        let ptx = unsafe { nvrtc::get_ptx(prog.0) }
            .map_err(|e| Failure::Compile(format!("nvrtcGetPTX: {e:?}")))?;
        c_chars_to_string(&ptx).into_bytes()
    };
    Ok(Compiled {
        image,
        arch: arch.clone(),
        log,
        seconds: t0.elapsed().as_secs_f64(),
    })
}
