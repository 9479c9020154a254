//! Compiles every `kernels/*.cu` with nvcc at build time and embeds the results.
//!
//! How it works: nvcc is looked up in `NVCC`, then `CUDA_PATH`/`CUDA_HOME` (`bin/nvcc`), then `PATH`, then
//! the toolkit that `scripts/setup.sh` installs from PyPI into `.tools/cuda`. Each kernel becomes
//!
//! - PTX for `compute_80` (text; its `.version` must stay <= 9.0 for driver 580 / CUDA 13.0), and
//! - a fatbin with machine code for sm_80, sm_86, sm_89 and sm_90 plus that PTX, which the host loads.
//!
//! `OUT_DIR/kernels.rs` lists them (`KERNELS`) with `include_str!`/`include_bytes!`. With no nvcc, the
//! list is empty, the crate builds CPU-only, and a cargo warning says so.
//!
//! Build scripts run on the build machine, so the nvcc is the host's: a Linux build for Windows
//! (`scripts/build-windows.sh`, target `x86_64-pc-windows-gnu`) embeds the PTX and fatbins of the Linux
//! nvcc, which are the same files a Windows nvcc makes (they hold device code only). On a Windows host
//! the names are `nvcc.exe` (`%CUDA_PATH%\bin`, or PyPI's in `.tools\cuda\nvidia\cu13\bin`), and nvcc
//! needs MSVC's `cl.exe` as its host compiler: when `cl.exe` is not on `PATH` (a plain console rather
//! than a Developer Command Prompt) it is looked up in the Visual Studio installation the way the `cc`
//! crate finds it, and passed with `-ccbin` and its environment (`INCLUDE`, `LIB`, `PATH`). Paths are
//! passed as single arguments, so folders with spaces (`C:\Program Files\...`) need no quoting.
use std::path::{Path, PathBuf};
use std::process::Command;

const ARCHS: &[&str] = &["80", "86", "89", "90"];
const MAX_PTX_VERSION: (u32, u32) = (9, 0);

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    // The workspace's root (crates/pcv-render/../..): where the repository and `.tools` are.
    let root = manifest.join("../..").canonicalize().unwrap_or_else(|_| manifest.join("../.."));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let kernel_dir = manifest.join("kernels");
    // The commit the binary was built from, for bench reports.
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PCV_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves (a commit updates the branch's ref file).
    let head = root.join(".git/HEAD");
    if head.exists() {
        println!("cargo:rerun-if-changed={}", head.display());
        if let Some(r) =
            std::fs::read_to_string(&head).ok().and_then(|s| s.strip_prefix("ref: ").map(|r| r.trim().to_string()))
        {
            if root.join(".git").join(&r).exists() {
                println!("cargo:rerun-if-changed={}", root.join(".git").join(r).display());
            }
        }
    }
    println!("cargo:rerun-if-changed=kernels");
    for var in ["NVCC", "CUDA_PATH", "CUDA_HOME", "PATH", "PCV_NO_NVCC"] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    let mut sources: Vec<PathBuf> = std::fs::read_dir(&kernel_dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    sources.sort();
    for s in &sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    let cu: Vec<&PathBuf> = sources.iter().filter(|p| p.extension().is_some_and(|e| e == "cu")).collect();

    let mut nvcc = find_nvcc(&root);
    // Rebuild when the toolkit changes or appears: watch the nvcc found; without one, watch `.tools`
    // (scripts/setup.sh installs PyPI's nvcc into .tools/cuda after a first, CPU-only build). Where
    // `.tools` does not exist yet, setup.sh touches this file after installing (cargo reruns a build
    // script whenever a watched path is missing, so a missing `.tools` is not watched).
    match &nvcc {
        Some(found) => println!("cargo:rerun-if-changed={}", found.display()),
        None if root.join(".tools").is_dir() => {
            println!("cargo:rerun-if-changed={}", root.join(".tools").display())
        }
        None => {}
    }
    // On a Windows host nvcc compiles nothing without MSVC's cl.exe.
    let host_compiler = match &nvcc {
        Some(found) if cfg!(windows) => match msvc_host_compiler() {
            Ok(h) => h,
            Err(why) => {
                println!(
                    "cargo:warning=pcv: {} was found, but {why}: building CPU-only; install Visual Studio (Build \
                     Tools) with \"Desktop development with C++\", or build from a Developer Command Prompt",
                    found.display()
                );
                nvcc = None;
                None
            }
        },
        _ => None,
    };
    let mut entries = String::new();
    let mut nvcc_version = String::new();
    match &nvcc {
        None => println!(
            "cargo:warning=pcv: no nvcc found (NVCC, CUDA_PATH, CUDA_HOME, PATH, .tools/cuda): building CPU-only; \
             run scripts/setup.sh or set NVCC for the CUDA backend"
        ),
        Some(nvcc) => {
            nvcc_version = Command::new(nvcc)
                .arg("--version")
                .output()
                .ok()
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .and_then(|s| s.lines().find(|l| l.contains("release")).map(|l| l.trim().to_string()))
                .unwrap_or_default();
            let kdir = out.join("kernels");
            std::fs::create_dir_all(&kdir).unwrap();
            for src in &cu {
                let name = src.file_stem().unwrap().to_str().unwrap().to_string();
                let ptx = kdir.join(format!("{name}.ptx"));
                let fatbin = kdir.join(format!("{name}.fatbin"));
                run_nvcc(nvcc, host_compiler.as_ref(), &kernel_dir, src, &["-ptx", "-arch=compute_80"], &ptx);
                let mut gencode: Vec<String> =
                    ARCHS.iter().map(|a| format!("-gencode=arch=compute_{a},code=sm_{a}")).collect();
                gencode.push("-gencode=arch=compute_80,code=compute_80".into());
                let mut args: Vec<&str> = vec!["-fatbin"];
                args.extend(gencode.iter().map(|s| s.as_str()));
                run_nvcc(nvcc, host_compiler.as_ref(), &kernel_dir, src, &args, &fatbin);
                check_ptx_version(&ptx);
                entries.push_str(&format!(
                    "    KernelImage {{ name: {name:?}, ptx: include_str!({:?}), fatbin: include_bytes!({:?}) }},\n",
                    ptx.display().to_string(),
                    fatbin.display().to_string()
                ));
            }
        }
    }
    let code = format!(
        "/// The kernels compiled by build.rs (empty when the crate was built without nvcc).\n\
         pub const KERNELS: &[KernelImage] = &[\n{entries}];\n\
         /// `nvcc --version`'s release line, or empty.\n\
         pub const NVCC_RELEASE: &str = {nvcc_version:?};\n"
    );
    std::fs::write(out.join("kernels.rs"), code).unwrap();
}

fn find_nvcc(root: &Path) -> Option<PathBuf> {
    if std::env::var("PCV_NO_NVCC").is_ok_and(|v| v == "1") {
        return None;
    }
    let exe = if cfg!(windows) { "nvcc.exe" } else { "nvcc" };
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(p) = std::env::var("NVCC") {
        candidates.push(PathBuf::from(p));
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Ok(p) = std::env::var(var) {
            candidates.push(Path::new(&p).join("bin").join(exe));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join(exe)));
    }
    candidates.push(root.join(".tools/cuda/nvidia/cu13/bin").join(exe));
    candidates.into_iter().find(|p| p.is_file())
}

