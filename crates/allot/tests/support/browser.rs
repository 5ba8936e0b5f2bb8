//! A real headless Chromium for the pages' end-to-end tests (`simulate --report`'s file and
//! `serve`'s `/ui/`): run it on a URL (the DOM after the scripts ran, or a screenshot), the
//! numbers a page marks with `data-key`, no console error, and a screenshot compared with a
//! blessed colour histogram for gross regressions. The browser is `ALLOT_CHROMIUM`, else
//! Debian's `/usr/bin/chromium`; a missing browser fails the test (`cargo xtask test`
//! provisions it). tests/simulate_capacity.rs and serve_ui.rs include it with
//! `#[path = "support/browser.rs"] mod browser;`.

// Each test file uses a different part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The browser: `ALLOT_CHROMIUM`, else Debian's. A missing browser fails the test.
pub fn chromium() -> PathBuf {
    let path = std::env::var_os("ALLOT_CHROMIUM")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo xtask test`, which provisions Chromium, or set ALLOT_CHROMIUM",
        path.display()
    );
    path
}

/// Runs headless Chromium on `url` with `args` (`--dump-dom`, `--screenshot=...`), a fresh
/// profile in `profile`, and `budget_ms` of virtual time for the page's scripts (and
/// fetches); returns (stdout, stderr). The browser must exit successfully.
pub fn browse(url: &str, profile: &Path, budget_ms: u32, args: &[&str]) -> (String, String) {
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(output.status.success(), "chromium: {output:?}");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The page's script ran to its end and counted no error, and the console logged none.
pub fn assert_rendered_cleanly(dom: &str, stderr: &str) {
    assert!(dom.contains("data-ready=\"1\""), "the script ran: {stderr}");
    assert!(
        dom.contains("data-errors=\"0\""),
        "no script error: {stderr}"
    );
    for line in stderr.lines() {
        assert!(
            !(line.contains("CONSOLE") && (line.contains("Uncaught") || line.contains("rror"))),
            "console error: {line}"
        );
    }
}

/// The `data-key="K">V<` pairs of a page.
pub fn marked_numbers(dom: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(at) = rest.find("data-key=\"") {
        rest = &rest[at + 10..];
        let Some(end) = rest.find('"') else { break };
        let key = rest[..end].to_string();
        let Some(open) = rest.find('>') else { break };
        let Some(close) = rest[open..].find('<') else {
            break;
        };
        out.push((key, rest[open + 1..open + close].trim().to_string()));
        rest = &rest[open + close..];
    }
    out
}

/// Fractions of the pixels in 64 colour bins (4 levels per channel), and the size.
pub fn histogram(png_path: &Path) -> (u32, u32, Vec<f64>) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).expect("screenshot"));
    let mut reader = decoder.read_info().expect("png");
    let mut buffer = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buffer).expect("frame");
    let channels = info.color_type.samples();
    let mut bins = vec![0u64; 64];
    let pixels = &buffer[..info.buffer_size()];
    for pixel in pixels.chunks_exact(channels) {
        let bin =
            (pixel[0] as usize / 64) * 16 + (pixel[1] as usize / 64) * 4 + pixel[2] as usize / 64;
        bins[bin] += 1;
    }
    let total = (info.width as u64 * info.height as u64).max(1) as f64;
    (
        info.width,
        info.height,
        bins.iter().map(|b| *b as f64 / total).collect(),
    )
}

/// Total variation distance between two histograms: how much of the picture changed colour
/// class (0: none, 1: all of it).
pub fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| (a - b).abs()).sum::<f64>() / 2.0
}

/// Takes a screenshot of `url` at `width` x `height` into `shot` and compares its colour
/// histogram with the blessed one, `tests/golden/<golden>.histogram.json`: the size must be
/// the same and the colours must not move by more than `tolerance` (total variation), and the
/// page must not be blank (the dark header is there). `ALLOT_BLESS=1` rewrites the golden file.
pub fn compare_screenshot(
    url: &str,
    profile: &Path,
    shot: &Path,
    (width, height): (u32, u32),
    golden: &str,
    tolerance: f64,
) {
    browse(
        url,
        profile,
        5000,
        &[
            &format!("--window-size={width},{height}"),
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let (got_width, got_height, bins) = histogram(shot);
    assert_eq!((got_width, got_height), (width, height));
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{golden}.histogram.json"));
    if std::env::var_os("ALLOT_BLESS").is_some_and(|v| !v.is_empty() && v != "0") {
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "width": width, "height": height,
            "bins": bins.iter().map(|b| (b * 10_000.0).round() / 10_000.0).collect::<Vec<_>>(),
        }))
        .expect("json");
        std::fs::write(&golden, text + "\n").expect("bless");
        return;
    }
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e} (ALLOT_BLESS=1 writes it)", golden.display())),
    )
    .expect("json");
    let expected: Vec<f64> = expected["bins"]
        .as_array()
        .expect("bins")
        .iter()
        .map(|b| b.as_f64().expect("number"))
        .collect();
    let moved = distance(&bins, &expected);
    assert!(
        moved < tolerance,
        "the screenshot's colours moved by {moved:.3} (ALLOT_BLESS=1 after a deliberate change)"
    );
    // Not a blank page: the dark header is there.
    let dark: f64 = bins[0] + bins[1] + bins[4] + bins[5];
    assert!(dark > 0.01, "dark header: {dark}");
}
