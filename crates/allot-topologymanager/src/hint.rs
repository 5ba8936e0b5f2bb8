//! Topology hints as hint providers give them and as the merge returns them.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::NumaMask;

/// A NUMA affinity proposal for (part of) a container's or pod's resources.
///
/// `affinity: None` means "any NUMA node" (upstream's nil mask). `preferred` marks an allocation
/// that uses the fewest NUMA nodes the request needs. Hints order by affinity ("any" first, then
/// narrower masks), then not preferred before preferred.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopologyHint {
    /// The NUMA nodes of the proposed allocation, or `None` for no NUMA preference.
    pub affinity: Option<NumaMask>,
    /// Whether this is a preferred (minimal) allocation.
    pub preferred: bool,
}

impl TopologyHint {
    /// A hint on the given nodes.
    pub fn new(affinity: NumaMask, preferred: bool) -> Self {
        Self {
            affinity: Some(affinity),
            preferred,
        }
    }

    /// A hint with no NUMA preference.
    pub fn any(preferred: bool) -> Self {
        Self {
            affinity: None,
            preferred,
        }
    }
}

impl fmt::Display for TopologyHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.affinity {
            Some(mask) => write!(f, "{{NUMA [{mask}], preferred: {}}}", self.preferred),
            None => write!(f, "{{any NUMA, preferred: {}}}", self.preferred),
        }
    }
}

/// One hint provider's answer: resource name to hint list.
///
/// Upstream distinguishes three cases, kept here: a resource mapped to `None` has no NUMA
/// preference; a resource mapped to `Some(vec![])` has no possible NUMA affinity; an empty map
/// means the provider has no preference for any resource.
pub type ProviderHints = BTreeMap<String, Option<Vec<TopologyHint>>>;
