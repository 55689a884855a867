// LSD radix sort of 32-bit keys as a composition of three kernels, written for tune after
// KTT's sorting example (thesis, section 6.2). One pass per RADIX_BITS bits of the key:
//   histogram: work-group g counts the digits of its chunk of keys into hist[d * G + g]
//              (G work-groups; digit-major, so that an exclusive scan gives every group the
//              place of its first key of each digit);
//   scan:      one work-group scans hist in place (exclusive prefix sums);
//   scatter:   work-group g sorts each tile of its chunk by digit in local memory (stable
//              1-bit splits) and writes every key to its place.
// The host launches the three per pass, swapping the key buffers between passes.
//
// Tuning parameters, shared by the three kernels:
//   RADIX_BITS bits per pass (the digit): 32 / RADIX_BITS passes
//   WG         work-group size
//   ITEMS      keys per work-item in a tile (a tile is WG * ITEMS keys)
// The host's chunk (keys per work-group) is a multiple of the tile.

#define RADIX (1u << RADIX_BITS)
#define MASK (RADIX - 1u)
#define TILE (WG * ITEMS)

// Exclusive prefix sum of one value per work-item over the work-group; `total` gets the sum.
inline uint scan_group(uint v, __local uint* s, uint lid, uint* total) {
    s[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < WG; off <<= 1) {
        const uint t = lid >= off ? s[lid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        s[lid] += t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const uint incl = s[lid];
    *total = s[WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return incl - v;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void histogram(__global const uint* restrict keys, __global uint* restrict hist, const uint n,
               const uint shift, const uint chunk) {
    __local uint count[RADIX];
    const uint lid = get_local_id(0);
    const uint g = get_group_id(0);
    for (uint d = lid; d < RADIX; d += WG) count[d] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint begin = g * chunk;
    const uint end = min(n, begin + chunk);
    for (uint i = begin + lid; i < end; i += WG) atomic_inc(&count[(keys[i] >> shift) & MASK]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = lid; d < RADIX; d += WG) hist[d * get_num_groups(0) + g] = count[d];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scan(__global uint* hist, const uint len) {
    __local uint s[WG];
    const uint lid = get_local_id(0);
    uint carry = 0u;
    for (uint base = 0; base < len; base += TILE) {
        // Each work-item scans its ITEMS consecutive values, then the work-group scans the sums.
        uint v[ITEMS];
        uint mine = 0u;
        for (uint j = 0; j < ITEMS; j++) {
            const uint i = base + lid * ITEMS + j;
            v[j] = i < len ? hist[i] : 0u;
            mine += v[j];
        }
        uint total;
        uint run = carry + scan_group(mine, s, lid, &total);
        for (uint j = 0; j < ITEMS; j++) {
            const uint i = base + lid * ITEMS + j;
            if (i < len) hist[i] = run;
            run += v[j];
        }
        carry += total;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scatter(__global const uint* restrict in, __global uint* restrict out,
             __global const uint* restrict hist, const uint n, const uint shift,
             const uint chunk) {
    __local uint tile[TILE];
    __local uint s[WG];
    __local uint place[RADIX];
    __local uint first[RADIX];
    __local uint last[RADIX];
    const uint lid = get_local_id(0);
    const uint g = get_group_id(0);
    for (uint d = lid; d < RADIX; d += WG) place[d] = hist[d * get_num_groups(0) + g];
    const uint begin = g * chunk;
    const uint end = min(n, begin + chunk);
    for (uint base = begin; base < end; base += TILE) {
        const uint valid = min((uint)TILE, end - base);
        // Striped loads (coalesced); keys past the end sort last.
        for (uint j = 0; j < ITEMS; j++) {
            const uint k = j * WG + lid;
            tile[k] = k < valid ? in[base + k] : 0xffffffffu;
        }
        for (uint d = lid; d < RADIX; d += WG) {
            first[d] = 0u;
            last[d] = 0u;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        // Stable sort of the tile by digit: one split per bit, zeros before ones.
        for (uint bit = 0; bit < RADIX_BITS; bit++) {
            uint k[ITEMS];
            uint zeros = 0u;
            for (uint j = 0; j < ITEMS; j++) {
                k[j] = tile[lid * ITEMS + j];
                zeros += ((k[j] >> (shift + bit)) & 1u) ^ 1u;
            }
            uint all_zeros;
            uint z = scan_group(zeros, s, lid, &all_zeros);
            for (uint j = 0; j < ITEMS; j++) {
                const uint i = lid * ITEMS + j;
                const uint one = (k[j] >> (shift + bit)) & 1u;
                const uint to = one ? all_zeros + (i - z) : z;
                z += one ^ 1u;
                tile[to] = k[j];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        // Where each digit's run starts and ends in the sorted tile.
        for (uint j = 0; j < ITEMS; j++) {
            const uint i = lid * ITEMS + j;
            if (i < valid) {
                const uint d = (tile[i] >> shift) & MASK;
                if (i == 0 || d != ((tile[i - 1] >> shift) & MASK)) first[d] = i;
                if (i == valid - 1 || d != ((tile[i + 1] >> shift) & MASK)) last[d] = i + 1;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint j = 0; j < ITEMS; j++) {
            const uint i = j * WG + lid;
            if (i < valid) {
                const uint key = tile[i];
                const uint d = (key >> shift) & MASK;
                out[place[d] + i - first[d]] = key;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint d = lid; d < RADIX; d += WG) place[d] += last[d] - first[d];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
