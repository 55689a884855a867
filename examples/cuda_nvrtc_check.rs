//! Compiles a CUDA kernel with NVRTC for a given architecture, without a GPU (only
//! `libnvrtc` is needed), and prints the resource report: registers, spills, shared memory.
//!
//! `cargo run --features cuda --example cuda_nvrtc_check -- kernels/sgemm.cu sm_90 BM=128 BN=128 ...`

#[cfg(feature = "cuda")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use tune::cuda::{compile, Arch};
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: cuda_nvrtc_check FILE.cu sm_XX [NAME=VALUE ...]")?;
    let arch = args.next().unwrap_or_else(|| "sm_90".into());
    let sm: u32 = arch.trim_start_matches("sm_").parse()?;
    let mut defines = Vec::new();
    let mut options = vec!["--ptxas-options=-v".to_string()];
    for a in args {
        if let Some(o) = a.strip_prefix("--") {
            options.push(format!("--{o}"));
        } else if let Some((k, v)) = a.split_once('=') {
            defines.push((k.to_string(), v.to_string()));
        }
    }
    let source = std::fs::read_to_string(&path)?;
    match compile(
        &source,
        &path,
        &Arch { sm, cubin: true },
        &defines,
        &options,
    ) {
        Ok(c) => {
            println!("ok: {} bytes of CUBIN in {:.3} s", c.image.len(), c.seconds);
            print!("{}", c.log);
        }
        Err(f) => {
            println!("{f}");
            std::process::exit(1);
        }
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
