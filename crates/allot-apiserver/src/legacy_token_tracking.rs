//! kube-apiserver's legacy service-account token tracking: the ConfigMap
//! `kube-system/kube-apiserver-legacy-service-account-token-tracking`, whose `since` key holds
//! the UTC date (`YYYY-MM-DD`) from which the server tracks the use of legacy token Secrets.
//! kube-controller-manager's legacy token cleaner reads it and reports an error while it is
//! missing. Upstream keeps it with a controller of the API server (created when missing, its
//! `since` rewritten when it is not a date); allot does the same once, at start, before it
//! serves, which is where upstream's controller creates it on a fresh cluster.

use allot_store::{Kind, ObjectKey, Store, Stored};
use serde_json::json;

/// The ConfigMap's namespace.
pub const NAMESPACE: &str = "kube-system";
/// The ConfigMap's name.
pub const NAME: &str = "kube-apiserver-legacy-service-account-token-tracking";
/// The key of the date.
pub const KEY: &str = "since";

/// Creates the ConfigMap when it is missing, or writes today's date into `since` when what it
/// holds is not a date, as upstream's controller does; `now` is an RFC 3339 UTC time. Returns
/// whether the store changed (the caller commits it).
pub fn ensure(store: &mut Store, now: &str) -> Result<bool, String> {
    let today = now.get(..10).unwrap_or(now);
    let key = ObjectKey::new(Kind::ConfigMap, NAMESPACE, NAME);
    let Some(existing) = store.get_stored(&key) else {
        let object = crate::storage::stored_from_json(&json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": {KEY: today},
        }))?;
        store
            .create_stored(object, now)
            .map_err(|err| err.to_string())?;
        return Ok(true);
    };
    let Stored::ConfigMap(map) = existing else {
        return Ok(false);
    };
    let date = map.data.get(KEY).map(String::as_str).unwrap_or_default();
    if chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").is_ok() {
        return Ok(false);
    }
    let mut map = (**map).clone();
    map.data.insert(KEY.to_string(), today.to_string());
    store.update(map).map_err(|err| err.to_string())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::core::v1::ConfigMap;

    fn since(store: &Store) -> Option<String> {
        store
            .get::<ConfigMap>(NAMESPACE, NAME)
            .and_then(|m| m.data.get(KEY).cloned())
    }

    #[test]
    fn a_fresh_store_gets_the_configmap_with_todays_date() {
        let mut store = Store::new();
        assert_eq!(ensure(&mut store, "2026-03-04T05:06:07Z"), Ok(true));
        assert_eq!(since(&store).as_deref(), Some("2026-03-04"));
        // Kept as it is on the next start.
        let rv = store.resource_version();
        assert_eq!(ensure(&mut store, "2027-01-01T00:00:00Z"), Ok(false));
        assert_eq!(since(&store).as_deref(), Some("2026-03-04"));
        assert_eq!(store.resource_version(), rv);
    }

    #[test]
    fn a_since_that_is_not_a_date_is_rewritten() {
        let mut store = Store::new();
        ensure(&mut store, "2026-03-04T05:06:07Z").expect("created");
        let mut map = store
            .get::<ConfigMap>(NAMESPACE, NAME)
            .expect("map")
            .clone();
        map.data.insert(KEY.into(), "yesterday".into());
        store.update(map).expect("updated");
        assert_eq!(ensure(&mut store, "2026-05-06T00:00:00Z"), Ok(true));
        assert_eq!(since(&store).as_deref(), Some("2026-05-06"));
    }
}
