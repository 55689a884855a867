//! Search-space construction benchmark: the 20 spaces of `../shared/bench/spaces.md`,
//! declared with `tune::space!` as a user would.
//!
//! `cargo bench --bench spaces -- SPACE` builds one space in this (fresh) process and prints
//! one JSON line in the format of `../shared/bench/peers/worker.py`, so that
//! `bench/spaces/run.sh` can run tune beside the Python peers; `-- --all` builds every space
//! in turn and prints a summary (median of 3 builds); `-- --repeat N SPACE` builds one space
//! N times (for a profiler). The spaces `T*` are tune's own stencil-shaped spaces, defined
//! for the peers in `bench/spaces/stencil-spaces.json`. Run in release mode (`cargo bench`
//! does that).

use std::time::Instant;

use tune::Space;

/// Every space, by its name in `spaces.md`.
const SPACES: &[&str] = &[
    "S1_saxpy_N1024",
    "S1_saxpy_N32768",
    "S1_saxpy_N1048576",
    "S1_saxpy_N1000000",
    "S2_xgemmdirect_N8",
    "S2_xgemmdirect_N16",
    "S2_xgemmdirect_N32",
    "S2_xgemmdirect_N64",
    "S2_xgemmdirect_N128",
    "S2_xgemmdirect_N256",
    "S2_xgemmdirect_atf_IS4",
    "S3_clblast_xgemm_V2",
    "S4_kt_dedispersion",
    "S4_kt_convolution",
    "S4_kt_gemm",
    "S5_cltune_gemm",
    "S6_cltune_gemm_S32",
    "S6_cltune_gemm_S64",
    "S6_cltune_gemm_S128",
    "S6_cltune_gemm_S256",
    "T1_stencil2d_N4096",
    "T2_stencil3d_N256",
    "T3_hotspot_temporal",
    "T4_conv2d_F7",
];

/// ATF saxpy (Rasch & Gorlatch, CCPE 2018, Listing 2).
fn saxpy(n: usize) -> tune::Result<Space> {
    tune::space! {
        WPT: usize in 1..=n, divides(n);
        LS: usize in 1..=n, divides(n / WPT);
    }
}

/// CLBlast XgemmDirect with ATF's unlimited ranges.
fn xgemm_direct(n: usize) -> tune::Result<Space> {
    tune::space! {
        WGD: usize in 1..=n;
        MDIMCD: usize in 1..=n, divides(WGD);
        NDIMCD: usize in 1..=n, divides(WGD);
        MDIMAD: usize in 1..=n,
            divides(WGD) && divides(MDIMCD * NDIMCD) && WGD % ((MDIMCD * NDIMCD) / MDIMAD) == 0;
        NDIMBD: usize in 1..=n,
            divides(WGD) && divides(MDIMCD * NDIMCD) && WGD % ((MDIMCD * NDIMCD) / NDIMBD) == 0;
        KWID: usize in 1..=n, divides(WGD);
        VWMD: usize in [1, 2, 4, 8], divides(WGD / MDIMCD) && divides(WGD / MDIMAD);
        VWND: usize in [1, 2, 4, 8], divides(WGD / NDIMCD) && divides(WGD / NDIMBD);
        PADA: usize in [0, 1];
        PADB: usize in [0, 1];
    }
}

/// ATF's own XgemmDirect program for the input size IS4 (M = 10, N = 500, K = 64).
fn xgemm_direct_is4() -> tune::Result<Space> {
    let (m, n, k) = (10usize, 500usize, 64usize);
    tune::space! {
        WGD: usize in 1..=n;
        MDIMCD: usize in 1..=m, divides(m) && divides(WGD);
        NDIMCD: usize in 1..=n, divides(n) && divides(WGD);
        MDIMAD: usize in 1..=m,
            divides(WGD) && divides(MDIMCD * NDIMCD) && WGD % ((MDIMCD * NDIMCD) / MDIMAD) == 0;
        NDIMBD: usize in 1..=n,
            divides(WGD) && divides(MDIMCD * NDIMCD) && WGD % ((MDIMCD * NDIMCD) / NDIMBD) == 0;
        KWID: usize in 1..=k, divides(WGD);
        VWMD: usize in [1, 2, 4, 8], divides(WGD / MDIMCD) && divides(WGD / MDIMAD);
        VWND: usize in [1, 2, 4, 8], divides(WGD / NDIMCD) && divides(WGD / NDIMBD);
        PADA: usize in [0, 1];
        PADB: usize in [0, 1];
    }
}

