//! Upstream's DRA CEL test table (dynamic-resource-allocation/cel/compile_test.go), transcribed
//! as data: expression, device, expected match or error, expected worst-case cost.

use super::*;
use allot_quantity::Quantity;

const DRIVER: &str = "dra.example.com";

enum Want {
    Match(bool),
    CompileError(&'static str),
    EvalError(&'static str),
}

struct Case {
    name: &'static str,
    expression: String,
    device: CelDevice,
    want: Want,
    /// Upstream's expected worst-case cost (`None` when it states none).
    cost: Option<u64>,
}

fn device() -> CelDevice {
    CelDevice::new(DRIVER, false)
}

fn q(s: &str) -> Quantity {
    s.parse().expect("test quantity")
}

fn case(
    name: &'static str,
    expression: &str,
    device: CelDevice,
    want: Want,
    cost: Option<u64>,
) -> Case {
    Case {
        name,
        expression: expression.to_string(),
        device,
        want,
        cost,
    }
}

fn upstream_cases() -> Vec<Case> {
    use AttributeValue as A;
    use Want::*;
    let n = 64; // maxElementsListTypeEnabled
    let many: Vec<String> = (0..48).map(|i| format!("value-{i}")).collect();
    let too_many: Vec<String> = (0..49).map(|i| format!("value-{i}")).collect();
    let name = |v: A| device().attribute("name", v);
    vec![
        case("true", "true", device(), Match(true), Some(0)),
        case("false", "false", device(), Match(false), Some(0)),
        case(
            "syntax-error",
            "?!",
            device(),
            CompileError("Syntax error"),
            None,
        ),
        case(
            "type-error",
            "1",
            device(),
            CompileError("must evaluate to bool or the unknown type, not int"),
            None,
        ),
        case(
            "runtime-error-lookup-identifier",
            r#"device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))"#,
            device(),
            EvalError("no such key: noSuchAttr"),
            Some(6),
        ),
        case(
            "runtime-error-lookup-map",
            r#"device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))"#,
            device(),
            EvalError("no such key: noSuchAttr"),
            Some(6),
        ),
        case(
            "domain-check-negative",
            r#""no-such-domain" in device.attributes"#,
            device(),
            Match(false),
            Some(3),
        ),
        case(
            "domain-check-positive",
            r#""dra.example.com" in device.attributes"#,
            device().attribute("dra.example.com/something", A::Bool(true)),
            Match(true),
            Some(3),
        ),
        case(
            "empty-driver-name",
            r#"device.driver == """#,
            CelDevice::new("", false),
            Match(true),
            Some(2),
        ),
        case(
            "real-driver-name",
            r#"device.driver == "dra.example.com""#,
            device(),
            Match(true),
            Some(4),
        ),
        case(
            "driver-name-qualifier",
            r#"device.attributes["dra.example.com"].name"#,
            name(A::Bool(true)),
            Match(true),
            Some(4),
        ),
        case(
            "driver-name-qualifier-map-lookup",
            r#"device.attributes["dra.example.com"]["name"]"#,
            name(A::Bool(true)),
            Match(true),
            Some(4),
        ),
        case(
            "bind",
            r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name)"#,
            name(A::Bool(true)),
            Match(true),
            Some(15),
        ),
        case(
            "qualified-attribute-name",
            r#"device.attributes["other.example.com"].name"#,
            device().attribute("other.example.com/name", A::Bool(true)),
            Match(true),
            Some(4),
        ),
        case(
            "int",
            r#"device.attributes["dra.example.com"].name > 0"#,
            name(A::Int(1)),
            Match(true),
            Some(5),
        ),
        case(
            "string",
            r#"device.attributes["dra.example.com"].name == "fish""#,
            name(A::String("fish".into())),
            Match(true),
            Some(5),
        ),
        case(
            "macro-exists-on-int",
            r#"device.attributes["dra.example.com"].name.exists(x, x > 0)"#,
            name(A::Int(1)),
            EvalError(""),
            Some(5 + 6 * n),
        ),
        case(
            "list-of-bool",
            r#"device.attributes["dra.example.com"].names.size() == 2"#,
            device().attribute("names", A::BoolList(vec![true, false])),
            Match(true),
            Some(6),
        ),
        case(
            "list-of-int",
            r#"device.attributes["dra.example.com"].names.size() == 2"#,
            device().attribute("names", A::IntList(vec![1, 2])),
            Match(true),
            Some(6),
        ),
        case(
            "list-of-string",
            r#"device.attributes["dra.example.com"].names.size() == 2"#,
            device().attribute("names", A::StringList(vec!["fish".into(), "bird".into()])),
            Match(true),
            Some(6),
        ),
        case(
            "list-of-semver",
            r#"device.attributes["dra.example.com"].names.size() == 2"#,
            device().attribute(
                "names",
                A::VersionList(vec!["1.0.0".into(), "2.0.0".into()]),
            ),
            Match(true),
            Some(6),
        ),
        case(
            "macro-on-list-of-int",
            r#"device.attributes["dra.example.com"].names.exists(x, x > 0)"#,
            device().attribute("names", A::IntList(vec![1, 2])),
            Match(true),
            Some(5 + 6 * n),
        ),
        case(
            "macro-on-list-of-string",
            r#"device.attributes["dra.example.com"].names.all(x, x != "")"#,
            device().attribute("names", A::StringList(vec!["fish".into(), "bird".into()])),
            Match(true),
            Some(5 + 4 * n),
        ),
        case(
            "macro-on-list-of-semver",
            r#"device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1")))"#,
            device().attribute(
                "names",
                A::VersionList(vec!["1.0.0".into(), "2.0.0".into()]),
            ),
            Match(true),
            Some(5 + 6 * n),
        ),
        case(
            "includes-bool-scalar-positive",
            r#"device.attributes["dra.example.com"].name.includes(true)"#,
            name(A::Bool(true)),
            Match(true),
            Some(52),
        ),
        case(
            "includes-bool-scalar-negative",
            r#"device.attributes["dra.example.com"].name.includes(true)"#,
            name(A::Bool(false)),
            Match(false),
            Some(52),
        ),
        case(
            "includes-bool-list-positive",
            r#"device.attributes["dra.example.com"].name.includes(true)"#,
            name(A::BoolList(vec![true, false])),
            Match(true),
            Some(52),
        ),
        case(
            "includes-bool-list-negative",
            r#"device.attributes["dra.example.com"].name.includes(false)"#,
            name(A::BoolList(vec![true, true])),
            Match(false),
            Some(52),
        ),
        case(
            "includes-int-scalar-positive",
            r#"device.attributes["dra.example.com"].name.includes(1)"#,
            name(A::Int(1)),
            Match(true),
            Some(52),
        ),
        case(
            "includes-int-scalar-negative",
            r#"device.attributes["dra.example.com"].name.includes(1)"#,
            name(A::Int(2)),
            Match(false),
            Some(52),
        ),
        case(
            "includes-int-list-positive",
            r#"device.attributes["dra.example.com"].name.includes(1)"#,
            name(A::IntList(vec![1, 2])),
            Match(true),
            Some(52),
        ),
        case(
            "includes-int-list-negative",
            r#"device.attributes["dra.example.com"].name.includes(3)"#,
            name(A::IntList(vec![1, 2])),
            Match(false),
            Some(52),
        ),
        case(
            "includes-string-scalar-positive",
            r#"device.attributes["dra.example.com"].name.includes("fish")"#,
            name(A::String("fish".into())),
            Match(true),
            Some(52),
        ),
        case(
            "includes-string-scalar-negative",
            r#"device.attributes["dra.example.com"].name.includes("bird")"#,
            name(A::String("fish".into())),
            Match(false),
            Some(52),
        ),
        case(
            "includes-string-list-positive",
            r#"device.attributes["dra.example.com"].name.includes("fish")"#,
            name(A::StringList(vec!["fish".into(), "bird".into()])),
            Match(true),
            Some(52),
        ),
        case(
            "includes-string-list-negative",
            r#"device.attributes["dra.example.com"].name.includes("cat")"#,
            name(A::StringList(vec!["fish".into(), "bird".into()])),
            Match(false),
            Some(52),
        ),
        case(
            "includes-semver-scalar-positive",
            r#"device.attributes["dra.example.com"].name.includes(semver("1.0.0"))"#,
            name(A::Version("1.0.0".into())),
            Match(true),
            Some(53),
        ),
        case(
            "includes-semver-scalar-negative",
            r#"device.attributes["dra.example.com"].name.includes(semver("2.0.0"))"#,
            name(A::Version("1.0.0".into())),
            Match(false),
            Some(53),
        ),
        case(
            "includes-semver-list-positive",
            r#"device.attributes["dra.example.com"].name.includes(semver("1.0.0"))"#,
            name(A::VersionList(vec!["1.0.0".into(), "2.0.0".into()])),
            Match(true),
            Some(53),
        ),
        case(
            "includes-semver-list-negative",
            r#"device.attributes["dra.example.com"].name.includes(semver("3.0.0"))"#,
            name(A::VersionList(vec!["1.0.0".into(), "2.0.0".into()])),
            Match(false),
            Some(53),
        ),
        case(
            "includes-very-long-list-positive",
            r#"device.attributes["dra.example.com"].name.includes("value-48")"#,
            name(A::StringList(many)),
            Match(false),
            Some(52),
        ),
        case(
            "includes-very-long-list-runtime-error",
            r#"device.attributes["dra.example.com"].name.includes("value-49")"#,
            name(A::StringList(too_many)),
            EvalError("'includes' function cannot be applied to lists longer than 48 values"),
            Some(52),
        ),
        case(
            "in-operator-on-list",
            r#"1 in device.attributes["dra.example.com"].names"#,
            device().attribute("names", A::IntList(vec![1, 2, 3])),
            Match(true),
            Some(4 + 64),
        ),
        case(
            "version",
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))"#,
            name(A::Version("1.0.0".into())),
            Match(true),
            Some(6),
        ),
        case(
            "version_v",
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)"#,
            name(A::Version("1.0.0".into())),
            Match(true),
            Some(7),
        ),
        case(
            "macro-exists-on-version",
            r#"device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))"#,
            name(A::Version("1.0.0".into())),
            EvalError(""),
            Some(5 + 7 * n),
        ),
        case(
            "quantity",
            r#"device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            device().capacity("name", q("1Mi")),
            Match(true),
            Some(6),
        ),
        case(
            "check-positive",
            r#""name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            device().capacity("name", q("1Mi")),
            Match(true),
            Some(10),
        ),
        case(
            "check-negative",
            r#"!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            device(),
            Match(true),
            Some(11),
        ),
        case(
            "all",
            r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#,
            device()
                .attribute("bool", A::Bool(true))
                .attribute("int", A::Int(1))
                .attribute("string", A::String("fish".into()))
                .attribute("version", A::Version("1.0.0".into()))
                .capacity("quantity", q("1Mi")),
            Match(true),
            Some(52),
        ),
        case(
            "many",
            r#"device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c"#,
            device()
                .attribute("a", A::Bool(true))
                .attribute("b", A::Bool(true))
                .attribute("c", A::Bool(true)),
            Match(true),
            Some(12),
        ),
        case(
            "check_attribute_domains",
            r#"device.attributes.exists_one(x, x == "dra.example.com")"#,
            device().attribute("services", A::String("some_example_value".into())),
            Match(true),
            Some(164),
        ),
        case(
            "check_attribute_ids",
            r#"device.attributes["dra.example.com"].exists_one(x, x == "services")"#,
            device().attribute("services", A::String("some_example_value".into())),
            Match(true),
            Some(133),
        ),
        case(
            "split_attribute",
            r#"device.attributes["dra.example.com"].services.split("example").size() >= 2"#,
            device().attribute("services", A::String("some_example_value".into())),
            Match(true),
            Some(19),
        ),
        case(
            "regexp_attribute",
            r#"device.attributes["dra.example.com"].services.matches("[^a]?sym")"#,
            device().attribute("services", A::String("asymetric".into())),
            Match(true),
            Some(18),
        ),
        case(
            "check_capacity_domains",
            r#"device.capacity.exists_one(x, x == "dra.example.com")"#,
            device().capacity("memory", q("1Mi")),
            Match(true),
            Some(164),
        ),
        case(
            "check_capacity_ids",
            r#"device.capacity["dra.example.com"].exists_one(x, x == "memory")"#,
            device().capacity("memory", q("1Mi")),
            Match(true),
            Some(133),
        ),
        case(
            "expensive",
            "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))",
            device(),
            CompileError("exceeds cost limit"),
            Some(85555551),
        ),
        case(
            "allow_multiple_allocations",
            "device.allowMultipleAllocations == true",
            CelDevice::new(DRIVER, true),
            Match(true),
            Some(3),
        ),
        case(
            "allow_multiple_allocations_default",
            "device.allowMultipleAllocations == false",
            device(),
            Match(true),
            Some(3),
        ),
        // Beyond upstream's table: the errors this crate reports itself.
        case(
            "undeclared-variable",
            "noSuchVar",
            device(),
            CompileError("undeclared reference to 'noSuchVar'"),
            None,
        ),
        case(
            "undeclared-function",
            "noSuchFunction(1)",
            device(),
            CompileError("undeclared reference to 'noSuchFunction'"),
            None,
        ),
        case(
            "undefined-device-field",
            "device.driverName == \"\"",
            device(),
            CompileError("undefined field 'driverName'"),
            None,
        ),
        case(
            "non-bool-logical-operand",
            "device.driver == \"x\" && 1",
            device(),
            CompileError("found no matching overload for '_&&_'"),
            None,
        ),
        case(
            "compare-to-is-int",
            r#"device.capacity["dra.example.com"].memory.compareTo(quantity("1Gi"))"#,
            device(),
            CompileError("must evaluate to bool or the unknown type, not int"),
            None,
        ),
        case(
            "quantity-method-on-string",
            r#"device.driver.isInteger()"#,
            device(),
            CompileError("found no matching overload for 'isInteger'"),
            None,
        ),
        case(
            "not-bool-at-runtime",
            r#"device.attributes["dra.example.com"].name"#,
            name(A::Int(1)),
            EvalError("could not be converted to bool"),
            Some(4),
        ),
        case(
            "too-long",
            &format!("{}true", " ".repeat(10240)),
            device(),
            CompileError("CELSelectorExpressionMaxLength"),
            None,
        ),
        case(
            "has-missing",
            r#"has(device.attributes["dra.example.com"].missing)"#,
            device(),
            Match(false),
            Some(4),
        ),
        case(
            "has-present",
            r#"has(device.attributes["dra.example.com"].name)"#,
            name(A::Int(1)),
            Match(true),
            Some(4),
        ),
        case(
            "invalid-version-attribute",
            "true",
            name(A::Version("1.0".into())),
            EvalError("attribute name: parse semantic version"),
            Some(0),
        ),
    ]
}

