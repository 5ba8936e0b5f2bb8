//! The crate's error type: bad configuration or bad input, never "does not fit".

/// Why a Topology Manager could not be configured or an input is unusable.
///
/// A pod that cannot be aligned is not an error: it is an answer, see
/// [`crate::TopologyAffinityError`]. Messages follow the kubelet's where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `topologyManagerPolicy` is not one of none, best-effort, restricted, single-numa-node.
    #[error("unknown policy: \"{name}\"")]
    UnknownPolicy {
        /// The value given.
        name: String,
    },
    /// `topologyManagerScope` is not one of container, pod.
    #[error("unknown scope: \"{name}\"")]
    UnknownScope {
        /// The value given.
        name: String,
    },
    /// A `topologyManagerPolicyOptions` key the kubelet does not know.
    #[error("unknown Topology Manager Policy option: \"{name}\"")]
    UnknownOption {
        /// The option name.
        name: String,
    },
    /// A boolean option whose value Go's `strconv.ParseBool` rejects.
    #[error(
        "bad value for option \"{name}\": strconv.ParseBool: parsing \"{value}\": invalid syntax"
    )]
    BadBoolOption {
        /// The option name.
        name: String,
        /// The value given.
        value: String,
    },
    /// An integer option whose value Go's `strconv.Atoi` rejects.
    #[error(
        "unable to convert policy option to integer \"{name}\": strconv.Atoi: parsing \"{value}\": {reason}"
    )]
    BadIntOption {
        /// The option name.
        name: String,
        /// The value given.
        value: String,
        /// `invalid syntax` or `value out of range`, as Go says.
        reason: &'static str,
    },
    /// `max-allowable-numa-nodes` below the built-in default of 8.
    #[error("the minimum value of \"{name}\" should not be less than {minimum}")]
    OptionBelowMinimum {
        /// The option name.
        name: String,
        /// The smallest accepted value.
        minimum: usize,
    },
    /// `prefer-closest-numa-nodes` is on but a NUMA node has no distance row.
    #[error("cannot discover NUMA topology: error getting NUMA distances from cadvisor")]
    MissingDistances {
        /// The first node without distances.
        node: usize,
    },
    /// A distance row is too short to give the distance to every NUMA node of the machine.
    #[error(
        "cannot discover NUMA topology: the distance row of NUMA node {node} has {len} entries, NUMA node {missing} needs one"
    )]
    ShortDistanceRow {
        /// The node whose row is short.
        node: usize,
        /// The row's length.
        len: usize,
        /// The node id the row does not reach.
        missing: usize,
    },
    /// More NUMA nodes than `max-allowable-numa-nodes` (a policy other than none).
    #[error("unsupported on machines with more than {max} NUMA Nodes")]
    TooManyNumaNodes {
        /// The machine's NUMA node count.
        count: usize,
        /// The configured limit.
        max: usize,
    },
    /// The same NUMA node id was listed twice.
    #[error("NUMA node {node} is listed twice")]
    DuplicateNumaNode {
        /// The repeated id.
        node: usize,
    },
}