/// CLBlast Xgemm (V = 2), as in CLBlast's tuner and Kernel Tuner's GEMM benchmark (`kt`
/// adds PRECISION and Kernel Tuner's extra restriction).
fn clblast_xgemm(kt: bool) -> tune::Result<Space> {
    tune::space! {
        GEMMK: usize in [0];
        MWG: usize in [16, 32, 64, 128];
        NWG: usize in [16, 32, 64, 128];
        KWG: usize in [16, 32];
        MDIMC: usize in [8, 16, 32];
        NDIMC: usize in [8, 16, 32], !(kt && MWG == 128 && NWG == 128 && MDIMC == 8 && NDIMC == 8);
        MDIMA: usize in [8, 16, 32], KWG % ((MDIMC * NDIMC) / MDIMA) == 0;
        NDIMB: usize in [8, 16, 32], KWG % ((MDIMC * NDIMC) / NDIMB) == 0;
        KWI: usize in [2], divides(KWG);
        VWM: usize in [1, 2, 4, 8], MWG % (MDIMC * VWM) == 0 && MWG % (MDIMA * VWM) == 0;
        VWN: usize in [1, 2, 4, 8], NWG % (NDIMC * VWN) == 0 && NWG % (NDIMB * VWN) == 0;
        STRM: usize in [0, 1];
        STRN: usize in [0, 1];
        SA: usize in [0, 1];
        SB: usize in [0, 1];
        KREG: usize in [1];
        PRECISION: usize in [32];
    }
}

/// CLTune's GEMM sample (Nugteren & Codreanu, MCSoC 2015): 241,600 configurations.
fn cltune_gemm() -> tune::Result<Space> {
    tune::space! {
        MWG: usize in [16, 32, 64, 128];
        NWG: usize in [16, 32, 64, 128];
        KWG: usize in [16, 32];
        MDIMC: usize in [8, 16, 32];
        NDIMC: usize in [8, 16, 32];
        MDIMA: usize in [8, 16, 32], KWG % ((MDIMC * NDIMC) / MDIMA) == 0;
        NDIMB: usize in [8, 16, 32], KWG % ((MDIMC * NDIMC) / NDIMB) == 0;
        KWI: usize in [2, 8], divides(KWG);
        VWM: usize in [1, 2, 4, 8], MWG % (MDIMC * VWM) == 0 && MWG % (MDIMA * VWM) == 0;
        VWN: usize in [1, 2, 4, 8], NWG % (NDIMC * VWN) == 0 && NWG % (NDIMB * VWN) == 0;
        STRM: usize in [0, 1];
        STRN: usize in [0, 1];
        SA: usize in [0, 1];
        SB: usize in [0, 1];
        PRECISION: usize in [32];
    }
}

/// CLTune's GEMM with ATF-style unlimited ranges (pyATF's SGEMM example) for size `s`.
fn cltune_gemm_unlimited(s: usize) -> tune::Result<Space> {
    tune::space! {
        MWG: usize in 1..=s, divides(s);
        NWG: usize in 1..=s, divides(s);
        KWG: usize in 1..=s, divides(s);
        MDIMC: usize in 1..=s, divides(MWG) && at_most(1024);
        NDIMC: usize in 1..=s, divides(NWG) && at_most(1024) && MDIMC * NDIMC <= 1024;
        MDIMA: usize in 1..=s,
            divides(MWG) && divides(MDIMC * NDIMC) && KWG % ((MDIMC * NDIMC) / MDIMA) == 0;
        NDIMB: usize in 1..=s,
            divides(NWG) && divides(MDIMC * NDIMC) && KWG % ((MDIMC * NDIMC) / NDIMB) == 0;
        KWI: usize in 1..=s, divides(KWG);
        VWM: usize in [1, 2, 4, 8], divides(MWG / MDIMC) && divides(MWG / MDIMA);
        VWN: usize in [1, 2, 4, 8], divides(NWG / NDIMC) && divides(NWG / NDIMB);
        STRM: usize in [0, 1];
        STRN: usize in [0, 1];
        SA: usize in [0, 1];
        SB: usize in [0, 1], ((SA * KWG * MWG / VWM) + (SB * KWG * NWG / VWN)) * 8 <= 49152;
    }
}

/// Kernel Tuner's dedispersion space (benchmark_hub).
fn kt_dedispersion() -> tune::Result<Space> {
    tune::space! {
        block_size_x: usize in [1, 2, 4, 8, 16, 32];
        block_size_y: usize in 32..=256 step 8,
            32 <= block_size_x * block_size_y && block_size_x * block_size_y <= 1024;
        block_size_z: usize in [1];
        tile_size_x: usize in 1..=4;
        tile_size_y: usize in 1..=8;
        tile_stride_x: usize in [0, 1], tile_size_x > 1 || tile_stride_x == 0;
        tile_stride_y: usize in [0, 1], tile_size_y > 1 || tile_stride_y == 0;
        loop_unroll_factor_channel: usize in [0];
    }
}

