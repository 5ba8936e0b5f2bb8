//! Admission of the workload, storage, service, policy and scheduling kinds that needs other
//! objects of the store: upstream's Priority admission plugin allows one default PriorityClass.

use allot_api::scheduling::v1::PriorityClass;
use allot_store::{Store, Stored};

/// Why `object` may not be written (the text after `... is forbidden: `), or `None`.
pub fn forbidden(store: &Store, object: &Stored) -> Option<String> {
    match object {
        Stored::PriorityClass(class) => {
            allot_validation::core_more::admit_priority_class(class, store.list::<PriorityClass>())
        }
        _ => None,
    }
}
