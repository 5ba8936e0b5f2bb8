use super::*;

fn q(s: &str) -> Quantity {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn canonical_examples() {
    for (input, want) in [
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1e3", "1e3"),
        ("100m", "100m"),
        ("1n", "1n"),
        ("0.0000000001", "1n"),
    ] {
        assert_eq!(q(input).to_string(), want, "{input}");
    }
}
