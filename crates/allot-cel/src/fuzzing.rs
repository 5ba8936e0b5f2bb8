//! The fuzz target's body (`fuzz/fuzz_targets/cel.rs`), public so that a stable `cargo test`
//! replays the committed corpus through the same code.
//!
//! The input is an expression, optionally followed by a line `---` and a device description
//! (`driver NAME`, `int|string|bool|version|ints|strings NAME VALUE[,VALUE…]`, `cap NAME
//! QUANTITY`, one per line). The expression is compiled twice: with the default options (the
//! estimated cost limit) and without an estimated limit, so that evaluation meets every
//! expression the parser accepts. Each compiled expression is evaluated on the described device
//! and on two fixed ones, and the invariants are asserted:
//!
//! - nothing panics, and the evaluation's work stays within the limit (by construction: every
//!   charge is made before the work it pays for);
//! - the fast path and the interpreter agree;
//! - an evaluation the meter did not cancel gives exactly what cel-rust's own evaluation of the
//!   uninstrumented expression gives: the same value, or the same error message (when several
//!   operands fail, an error of the library's either way: the two may pick different ones);
//! - an expression within the estimated limit never costs more at run time than its estimate,
//!   unless allot's work bound cancelled it.

use crate::{AttributeValue, CelDevice, CelError, CompileOptions, compile_with};

/// Compiles and evaluates `data` as described in the module's documentation; panics when an
/// invariant does not hold.
pub fn compile_and_eval(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (expression, device_text) = match text.split_once("\n---\n") {
        Some((e, d)) => (e, Some(d)),
        None => (text, None),
    };
    let mut devices = vec![
        CelDevice::new("dra.example.com", false),
        CelDevice::new("gpu.example.com", true)
            .attribute("model", AttributeValue::String("a100".into()))
            .attribute("numa", AttributeValue::Int(1))
            .attribute("healthy", AttributeValue::Bool(true))
            .attribute("driverVersion", AttributeValue::Version("1.2.3".into()))
            .attribute(
                "zones",
                AttributeValue::StringList(vec!["a".into(), "b".into()]),
            )
            .capacity("memory", "40Gi".parse().unwrap_or_default()),
    ];
    if let Some(d) = device_text {
        devices.push(parse_device(d));
    }
    let estimated = compile_with(expression, CompileOptions::default());
    let unlimited = compile_with(
        expression,
        CompileOptions {
            cost_limit: u64::MAX,
            ..CompileOptions::default()
        },
    );
    match (&estimated, &unlimited) {
        (Ok(_), Err(e)) => panic!("compiles only with the cost limit: {e}"),
        (Err(CelError::CostLimitExceeded { .. }), Ok(_)) | (Err(_), Err(_)) => {}
        (Err(e), Ok(_)) => panic!("compiles only without the cost limit: {e}"),
        (Ok(a), Ok(b)) => assert_eq!(a.max_cost(), b.max_cost()),
    }
    let Ok(compiled) = unlimited else {
        return;
    };
    let within_estimate = estimated.is_ok();
    for device in &devices {
        let (result, usage) = compiled.evaluate_with_usage(device);
        assert!(
            usage.work <= crate::EVALUATION_WORK_LIMIT,
            "work {} beyond the limit: {expression}",
            usage.work
        );
        if within_estimate && !usage.exceeded {
            assert!(
                usage.cost <= compiled.max_cost(),
                "run-time cost {} above the estimate {}: {expression}",
                usage.cost,
                compiled.max_cost()
            );
        }
        if compiled.has_fast_path() {
            let fast = compiled.evaluate(device);
            assert_eq!(fast, result, "fast path and interpreter: {expression}");
        }
        if result != Err(CelError::RuntimeCostLimitExceeded) {
            let native = compiled.evaluate_uninstrumented(device);
            match (
                result.map_err(|e| e.to_string()),
                native.map_err(|e| e.to_string()),
            ) {
                // When a member call's receiver and one of its arguments both fail, the metered
                // call reports the receiver's error, as cel-go does (it evaluates the receiver
                // first and returns the first error); cel-rust's own evaluation may report the
                // argument's. Either way it is an error, and one in the library's words.
                (Err(metered), Err(plain)) if metered != plain => {
                    assert!(
                        !metered.contains(crate::instrument::PREFIX),
                        "metered evaluation names a metering function: {metered}: {expression}"
                    );
                }
                (metered, plain) => {
                    assert_eq!(metered, plain, "metered and plain evaluation: {expression}")
                }
            }
        }
    }
}

fn parse_device(text: &str) -> CelDevice {
    let mut driver = "dra.example.com";
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("driver ") {
            driver = name.trim();
        }
    }
    let mut device = CelDevice::new(driver, text.contains("multi"));
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(kind), Some(name), Some(value)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let list = || value.split(',').map(str::to_string).collect::<Vec<_>>();
        let attribute = match kind {
            "int" => value.parse().ok().map(AttributeValue::Int),
            "bool" => value.parse().ok().map(AttributeValue::Bool),
            "string" => Some(AttributeValue::String(value.to_string())),
            "version" => Some(AttributeValue::Version(value.to_string())),
            "ints" => Some(AttributeValue::IntList(
                value.split(',').filter_map(|v| v.parse().ok()).collect(),
            )),
            "strings" => Some(AttributeValue::StringList(list())),
            "cap" => {
                if let Ok(q) = value.parse() {
                    device = device.capacity(name, q);
                }
                None
            }
            _ => None,
        };
        if let Some(a) = attribute {
            device = device.attribute(name, a);
        }
    }
    device
}