/// Kernel Tuner's convolution space (benchmark_hub).
fn kt_convolution() -> tune::Result<Space> {
    tune::space! {
        block_size_x: usize in 16..=256 step 16;
        block_size_y: usize in [1, 2, 4, 8, 16], block_size_x * block_size_y <= 1024;
        tile_size_x: usize in 1..=4;
        tile_size_y: usize in 1..=4;
        read_only: usize in [0, 1];
        use_padding: usize in [0, 1], use_padding == 0 || block_size_x % 32 != 0;
        use_shmem: usize in [0, 1], use_padding == 0 || use_shmem != 0;
        use_cmem: usize in [1];
        filter_height: usize in [15];
        filter_width: usize in [15],
            use_shmem == 0
                || ((block_size_x * tile_size_x + (filter_width - 1))
                    * (block_size_y * tile_size_y + (filter_height - 1)))
                    < 12 * 1024;
    }
}

/// A 2D 5-point Jacobi stencil on a 4096 x 4096 grid (tune's own stencil space, defined in
/// `bench/spaces/stencil-spaces.json` for the peers): work-group size, per-thread tile,
/// vector width, unrolling and shared-memory padding.
fn stencil2d() -> tune::Result<Space> {
    let n = 4096usize;
    tune::space! {
        BX: usize in 1..=512;
        BY: usize in 1..=64, BX * BY >= 64 && BX * BY <= 1024;
        TX: usize in 1..=16, n % (BX * TX) == 0;
        TY: usize in 1..=16, n % (BY * TY) == 0;
        VW: usize in [1, 2, 4, 8], TX % VW == 0;
        UNROLL: usize in [1, 2, 4, 8], TY % UNROLL == 0;
        PAD: usize in [0, 1, 2, 3], (BX * TX + 2 + PAD) * (BY * TY + 2) * 4 <= 49152;
    }
}

/// A 3D radius-4 stencil on a 256^3 grid: 3D work-groups, per-thread tiles, a z loop with
/// unrolling, register and shared-memory bounds.
fn stencil3d() -> tune::Result<Space> {
    let n = 256usize;
    tune::space! {
        BX: usize in 1..=256;
        BY: usize in 1..=64;
        BZ: usize in 1..=16, BX * BY * BZ >= 32 && BX * BY * BZ <= 1024;
        TX: usize in 1..=8, n % (BX * TX) == 0;
        TY: usize in 1..=8, n % (BY * TY) == 0;
        TZ: usize in 1..=32, n % (BZ * TZ) == 0 && TX * TY * TZ <= 128;
        UNROLL: usize in [1, 2, 4, 8], TZ % UNROLL == 0;
        PAD: usize in [0, 1, 2, 3], (BX * TX + 8 + PAD) * (BY * TY + 8) * 4 <= 49152;
    }
}

/// A 2D stencil with temporal tiling (several time steps per launch, hotspot-like).
fn hotspot_temporal() -> tune::Result<Space> {
    tune::space! {
        BX: usize in (0..=10).map(|i| 1 << i);
        BY: usize in (0..=5).map(|i| 1 << i), BX * BY >= 32 && BX * BY <= 1024;
        TX: usize in 1..=10;
        TY: usize in 1..=10;
        T: usize in 1..=10;
        UT: usize in 1..=10, T % UT == 0;
        SH: usize in [0, 1],
            (BX * TX + 2 * T) * (BY * TY + 2 * T) * (2 + SH) * 4 <= 49152;
        BPSM: usize in [0, 1, 2, 3, 4], BPSM == 0 || BX * BY * BPSM <= 2048;
    }
}

/// A 7 x 7 convolution on a 2048 x 2048 image: work-groups, tiles, vector width, and
/// optional shared-memory staging with padding.
fn conv2d() -> tune::Result<Space> {
    let n = 2048usize;
    tune::space! {
        BX: usize in 16..=512 step 16;
        BY: usize in 1..=32, BX * BY >= 64 && BX * BY <= 1024;
        TX: usize in 1..=8, n % (BX * TX) == 0;
        TY: usize in 1..=8, n % (BY * TY) == 0;
        VW: usize in [1, 2, 4], TX % VW == 0;
        SHMEM: usize in [0, 1];
        PAD: usize in [0, 1],
            PAD == 0 || SHMEM == 1,
            SHMEM == 0 || (BX * TX + 6 + PAD) * (BY * TY + 6) * 4 <= 49152;
        UNROLL: usize in [0, 1];
    }
}

