//! Serde helpers shared by the types.

use serde::{Deserialize, Deserializer};

/// Decodes `null` as the default value, as Go's decoder does for slices, maps and strings.
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Whether a value is its type's zero value, for Go's `omitempty` on plain numbers and
/// booleans: `skip_serializing_if = "crate::serde_util::is_default"`.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
