//! Selectors and derived attributes go through the real DRA CEL environment: compile errors
//! and wrong result types are reported on the expression's field.

use allot_validation::{CelCompiler, CelErrorKind, DraCel, ExpressionKind};

#[test]
fn dra_cel_accepts_selectors_and_reports_errors() {
    let cases = [
        (
            "device.driver == \"gpu.example.com\"",
            ExpressionKind::Selector,
            None,
        ),
        (
            "device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0",
            ExpressionKind::Selector,
            None,
        ),
        (
            "device.driver ==",
            ExpressionKind::Selector,
            Some(CelErrorKind::Invalid),
        ),
        (
            "device.nope",
            ExpressionKind::Selector,
            Some(CelErrorKind::Invalid),
        ),
        (
            "device.driver",
            ExpressionKind::Selector,
            Some(CelErrorKind::Invalid),
        ),
        ("device.driver", ExpressionKind::DerivedAttribute, None),
        ("", ExpressionKind::Selector, Some(CelErrorKind::Required)),
    ];
    let mut failures = Vec::new();
    for (expression, kind, want) in cases {
        let got = DraCel.compile(expression, kind).err().map(|e| e.kind);
        if got != want {
            failures.push(format!(
                "{expression:?} ({kind:?}): want {want:?}, got {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 15: the estimate of the selector whose evaluation crash-looped the server is upstream's
/// (far over `CELSelectorExpressionMaxCost`, so validation reports "too complex, exceeds cost
/// limit"), and constant regex patterns that do not compile are rejected as upstream does.
#[test]
fn dra_cel_estimates_growing_strings_like_upstream() {
    let a100 = "a".repeat(100);
    let mut bomb = format!("'{a100}'");
    for _ in 0..4 {
        bomb.push_str(&format!(".replace('a', '{a100}')"));
    }
    bomb.push_str(".size() > 0");
    assert_eq!(
        DraCel.compile(&bomb, ExpressionKind::Selector),
        Ok(20_202_022)
    );
    let invalid = DraCel
        .compile("device.driver.matches('(')", ExpressionKind::Selector)
        .expect_err("invalid pattern");
    assert_eq!(invalid.kind, CelErrorKind::Invalid);
    assert!(
        invalid.detail.contains("invalid matches argument"),
        "{}",
        invalid.detail
    );
    let invalid = DraCel
        .compile("device.driver.find('(') == ''", ExpressionKind::Selector)
        .expect_err("invalid pattern");
    assert_eq!(invalid.kind, CelErrorKind::Internal);
}
