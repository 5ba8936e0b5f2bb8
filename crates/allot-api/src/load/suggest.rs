//! Hints for unknown fields: the field an API release renamed or moved, or the known field the
//! name is closest to ("did you mean").

/// A field that an earlier release (or API version) spelled or placed differently, found by
/// its path with indices written `[*]`.
struct Moved {
    /// The kinds it applies to.
    kinds: &'static [&'static str],
    /// Path suffixes (after the document's root) where the old field is met.
    paths: &'static [&'static str],
    /// What to say.
    hint: &'static str,
}

const MOVED: &[Moved] = &[
    Moved {
        kinds: &["ResourceSlice"],
        paths: &["spec.devices[*].nodeAllocatableResourceMappings"],
        hint: "Kubernetes 1.36's nodeAllocatableResourceMappings is nodeAllocatableResources in \
               1.37: a map from the node resource name to {mapping: {capacityKey, \
               capacityMultiplier} or {deviceMultiplier}} and/or {overhead: {perPod, \
               perContainer}}",
    },
    Moved {
        kinds: &["ResourceSlice"],
        paths: &["spec.devices[*].basic"],
        hint: "resource.k8s.io/v1 has no basic: its fields (attributes, capacity, \
               consumesCounters, ...) sit on the device itself (basic is v1beta1's shape)",
    },
    Moved {
        kinds: &["ResourceClaim", "ResourceClaimTemplate"],
        paths: &[
            "spec.devices.requests[*].deviceClassName",
            "spec.devices.requests[*].selectors",
            "spec.devices.requests[*].allocationMode",
            "spec.devices.requests[*].count",
            "spec.devices.requests[*].adminAccess",
            "spec.devices.requests[*].tolerations",
            "spec.devices.requests[*].capacity",
        ],
        hint: "in resource.k8s.io/v1 a request's deviceClassName, selectors, allocationMode, \
               count, adminAccess, tolerations and capacity sit under exactly: (directly on the \
               request is v1beta1's shape)",
    },
];

/// `spec.devices[3].basic` as `spec.devices[*].basic`.
fn wildcard_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[*");
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            c if in_index && c.is_ascii_digit() => {}
            c => out.push(c),
        }
    }
    out
}

/// The hint for the unknown field at `path` (the full field path, e.g.
/// `spec.devices[0].colour`) of a `kind` document, given the names serde expected there.
pub(crate) fn unknown_field_hint(kind: &str, path: &str, expected: &[String]) -> Option<String> {
    let pattern = wildcard_indices(path);
    // A template nests the claim spec one level deeper.
    let claim_pattern = pattern.strip_prefix("spec.").unwrap_or(&pattern);
    for moved in MOVED {
        let applies = moved.kinds.contains(&kind)
            && moved
                .paths
                .iter()
                .any(|p| pattern == *p || claim_pattern == *p);
        if applies {
            return Some(moved.hint.to_string());
        }
    }
    let field = path.rsplit('.').next().unwrap_or(path);
    closest(field, expected).map(|name| format!("did you mean \"{name}\"?"))
}

/// The expected name closest to `field`, when close enough to be a typo: the same name in
/// another case, or within an edit distance of about a third of its length (a swap of two
/// neighbouring letters counts as one edit).
fn closest<'a>(field: &str, expected: &'a [String]) -> Option<&'a str> {
    let lower = field.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for name in expected {
        let distance = edit_distance(&lower, &name.to_lowercase());
        if best.is_none_or(|(d, n)| (distance, name.as_str()) < (d, n)) {
            best = Some((distance, name));
        }
    }
    let (distance, name) = best?;
    let limit = (field.chars().count().min(name.chars().count()) / 3).clamp(1, 3);
    (distance <= limit).then_some(name)
}

/// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// neighbouring characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut rows = vec![0usize; (a.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in 0..=a.len() {
        rows[at(i, 0)] = i;
    }
    for j in 0..=b.len() {
        rows[at(0, j)] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[at(i - 1, j)] + 1)
                .min(rows[at(i, j - 1)] + 1)
                .min(rows[at(i - 1, j - 1)] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[at(i - 2, j - 2)] + 1);
            }
            rows[at(i, j)] = best;
        }
    }
    rows[at(a.len(), b.len())]
}

/// The field names in serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a`
/// or `b`", "expected `a`"), in order.
pub(crate) fn expected_fields(message: &str) -> Vec<String> {
    let Some((_, rest)) = message.split_once(", expected ") else {
        return Vec::new();
    };
    let rest = rest.strip_prefix("one of ").unwrap_or(rest);
    rest.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, name)| name.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn serde_messages_give_the_expected_fields() {
        assert_eq!(
            expected_fields(
                "unknown field `colour`, expected one of `name`, `attributes`, `capacity`"
            ),
            ["name", "attributes", "capacity"]
        );
        assert_eq!(
            expected_fields("unknown field `x`, expected `a` or `b`"),
            ["a", "b"]
        );
        assert_eq!(expected_fields("unknown field `x`, expected `a`"), ["a"]);
        assert!(expected_fields("unknown field `x`, there are no fields").is_empty());
    }

    #[test]
    fn typos_get_the_closest_field() {
        let fields = names(&["deviceClassName", "selectors", "allocationMode", "count"]);
        let hint = |path: &str| unknown_field_hint("ResourceClaim", path, &fields);
        assert_eq!(
            hint("spec.devices.requests[0].exactly.deviceClasName").as_deref(),
            Some("did you mean \"deviceClassName\"?")
        );
        assert_eq!(
            hint("spec.x.slectors").as_deref(),
            Some("did you mean \"selectors\"?")
        );
        assert_eq!(
            hint("spec.x.cuont").as_deref(),
            Some("did you mean \"count\"?")
        );
        assert_eq!(
            hint("spec.x.DEVICECLASSNAME").as_deref(),
            Some("did you mean \"deviceClassName\"?")
        );
        assert_eq!(hint("spec.x.colour"), None);
        assert_eq!(hint("spec.x.zz"), None);
    }

    #[test]
    fn renamed_and_moved_fields_name_the_new_place() {
        let hint = unknown_field_hint(
            "ResourceSlice",
            "spec.devices[3].nodeAllocatableResourceMappings",
            &names(&["name", "nodeAllocatableResources"]),
        )
        .unwrap();
        assert!(hint.contains("nodeAllocatableResources in 1.37"), "{hint}");
        for (kind, path) in [
            ("ResourceClaim", "spec.devices.requests[0].deviceClassName"),
            (
                "ResourceClaimTemplate",
                "spec.spec.devices.requests[2].count",
            ),
        ] {
            let hint = unknown_field_hint(kind, path, &[]).unwrap();
            assert!(hint.contains("under exactly"), "{hint}");
        }
        let hint = unknown_field_hint("ResourceSlice", "spec.devices[0].basic", &[]).unwrap();
        assert!(hint.contains("v1beta1"), "{hint}");
    }

    #[test]
    fn edit_distance_counts_swaps_as_one() {
        assert_eq!(edit_distance("name", "nmae"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
