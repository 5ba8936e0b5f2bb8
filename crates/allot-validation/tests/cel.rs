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
