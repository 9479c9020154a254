//! The module's rasterizers: one CUDA backend and one CPU backend per process, made on first use.
//!
//! How it works: `pcv.render` renders with one of two rasterizers kept behind mutexes: the CUDA
//! backend (device 0's primary context — the one CuPy, PyTorch and Numba use, so their pointers are
//! valid here — its kernels and its one non-blocking stream) and the CPU backend. The CUDA one is
//! opened the first time a call needs it; if that fails (no driver, no device, a build without
//! kernels) the reason is kept and given in every error that needed CUDA, and `auto` falls back to the
//! CPU. Calls release the GIL while they render; the mutexes order concurrent calls from several
//! Python threads. `pcv.Viewer` windows have rasterizers of their own, on their own threads.
use pcv_render::cpu::CpuRasterizer;
use pcv_render::cuda::CudaRasterizer;
use std::sync::{Mutex, MutexGuard};

/// Which backend a call asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    Auto,
    Cpu,
    Cuda,
}

impl Choice {
    pub fn parse(s: &str) -> Result<Choice, String> {
        match s {
            "auto" => Ok(Choice::Auto),
            "cpu" => Ok(Choice::Cpu),
            "cuda" => Ok(Choice::Cuda),
            _ => Err(format!("backend: expected 'auto', 'cpu' or 'cuda', got '{s}'")),
        }
    }

    pub fn library(self) -> pcv_render::BackendChoice {
        match self {
            Choice::Auto => pcv_render::BackendChoice::Auto,
            Choice::Cpu => pcv_render::BackendChoice::Cpu,
            Choice::Cuda => pcv_render::BackendChoice::Cuda,
        }
    }
}

/// The CUDA rasterizer, moved between the threads that call into the module.
pub struct SendCuda(pub CudaRasterizer);

// SAFETY: every driver handle in a CudaRasterizer (context, stream, events, modules, device memory) may
// be used from any thread once its context is bound there, which each of its calls does first
// (`bind_to_thread`); the mutex below lets one thread at a time use it.
unsafe impl Send for SendCuda {}

static CUDA: Mutex<Option<Result<SendCuda, String>>> = Mutex::new(None);
static CPU: Mutex<Option<CpuRasterizer>> = Mutex::new(None);

fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` with the CUDA rasterizer (opening it first if needed), or says why there is none.
pub fn with_cuda<R>(f: impl FnOnce(&mut CudaRasterizer) -> R) -> Result<R, String> {
    let mut g = lock(&CUDA);
    if g.is_none() {
        *g = Some(CudaRasterizer::new().map(SendCuda).map_err(|e| e.to_string()));
    }
    match g.as_mut() {
        Some(Ok(r)) => Ok(f(&mut r.0)),
        Some(Err(why)) => Err(why.clone()),
        None => Err("the CUDA backend could not be opened".into()),
    }
}

/// The CUDA rasterizer's stream number (what `__dlpack__(stream=...)` is given), or why there is none.
pub fn cuda_stream() -> Result<u64, String> {
    with_cuda(|r| r.stream_number())
}

/// Runs `f` with the CPU rasterizer.
pub fn with_cpu<R>(f: impl FnOnce(&mut CpuRasterizer) -> R) -> R {
    let mut g = lock(&CPU);
    f(g.get_or_insert_with(CpuRasterizer::new))
}
