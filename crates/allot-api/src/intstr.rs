//! `IntOrString` (apimachinery's `util/intstr`): a field that holds either an integer or a
//! string, such as a rolling update's `maxSurge` (`1` or `"25%"`) or a service's `targetPort`
//! (`8080` or `"http"`).

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An integer or a string. JSON numbers decode as [`IntOrString::Int`] (they must fit in an
/// `int32`, as upstream's decoder demands), JSON strings as [`IntOrString::String`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IntOrString {
    /// An integer.
    Int(i32),
    /// A string (a percentage such as `25%`, or a name).
    String(String),
}

impl Default for IntOrString {
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

impl IntOrString {
    /// The percentage this value holds, when it is a string `N%`; `None` for an integer.
    /// `Some(Err(..))` for a string that is not a percentage.
    pub fn percent(&self) -> Option<Result<i32, String>> {
        match self {
            IntOrString::Int(_) => None,
            IntOrString::String(text) => Some(
                text.strip_suffix('%')
                    .and_then(|n| n.parse::<i32>().ok())
                    .ok_or_else(|| {
                        format!("invalid value for IntOrString: invalid value {text:?}")
                    }),
            ),
        }
    }

    /// The value scaled against `total` as upstream's `GetScaledValueFromIntOrPercent`: an
    /// integer as is, a percentage of `total` rounded up or down.
    pub fn scaled_value(&self, total: i32, round_up: bool) -> Result<i32, String> {
        match self {
            IntOrString::Int(n) => Ok(*n),
            IntOrString::String(_) => {
                let percent = self.percent().unwrap_or(Ok(0))?;
                let product = i64::from(percent) * i64::from(total);
                let value = if round_up {
                    (product + 99).div_euclid(100)
                } else {
                    product.div_euclid(100)
                };
                i32::try_from(value).map_err(|_| format!("{value} is out of range"))
            }
        }
    }
}

impl std::fmt::Display for IntOrString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntOrString::Int(n) => write!(f, "{n}"),
            IntOrString::String(text) => f.write_str(text),
        }
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrString::Int(n) => serializer.serialize_i32(*n),
            IntOrString::String(text) => serializer.serialize_str(text),
        }
    }
}

struct IntOrStringVisitor;

impl Visitor<'_> for IntOrStringVisitor {
    type Value = IntOrString;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an integer or a string")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntOrString, E> {
        i32::try_from(v)
            .map(IntOrString::Int)
            .map_err(|_| E::custom(format!("integer {v} does not fit in an int32")))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntOrString, E> {
        i32::try_from(v)
            .map(IntOrString::Int)
            .map_err(|_| E::custom(format!("integer {v} does not fit in an int32")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<IntOrString, E> {
        if v.fract() == 0.0 && v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX) {
            Ok(IntOrString::Int(v as i32))
        } else {
            Err(E::custom(format!("{v} is not an int32")))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<IntOrString, E> {
        Ok(IntOrString::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<IntOrString, E> {
        Ok(IntOrString::String(v))
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntOrStringVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_numbers_and_strings_and_round_trips() {
        let cases = [
            ("3", IntOrString::Int(3)),
            ("\"25%\"", IntOrString::String("25%".into())),
        ];
        for (text, want) in cases {
            let got: IntOrString = serde_json::from_str(text).expect(text);
            assert_eq!(got, want);
            assert_eq!(serde_json::to_string(&got).expect("encodes"), text);
        }
        assert!(serde_json::from_str::<IntOrString>("3000000000").is_err());
        assert!(serde_json::from_str::<IntOrString>("1.5").is_err());
        assert!(serde_json::from_str::<IntOrString>("true").is_err());
    }

    #[test]
    fn percentages_scale_as_upstream() {
        let p = |s: &str| IntOrString::String(s.into());
        assert_eq!(p("25%").scaled_value(10, true), Ok(3));
        assert_eq!(p("25%").scaled_value(10, false), Ok(2));
        assert_eq!(IntOrString::Int(4).scaled_value(10, true), Ok(4));
        assert!(p("x").scaled_value(10, true).is_err());
        assert_eq!(p("100%").scaled_value(7, false), Ok(7));
    }
}
