//! Name formats: DNS labels and subdomains, C identifiers, qualified names, label values, with
//! upstream's messages (`k8s.io/apimachinery/pkg/util/validation`).

use crate::field::FieldError;

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;

fn regex_error(msg: &str, format: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{format}')"));
    out
}

fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns_label(value: &str) -> bool {
    let (Some(first), Some(last)) = (value.chars().next(), value.chars().last()) else {
        return false;
    };
    is_lower_alnum(first)
        && is_lower_alnum(last)
        && value.chars().all(|c| is_lower_alnum(c) || c == '-')
}

/// Labels separated by dots.
fn matches_dns_subdomain(value: &str) -> bool {
    value.split('.').all(matches_dns_label)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(value: &str) -> bool {
    let (Some(first), Some(last)) = (value.chars().next(), value.chars().last()) else {
        return false;
    };
    is_alnum(first)
        && is_alnum(last)
        && value
            .chars()
            .all(|c| is_alnum(c) || matches!(c, '-' | '_' | '.'))
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const C_IDENTIFIER_MSG: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'";
const C_IDENTIFIER_FMT: &str = "[A-Za-z_][A-Za-z0-9_]*";

/// Messages of upstream's `IsDNS1123Label`.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !matches_dns_label(value) {
        if matches_dns_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Messages of upstream's `IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !matches_dns_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Messages of upstream's `IsQualifiedName` (label keys, condition types).
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Messages of upstream's `IsValidLabelValue`.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errs.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Messages of upstream's `IsCIdentifier`.
pub fn is_c_identifier(value: &str) -> Vec<String> {
    let mut chars = value.chars();
    let ok = match chars.next() {
        Some(first) => {
            (first.is_ascii_alphabetic() || first == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    };
    if ok {
        Vec::new()
    } else {
        vec![regex_error(
            C_IDENTIFIER_MSG,
            C_IDENTIFIER_FMT,
            &["my_name", "MY_NAME", "MyName"],
        )]
    }
}

fn invalid_each(path: &str, value: &str, messages: Vec<String>) -> Vec<FieldError> {
    messages
        .into_iter()
        .map(|m| FieldError::invalid(path, value, m))
        .collect()
}

/// `ValidateDNS1123Label`: one Invalid error per message.
pub fn validate_dns1123_label(value: &str, path: &str) -> Vec<FieldError> {
    invalid_each(path, value, is_dns1123_label(value))
}

/// `ValidateDNS1123Subdomain`: one Invalid error per message.
pub fn validate_dns1123_subdomain(value: &str, path: &str) -> Vec<FieldError> {
    invalid_each(path, value, is_dns1123_subdomain(value))
}

/// `ValidateLabelName`: a qualified name.
pub fn validate_label_name(value: &str, path: &str) -> Vec<FieldError> {
    invalid_each(path, value, is_qualified_name(value))
}

/// A label value.
pub fn validate_label_value(value: &str, path: &str) -> Vec<FieldError> {
    invalid_each(path, value, is_valid_label_value(value))
}

/// `ValidateCSIDriverName`, used for DRA driver names: required, at most 63 bytes, a DNS
/// subdomain after lower-casing.
pub fn validate_driver_name(value: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    if value.len() > 63 {
        errs.push(FieldError::too_long(path, 63));
    }
    errs.extend(invalid_each(
        path,
        value,
        is_dns1123_subdomain(&value.to_lowercase()),
    ));
    errs
}

/// A C identifier of at most 32 characters (the ID of an attribute or capacity name).
pub fn validate_c_identifier(value: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if value.len() > allot_api::resource::v1::DEVICE_MAX_ID_LENGTH {
        errs.push(FieldError::too_long(
            path,
            allot_api::resource::v1::DEVICE_MAX_ID_LENGTH,
        ));
    }
    errs.extend(invalid_each(path, value, is_c_identifier(value)));
    errs
}

/// `QualifiedName` of an attribute or capacity: `id` or `domain/id`.
pub fn validate_qualified_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [id] => errs.extend(validate_c_identifier(id, path)),
        [domain, id] => {
            if domain.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    "",
                    "the domain must not be empty",
                ));
            } else {
                errs.extend(validate_driver_name(domain, path));
            }
            if id.is_empty() {
                errs.push(FieldError::invalid(path, "", "the name must not be empty"));
            } else {
                errs.extend(validate_c_identifier(id, path));
            }
        }
        _ => errs.push(FieldError::invalid(
            path,
            name,
            "must not contain more than one slash",
        )),
    }
    errs
}

