//! `tune devices`.

use crate::Res;

#[cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(dead_code))]
fn mib(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

pub fn run() -> Res {
    opencl();
    cuda();
    Ok(())
}

#[cfg(feature = "opencl")]
fn opencl() {
    use tune_runtime::backend::opencl::OpenCl;
    use tune_runtime::backend::Backend;
    println!("OpenCL:");
    match OpenCl::devices() {
        Ok(list) => {
            for d in list {
                println!("  {d}");
                match OpenCl::select(&d.index.to_string()) {
                    Ok(cl) => {
                        let i = cl.device();
                        println!(
                            "      {} compute units, work-group up to {} ({}x{}x{}), local memory {} KiB, global memory {}, vendor {}",
                            i.compute_units,
                            i.max_work_group_size,
                            i.max_work_item_sizes[0],
                            i.max_work_item_sizes[1],
                            i.max_work_item_sizes[2],
                            i.local_mem_bytes / 1024,
                            mib(i.global_mem_bytes),
                            i.vendor
                        );
                    }
                    Err(e) => println!("      could not open it: {e}"),
                }
            }
            println!("  select one with `tune run --backend opencl --device <index | platform:device | name>`");
        }
        Err(e) => println!("  {e}"),
    }
}

#[cfg(not(feature = "opencl"))]
fn opencl() {
    println!("OpenCL:\n  not built in; install with `cargo install --path tune-cli` (the `opencl` feature is on by default)");
}

#[cfg(feature = "cuda")]
fn cuda() {
    use tune_runtime::backend::cuda;
    println!("CUDA:");
    match cuda::list_devices() {
        Ok(list) => {
            if let Some((ma, mi)) = cuda::nvrtc_version() {
                println!("  NVRTC {ma}.{mi}");
            }
            for p in list {
                let (ma, mi) = p.compute_capability;
                println!("  {}: {} (sm_{ma}{mi})", p.ordinal, p.name);
                println!(
                    "      {} multiprocessors, {} threads per block ({}x{}x{}), shared memory {} KiB per block ({} KiB opt-in), {} registers per block, L2 {}, memory {}, warp {}",
                    p.multiprocessors,
                    p.max_threads_per_block,
                    p.max_block_dim[0],
                    p.max_block_dim[1],
                    p.max_block_dim[2],
                    p.max_shared_per_block / 1024,
                    p.max_shared_per_block_optin / 1024,
                    p.max_registers_per_block,
                    mib(p.l2_bytes),
                    mib(p.total_memory),
                    p.warp_size
                );
            }
            println!("  select one with `tune run --backend cuda --device <ordinal | name>`");
        }
        Err(e) => println!("  {e}"),
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda() {
    println!("CUDA:\n  not built in; install with `cargo install --path tune-cli` (the `cuda` feature is on by default)");
}
