//! The embedded kernels, checked without a GPU (runs in CI): every kernel the host launches is an
//! `.entry` of its module's PTX with the parameter sizes the host's launch table passes, every PTX has
//! `.version` <= 9.0 (what driver 580 / CUDA 13.0 loads), and every module has a fatbin.
//!
//! A build without nvcc embeds no kernels: then these tests fail when `PCV_REQUIRE_KERNELS=1` (CI sets
//! it, so a CI build that silently lost its kernels is caught) and otherwise print why and pass.
use pcv_render::cuda::modules::{image, ptx_version};
use pcv_render::cuda::{KERNELS, LAUNCHED_KERNELS, NVCC_RELEASE};

/// The newest PTX ISA the GPU machine's driver (580, CUDA 13.0) loads.
const MAX_PTX_VERSION: (u32, u32) = (9, 0);
/// A fatbin's header magic (`0xBA55ED50`, little-endian).
const FATBIN_MAGIC: [u8; 4] = [0x50, 0xed, 0x55, 0xba];

/// True when there are kernels to check; panics when they are required but missing.
fn kernels_present() -> bool {
    if !KERNELS.is_empty() {
        return true;
    }
    let why = "this build embeds no kernels (build.rs found no nvcc: run scripts/setup.sh or set NVCC)";
    if std::env::var("PCV_REQUIRE_KERNELS").is_ok_and(|v| v == "1") {
        panic!("PCV_REQUIRE_KERNELS=1 but {why}");
    }
    eprintln!("skipping: {why}");
    false
}

/// The names of the `.entry` directives of a PTX text.
fn entries(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| {
            let l = l.trim();
            let i = l.find(".entry ")?;
            let rest = l[i + ".entry ".len()..].trim_start();
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')).unwrap_or(rest.len());
            Some(&rest[..end])
        })
        .collect()
}

#[test]
fn every_launched_kernel_is_an_entry_of_its_module() {
    if !kernels_present() {
        return;
    }
    for k in LAUNCHED_KERNELS {
        let img = image(k.module).unwrap_or_else(|| {
            panic!("the host launches {} from kernels/{}.cu, which this build does not embed", k.entry, k.module)
        });
        let found = entries(img.ptx);
        assert!(
            found.contains(&k.entry),
            "kernels/{}.cu's PTX has entries {found:?}, not {} which the host launches",
            k.module,
            k.entry
        );
        println!("kernels/{}.cu: .entry {} found", k.module, k.entry);
    }
}

/// The sizes in bytes of the parameters of `.entry name(...)` in a PTX text, in order.
fn param_sizes(ptx: &str, name: &str) -> Option<Vec<usize>> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let body = &ptx[start..start + ptx[start..].find(')')?];
    let sizes = body
        .lines()
        .skip(1)
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',');
            let rest = l.strip_prefix(".param ")?;
            if let Some(open) = rest.rfind('[') {
                return rest[open + 1..rest.len() - 1].parse().ok();
            }
            let ty = rest.split_whitespace().next()?;
            ty.trim_start_matches('.').get(1..)?.parse::<usize>().ok().map(|bits| bits / 8)
        })
        .collect();
    Some(sizes)
}

#[test]
fn every_launch_passes_the_parameter_sizes_of_its_entry() {
    if !kernels_present() {
        return;
    }
    for k in LAUNCHED_KERNELS {
        let img = image(k.module).unwrap_or_else(|| panic!("no module {}", k.module));
        let found =
            param_sizes(img.ptx, k.entry).unwrap_or_else(|| panic!("no .entry {} in kernels/{}.cu", k.entry, k.module));
        assert_eq!(
            found, k.param_bytes,
            "{} in kernels/{}.cu takes parameters of {found:?} bytes; the launch table passes {:?}",
            k.entry, k.module, k.param_bytes
        );
    }
    println!("{} launches match their entries' parameter lists", LAUNCHED_KERNELS.len());
}

#[test]
fn every_ptx_version_loads_on_driver_580() {
    if !kernels_present() {
        return;
    }
    println!("built with: {NVCC_RELEASE}");
    for k in KERNELS {
        let v = ptx_version(k.ptx).unwrap_or_else(|| panic!("kernels/{}.cu's PTX has no .version line", k.name));
        assert!(
            v <= MAX_PTX_VERSION,
            "kernels/{}.cu's PTX is .version {}.{}, newer than {}.{} (CUDA 13.0 / driver 580 refuses it): \
             pin nvidia-nvvm to the nvcc release (scripts/setup.sh) ({NVCC_RELEASE})",
            k.name,
            v.0,
            v.1,
            MAX_PTX_VERSION.0,
            MAX_PTX_VERSION.1
        );
        assert!(k.ptx.contains(".target sm_80"), "kernels/{}.cu's PTX is not for compute_80", k.name);
        println!("kernels/{}.cu: PTX .version {}.{}", k.name, v.0, v.1);
    }
}

#[test]
fn every_module_has_a_fatbin() {
    if !kernels_present() {
        return;
    }
    for k in KERNELS {
        assert!(k.fatbin.len() > 16, "kernels/{}.cu has an empty fatbin ({} bytes)", k.name, k.fatbin.len());
        assert_eq!(k.fatbin[..4], FATBIN_MAGIC, "kernels/{}.cu's fatbin does not start with the fatbin magic", k.name);
        println!("kernels/{}.cu: fatbin of {} bytes", k.name, k.fatbin.len());
    }
}

#[test]
fn entry_parser_reads_nvcc_style_lines() {
    let ptx = ".version 9.0\n.target sm_80\n.visible .entry pcv_clear(\n\t.param .align 4 .b8 pcv_clear_param_0[80],\n";
    assert_eq!(entries(ptx), vec!["pcv_clear"]);
    assert_eq!(ptx_version(ptx), Some((9, 0)));
    assert_eq!(ptx_version(".version 10.12\n"), Some((10, 12)));
    assert_eq!(ptx_version("// no version\n"), None);
    let ptx = ".visible .entry pcv_x(\n\t.param .align 4 .b8 pcv_x_param_0[112],\n\t.param .u64 pcv_x_param_1,\n\t.param .u32 pcv_x_param_2\n)\n{";
    assert_eq!(param_sizes(ptx, "pcv_x"), Some(vec![112, 8, 4]));
}