/// `FullyQualifiedName`: a qualified name with a domain.
pub fn validate_fully_qualified_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = validate_qualified_name(name, path);
    if !name.contains('/') {
        errs.push(FieldError::invalid(
            path,
            name,
            "a fully qualified name must be a domain and a name separated by a slash",
        ));
    }
    errs
}

/// A pool name: DNS subdomains separated by `/`, at most 253 characters.
pub fn validate_pool_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return errs;
    }
    if name.len() > allot_api::resource::v1::POOL_NAME_MAX_LENGTH {
        errs.push(FieldError::too_long(
            path,
            allot_api::resource::v1::POOL_NAME_MAX_LENGTH,
        ));
    }
    for part in name.split('/') {
        errs.extend(validate_dns1123_subdomain(part, path));
    }
    errs
}

/// A UID in RFC 4122 normalized form.
pub fn validate_uid(uid: &str, path: &str) -> Vec<FieldError> {
    let groups: Vec<&str> = uid.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    let well_formed = groups.len() == 5
        && groups
            .iter()
            .zip(lengths)
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()));
    if !well_formed {
        return vec![FieldError::invalid(
            path,
            uid,
            "error validating uid: invalid UUID format",
        )];
    }
    if uid != uid.to_lowercase() {
        return vec![FieldError::invalid(
            path,
            uid,
            "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters",
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        for ok in ["a", "a-b", "0", "abc123"] {
            assert!(is_dns1123_label(ok).is_empty(), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a_b", &"a".repeat(64)] {
            assert!(!is_dns1123_label(bad).is_empty(), "{bad}");
        }
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
    }

    #[test]
    fn dns_subdomains() {
        assert!(is_dns1123_subdomain("gpu.example.com").is_empty());
        assert!(!is_dns1123_subdomain("gpu..example").is_empty());
        assert!(!is_dns1123_subdomain("Gpu.example").is_empty());
        assert!(!is_dns1123_subdomain(&"a".repeat(254)).is_empty());
    }

    #[test]
    fn qualified_names() {
        assert!(validate_qualified_name("model", "p").is_empty());
        assert!(validate_qualified_name("gpu.example.com/model", "p").is_empty());
        assert!(!validate_qualified_name("gpu.example.com/", "p").is_empty());
        assert!(!validate_qualified_name("/model", "p").is_empty());
        assert!(!validate_qualified_name("a/b/c", "p").is_empty());
        assert!(!validate_qualified_name("1model", "p").is_empty());
        assert!(!validate_qualified_name(&"m".repeat(33), "p").is_empty());
        assert!(!validate_fully_qualified_name("model", "p").is_empty());
        assert!(validate_fully_qualified_name("derived/numa", "p").is_empty());
    }

    #[test]
    fn label_names_and_values() {
        assert!(validate_label_name("example.com/key", "p").is_empty());
        assert!(!validate_label_name("", "p").is_empty());
        assert!(!validate_label_name("a/b/c", "p").is_empty());
        assert!(validate_label_value("", "p").is_empty());
        assert!(validate_label_value("v1.2_x", "p").is_empty());
        assert!(!validate_label_value("-x", "p").is_empty());
    }

    #[test]
    fn pool_names_and_uids() {
        assert!(validate_pool_name("node-1/gpus", "p").is_empty());
        assert!(!validate_pool_name("", "p").is_empty());
        assert!(!validate_pool_name("a//b", "p").is_empty());
        assert!(validate_uid("ffffffff-0000-0000-0000-000000000000", "p").is_empty());
        assert!(!validate_uid("FFFFFFFF-0000-0000-0000-000000000000", "p").is_empty());
        assert!(!validate_uid("nope", "p").is_empty());
    }

    #[test]
    fn driver_names() {
        assert!(validate_driver_name("gpu.example.com", "p").is_empty());
        assert!(validate_driver_name("GPU.example.com", "p").is_empty());
        assert_eq!(validate_driver_name("", "p").len(), 1);
        assert!(!validate_driver_name(&"a".repeat(64), "p").is_empty());
    }
}