/// MSVC's cl.exe for nvcc on a Windows host: `None` when it is on `PATH` already (nvcc finds it there),
/// else its folder (for `-ccbin`) and the environment it needs, as the `cc` crate finds them.
fn msvc_host_compiler() -> Result<Option<HostCompiler>, String> {
    if let Some(path) = std::env::var_os("PATH") {
        if std::env::split_paths(&path).any(|d| d.join("cl.exe").is_file()) {
            return Ok(None);
        }
    }
    let tool = cc::windows_registry::find_tool("x86_64", "cl.exe")
        .ok_or_else(|| "MSVC's cl.exe, which nvcc needs as its host compiler, was not found".to_string())?;
    let dir = tool
        .path()
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("{} has no folder", tool.path().display()))?;
    let env = tool.get_envs().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
    Ok(Some(HostCompiler { dir, env }))
}

/// A host compiler nvcc does not find by itself.
struct HostCompiler {
    /// The folder holding cl.exe (nvcc's `-ccbin`).
    dir: PathBuf,
    /// Variables cl.exe needs (INCLUDE, LIB, PATH).
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

fn run_nvcc(nvcc: &Path, host: Option<&HostCompiler>, include: &Path, src: &Path, mode: &[&str], out: &Path) {
    let mut cmd = Command::new(nvcc);
    if let Some(h) = host {
        cmd.arg("-ccbin").arg(&h.dir).envs(h.env.iter().map(|(k, v)| (k, v)));
    }
    let output = cmd
        .args(mode)
        .args(["-O3", "-std=c++17", "-I"])
        .arg(include)
        .arg(src)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("pcv: could not run {}: {e}", nvcc.display()));
    if !output.status.success() {
        panic!(
            "pcv: nvcc failed on {}:\n{}{}",
            src.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

fn check_ptx_version(ptx: &Path) {
    let text = std::fs::read_to_string(ptx).unwrap();
    let version = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(".version "))
        .and_then(|v| v.trim().split_once('.'))
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    match version {
        Some(v) if v <= MAX_PTX_VERSION => {}
        Some((a, b)) => println!(
            "cargo:warning=pcv: {} has PTX .version {a}.{b}, newer than {}.{} (driver 580 / CUDA 13.0 rejects it); \
             pin nvidia-nvvm to the nvcc release (scripts/setup.sh does) or use a CUDA 13.0 toolkit",
            ptx.display(),
            MAX_PTX_VERSION.0,
            MAX_PTX_VERSION.1
        ),
        None => println!("cargo:warning=pcv: no .version line in {}", ptx.display()),
    }
}