#[test]
fn upstream_cel_table() {
    let cases = upstream_cases();
    let total = cases.len();
    let mut failures = Vec::new();
    for c in cases {
        let compiled = compile(&c.expression);
        let fail = |msg: String| format!("{}: {msg}", c.name);
        // The cost is checked even for expressions rejected for their cost.
        if let (Some(want), Err(CelError::CostLimitExceeded { cost, .. })) = (c.cost, &compiled)
            && *cost != want
        {
            failures.push(fail(format!("cost {cost}, want {want}")));
            continue;
        }
        match (&c.want, compiled) {
            (Want::CompileError(want), Err(e)) => {
                if !e.to_string().contains(want) {
                    failures.push(fail(format!("compile error {e:?}, want {want:?}")));
                }
            }
            (Want::CompileError(want), Ok(_)) => {
                failures.push(fail(format!("compiled, want error {want:?}")))
            }
            (_, Err(e)) => failures.push(fail(format!("unexpected compile error: {e}"))),
            (want, Ok(p)) => {
                if let Some(cost) = c.cost
                    && p.max_cost() != cost
                {
                    failures.push(fail(format!("cost {}, want {cost}", p.max_cost())));
                }
                match (want, p.evaluate(&c.device)) {
                    (Want::Match(m), Ok(got)) if *m == got => {}
                    (Want::EvalError(msg), Err(e)) if e.to_string().contains(msg) => {}
                    (_, got) => failures.push(fail(format!("evaluated to {got:?}"))),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}/{total} pass; failures:\n{}",
        total - failures.len(),
        failures.join("\n")
    );
}
