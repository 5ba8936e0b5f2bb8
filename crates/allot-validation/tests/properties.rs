//! Property tests: the hand-written name matchers agree with upstream's regular expressions,
//! and validation never panics on arbitrary values placed into valid objects.

use allot_api::defaults::default_object;
use allot_api::load::{LoadOptions, decode_object, parse_str};
use allot_validation::names::{
    is_c_identifier, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
    is_valid_label_value,
};
use allot_validation::{DraCel, validate_object};
use proptest::prelude::*;
use regex::Regex;

fn full(pattern: &str) -> Regex {
    Regex::new(&format!("^(?:{pattern})$")).expect("regex")
}

/// Strings over an alphabet rich in the characters the formats care about.
fn name_like() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-Z0-9._/\\-]{0,70}").expect("strategy")
}

proptest! {
    #[test]
    fn dns_label_matches_upstream_regex(s in name_like()) {
        let re = full("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
        prop_assert_eq!(is_dns1123_label(&s).is_empty(), re.is_match(&s) && s.len() <= 63);
    }

    #[test]
    fn dns_subdomain_matches_upstream_regex(s in name_like()) {
        let re = full("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
        prop_assert_eq!(is_dns1123_subdomain(&s).is_empty(), re.is_match(&s) && s.len() <= 253);
    }

    #[test]
    fn c_identifier_matches_upstream_regex(s in name_like()) {
        let re = full("[A-Za-z_][A-Za-z0-9_]*");
        prop_assert_eq!(is_c_identifier(&s).is_empty(), re.is_match(&s));
    }

    #[test]
    fn label_value_matches_upstream_regex(s in name_like()) {
        let re = full("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?");
        prop_assert_eq!(is_valid_label_value(&s).is_empty(), re.is_match(&s) && s.len() <= 63);
    }

    #[test]
    fn qualified_name_matches_upstream_definition(s in name_like()) {
        let name = full("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]");
        let prefix = full("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
        let parts: Vec<&str> = s.split('/').collect();
        let expected = match parts.as_slice() {
            [n] => name.is_match(n) && n.len() <= 63,
            [p, n] => prefix.is_match(p) && p.len() <= 253 && name.is_match(n) && n.len() <= 63,
            _ => false,
        };
        prop_assert_eq!(is_qualified_name(&s).is_empty(), expected);
    }

    #[test]
    fn validation_never_panics(
        name in name_like(),
        class in name_like(),
        count in any::<i64>(),
        attr in name_like(),
        value in name_like(),
        expression in "[ -~]{0,40}",
    ) {
        let claim = serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name.clone()},
            "spec": {"devices": {
                "requests": [{"name": name, "exactly": {"deviceClassName": class, "count": count,
                    "selectors": [{"cel": {"expression": expression}}]}}],
                "constraints": [{"matchAttribute": attr.clone()}]}}
        });
        let slice = serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "s"},
            "spec": {"driver": attr.clone(), "nodeName": value.clone(),
                "pool": {"name": value.clone(), "generation": count, "resourceSliceCount": count},
                "devices": [{"name": value.clone(), "attributes": {attr: {"string": value}}}]}
        });
        for doc in [claim, slice] {
            let text = serde_json::to_string(&doc).expect("json");
            let raws = parse_str("p.json", &text).expect("parse");
            let mut object = decode_object(&raws[0], &LoadOptions::default()).expect("decode");
            default_object(&mut object);
            for error in validate_object(&object, &DraCel) {
                prop_assert!(error.path.starts_with("metadata") || error.path.starts_with("spec"));
                prop_assert!(!error.message().is_empty());
            }
        }
    }
}
