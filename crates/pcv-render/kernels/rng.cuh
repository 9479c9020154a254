// Counter-based random numbers: value k of point i depends only on (seed, i, k), so any thread (or CPU
// core) can produce any point. CPU twin: src/twins/rng.rs.
#pragma once
#include <stdint.h>

// SplitMix64's finalizer: a bijective 64-bit mix.
__device__ __forceinline__ uint64_t pcv_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Uniform float in [0, 1) with 24 random bits (exact: a 24-bit integer times 2^-24).
__device__ __forceinline__ float pcv_uniform(uint64_t seed, uint64_t i, uint32_t k) {
    uint64_t h = pcv_mix64(pcv_mix64(seed ^ 0x9e3779b97f4a7c15ull) + i * 8ull + (uint64_t)k);
    return (float)(uint32_t)(h >> 40) * (1.0f / 16777216.0f);
}

// sin and cos of 2*pi*u for u in [0, 1), with plain round-to-nearest multiplies and adds (no FMA, no
// library call) so the CPU twin gets the same bits: quadrant from 4u, then Taylor polynomials on
// [0, pi/2) (error below 1e-7).
__device__ __forceinline__ void pcv_sincos_2pi(float u, float* s, float* c) {
    float t = __fmul_rn(u, 4.0f);
    float qf = floorf(t);
    int q = (int)qf;
    float x = __fmul_rn(__fadd_rn(t, -qf), 1.57079632679489662f);
    float x2 = __fmul_rn(x, x);
    // sin x = x (1 - x^2/3! (1 - x^2/(4*5) (1 - x^2/(6*7) (1 - x^2/(8*9) (1 - x^2/(10*11))))))
    float ps = __fadd_rn(1.0f, -__fmul_rn(x2, 1.0f / 110.0f));
    ps = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 1.0f / 72.0f), ps));
    ps = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 1.0f / 42.0f), ps));
    ps = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 1.0f / 20.0f), ps));
    ps = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 1.0f / 6.0f), ps));
    float sn = __fmul_rn(x, ps);
    // cos x = 1 - x^2/2! (1 - x^2/(3*4) (1 - x^2/(5*6) (1 - x^2/(7*8) (1 - x^2/(9*10) (1 - x^2/(11*12))))))
    float pc = __fadd_rn(1.0f, -__fmul_rn(x2, 1.0f / 132.0f));
    pc = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 1.0f / 90.0f), pc));
    pc = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 1.0f / 56.0f), pc));
    pc = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 1.0f / 30.0f), pc));
    pc = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 1.0f / 12.0f), pc));
    float cs = __fadd_rn(1.0f, -__fmul_rn(__fmul_rn(x2, 0.5f), pc));
    switch (q & 3) {
        case 0: *s = sn; *c = cs; break;
        case 1: *s = cs; *c = -sn; break;
        case 2: *s = -sn; *c = -cs; break;
        default: *s = -cs; *c = sn; break;
    }
}
