// Sizes of the dedispersion kernel (dedisp_milo/dedispersion.cu of benchmark_hub, T1 files in
// ../shared/data/t1) for round 10's H200 recording: benchmark_hub's sizes except
// nr_channels, 256 instead of 1536, so that a brute force of the 11,130 configurations fits
// the GPU calls (see ../README.md, "Round 10").
#define nr_dms 2048
#define nr_samples 25000
#define nr_channels 256
#define max_shift 650
#define nr_samples_per_channel (nr_samples + max_shift)
#define dm_first 0.0f
#define dm_step 0.02f