fn build(name: &str) -> Option<tune::Result<Space>> {
    Some(match name {
        "S1_saxpy_N1024" => saxpy(1024),
        "S1_saxpy_N32768" => saxpy(32768),
        "S1_saxpy_N1048576" => saxpy(1 << 20),
        "S1_saxpy_N1000000" => saxpy(1_000_000),
        "S2_xgemmdirect_N8" => xgemm_direct(8),
        "S2_xgemmdirect_N16" => xgemm_direct(16),
        "S2_xgemmdirect_N32" => xgemm_direct(32),
        "S2_xgemmdirect_N64" => xgemm_direct(64),
        "S2_xgemmdirect_N128" => xgemm_direct(128),
        "S2_xgemmdirect_N256" => xgemm_direct(256),
        "S2_xgemmdirect_atf_IS4" => xgemm_direct_is4(),
        "S3_clblast_xgemm_V2" => clblast_xgemm(false),
        "S4_kt_dedispersion" => kt_dedispersion(),
        "S4_kt_convolution" => kt_convolution(),
        "S4_kt_gemm" => clblast_xgemm(true),
        "S5_cltune_gemm" => cltune_gemm(),
        "S6_cltune_gemm_S32" => cltune_gemm_unlimited(32),
        "S6_cltune_gemm_S64" => cltune_gemm_unlimited(64),
        "S6_cltune_gemm_S128" => cltune_gemm_unlimited(128),
        "S6_cltune_gemm_S256" => cltune_gemm_unlimited(256),
        "T1_stencil2d_N4096" => stencil2d(),
        "T2_stencil3d_N256" => stencil3d(),
        "T3_hotspot_temporal" => hotspot_temporal(),
        "T4_conv2d_F7" => conv2d(),
        _ => return None,
    })
}

/// CPU time of this process so far (every thread), in seconds: unlike the wall time, it
/// does not grow when other processes take the cores.
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the call only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return f64::NAN;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Peak resident set of this process so far, in KiB.
fn maxrss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    // No warm-up: the first construction in a process is what a user's program pays
    // (small spaces never start the thread pool; large ones start it when they need it).
    if args.iter().any(|a| a == "--all") || args.is_empty() {
        println!("| space | valid | median of 3 | bytes/config |");
        println!("|---|---|---|---|");
        for name in SPACES {
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..3 {
                let t = Instant::now();
                let s = build(name).and_then(|r| r.ok());
                times.push(t.elapsed());
                last = s;
            }
            times.sort();
            match last {
                Some(s) => println!(
                    "| {name} | {} | {:?} | {:.2} |",
                    s.len(),
                    times[1],
                    s.memory_bytes() as f64 / (s.len().max(1) as f64)
                ),
                None => println!("| {name} | error | | |"),
            }
        }
        return;
    }
    // `--repeat N SPACE`: builds SPACE N times in this process (for a profiler, and for
    // steady-state costs) and prints the median wall and CPU time per construction.
    if let [flag, n, name] = args.as_slice() {
        if flag == "--repeat" {
            let n: usize = n.parse().unwrap_or(1).max(1);
            let mut wall = Vec::with_capacity(n);
            let mut cpu = Vec::with_capacity(n);
            let mut count = 0;
            for _ in 0..n {
                let (c, t) = (cpu_seconds(), Instant::now());
                let built = build(name);
                wall.push(t.elapsed().as_secs_f64());
                cpu.push(cpu_seconds() - c);
                if let Some(Ok(s)) = built {
                    count = s.len();
                }
            }
            wall.sort_by(f64::total_cmp);
            cpu.sort_by(f64::total_cmp);
            println!(
                "{name}: {count} valid; median of {n}: wall {:.3} ms, CPU {:.3} ms, {:.1} ns/valid (CPU)",
                wall[n / 2] * 1e3,
                cpu[n / 2] * 1e3,
                cpu[n / 2] * 1e9 / count.max(1) as f64
            );
            return;
        }
    }
    for name in &args {
        let before = maxrss_kib();
        let cpu = cpu_seconds();
        let t = Instant::now();
        let result = build(name);
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu;
        let line = match result {
            Some(Ok(s)) if std::env::var_os("TUNE_BENCH_DEBUG").is_some() => {
                format!("{:?}\n{:?}\n{:?}", s.groups(), s.__build_order(), s.__level_sizes())
            }
            Some(Ok(s)) => format!(
                "{{\"peer\": \"tune\", \"space\": \"{name}\", \"count\": {}, \"seconds\": {secs}, \"cpu_seconds\": {cpu}, \"rss_before_kib\": {before}, \"maxrss_kib\": {}, \"bytes\": {}}}",
                s.len(),
                maxrss_kib(),
                s.memory_bytes()
            ),
            Some(Err(e)) => format!("{{\"peer\": \"tune\", \"space\": \"{name}\", \"error\": \"{e}\"}}"),
            None => format!("{{\"peer\": \"tune\", \"space\": \"{name}\", \"error\": \"unknown space\"}}"),
        };
        println!("{line}");
    }
}
