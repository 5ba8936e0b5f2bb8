//! Field errors as upstream's `k8s.io/apimachinery/pkg/util/validation/field` renders them.

use std::fmt;

use serde::Serialize;

/// The kind of a field error, with upstream's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum ErrorType {
    /// "Not found".
    NotFound,
    /// "Required value".
    Required,
    /// "Duplicate value".
    Duplicate,
    /// "Invalid value".
    Invalid,
    /// "Unsupported value".
    NotSupported,
    /// "Forbidden".
    Forbidden,
    /// "Too long".
    TooLong,
    /// "Too many".
    TooMany,
    /// "Internal error".
    Internal,
}

impl ErrorType {
    /// Upstream's text for this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The offending value, printed the way upstream prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum BadValue {
    /// Not printed.
    Omitted,
    /// `null`.
    Null,
    /// A string, printed quoted.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// Printed as is (structs, lists).
    Raw(String),
}

impl From<&str> for BadValue {
    fn from(value: &str) -> Self {
        BadValue::Str(value.to_string())
    }
}

impl From<String> for BadValue {
    fn from(value: String) -> Self {
        BadValue::Str(value)
    }
}

impl From<&String> for BadValue {
    fn from(value: &String) -> Self {
        BadValue::Str(value.clone())
    }
}

impl From<i64> for BadValue {
    fn from(value: i64) -> Self {
        BadValue::Int(value)
    }
}

impl From<usize> for BadValue {
    fn from(value: usize) -> Self {
        BadValue::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

impl From<bool> for BadValue {
    fn from(value: bool) -> Self {
        BadValue::Bool(value)
    }
}

/// One validation error: where, what kind, the bad value and a detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// The field path, e.g. `spec.devices.requests[0].name`.
    pub path: String,
    /// The kind of error.
    #[serde(rename = "type")]
    pub kind: ErrorType,
    /// The offending value.
    #[serde(skip)]
    pub value: BadValue,
    /// The detail, e.g. "must be greater than zero".
    pub detail: String,
}

impl FieldError {
    fn new(path: &str, kind: ErrorType, value: BadValue, detail: impl Into<String>) -> Self {
        FieldError {
            path: path.to_string(),
            kind,
            value,
            detail: detail.into(),
        }
    }

    /// "Required value".
    pub fn required(path: &str, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorType::Required, BadValue::Omitted, detail)
    }

    /// "Invalid value".
    pub fn invalid(path: &str, value: impl Into<BadValue>, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorType::Invalid, value.into(), detail)
    }

    /// "Duplicate value".
    pub fn duplicate(path: &str, value: impl Into<BadValue>) -> Self {
        Self::new(path, ErrorType::Duplicate, value.into(), "")
    }

    /// "Not found".
    pub fn not_found(path: &str, value: impl Into<BadValue>) -> Self {
        Self::new(path, ErrorType::NotFound, value.into(), "")
    }

    /// "Forbidden".
    pub fn forbidden(path: &str, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorType::Forbidden, BadValue::Omitted, detail)
    }

    /// "Unsupported value" with the list of supported values.
    pub fn not_supported(path: &str, value: impl Into<BadValue>, supported: &[&str]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Self::new(
            path,
            ErrorType::NotSupported,
            value.into(),
            format!("supported values: {}", quoted.join(", ")),
        )
    }

    /// "Too long" (in bytes).
    pub fn too_long(path: &str, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            path,
            ErrorType::TooLong,
            BadValue::Omitted,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// "Too many" (list items or map entries).
    pub fn too_many(path: &str, actual: usize, max: usize) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::new(
            path,
            ErrorType::TooMany,
            actual.into(),
            format!("must have at most {max} {unit}"),
        )
    }

    /// "Internal error".
    pub fn internal(path: &str, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorType::Internal, BadValue::Omitted, detail)
    }

    /// The message without the path, as upstream's `ErrorBody`:
    /// `Invalid value: "x": must be ...`.
    pub fn message(&self) -> String {
        let mut out = self.kind.as_str().to_string();
        let prints_value = !matches!(
            self.kind,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal
        );
        if prints_value {
            match &self.value {
                BadValue::Omitted => {}
                BadValue::Null => out.push_str(": null"),
                BadValue::Str(s) => out.push_str(&format!(": {s:?}")),
                BadValue::Int(i) => out.push_str(&format!(": {i}")),
                BadValue::Bool(b) => out.push_str(&format!(": {b}")),
                BadValue::Raw(r) => out.push_str(&format!(": {r}")),
            }
        }
        if !self.detail.is_empty() {
            out.push_str(": ");
            out.push_str(&self.detail);
        }
        out
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message())
    }
}

/// Field path building, as upstream's `field.Path`.
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `path[index]`.
pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `path[key]`.
pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_render_like_upstream() {
        let cases = [
            (FieldError::required("a", ""), "a: Required value"),
            (
                FieldError::invalid("a.b", "x", "must be y"),
                "a.b: Invalid value: \"x\": must be y",
            ),
            (
                FieldError::invalid("c", 0i64, "must be greater than zero"),
                "c: Invalid value: 0: must be greater than zero",
            ),
            (
                FieldError::not_supported("m", "Foo", &["All", "ExactCount"]),
                "m: Unsupported value: \"Foo\": supported values: \"All\", \"ExactCount\"",
            ),
            (
                FieldError::too_many("r", 33, 32),
                "r: Too many: 33: must have at most 32 items",
            ),
            (
                FieldError::too_long("d", 63),
                "d: Too long: may not be more than 63 bytes",
            ),
            (
                FieldError::duplicate("l[1]", "x"),
                "l[1]: Duplicate value: \"x\"",
            ),
            (FieldError::forbidden("f", "no"), "f: Forbidden: no"),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
