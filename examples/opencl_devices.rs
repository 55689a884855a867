//! Lists the OpenCL devices that tune can use, with the limits the evaluator checks.
//!
//! `cargo run --example opencl_devices --features opencl`
use tune::backend::opencl::OpenCl;
use tune::backend::Backend;

fn main() -> tune::Result<()> {
    for d in OpenCl::devices()? {
        println!("{d}");
        if let Ok(cl) = OpenCl::select(&d.index.to_string()) {
            let i = cl.device();
            println!(
                "    max work-group {}, per dimension {:?}, local memory {} KiB, global {} MiB, {} compute units",
                i.max_work_group_size,
                i.max_work_item_sizes,
                i.local_mem_bytes / 1024,
                i.global_mem_bytes >> 20,
                i.compute_units
            );
        }
    }
    println!("select one with TUNE_OPENCL_DEVICE=<index | platform:device | name substring>");
    Ok(())
}
