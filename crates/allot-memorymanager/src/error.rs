//! The crate's error type.

/// Why the Memory Manager refused a configuration, a state or an allocation.
///
/// Messages are the kubelet's, word for word, so logs and tests compare across both; the
/// variants carry the context as data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The Static policy needs some memory reserved for the system.
    #[error("[memorymanager] you should specify the system reserved memory")]
    NoSystemReservedMemory,
    /// A memory or hugepages quantity does not fit a 64-bit integer of bytes.
    #[error("[memorymanager] failed to represent quantity as int64")]
    QuantityNotInt64 {
        /// The resource.
        resource: String,
    },
    /// No NUMA node set can hold the request (no affinity was given to place it by).
    #[error(
        "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available"
    )]
    NoDefaultAffinity,
    /// The Topology Manager wanted a preferred placement but the best one is not preferred.
    #[error("[memorymanager] failed to find the default preferred hint")]
    DefaultHintNotPreferred,
    /// No NUMA node set containing the given affinity can hold the request.
    #[error("[memorymanager] failed to find NUMA nodes to extend the current topology hint")]
    NoExtendedAffinity,
    /// The extended placement is not preferred though a preferred one was asked for.
    #[error("[memorymanager] failed to find the extended preferred hint")]
    ExtendedHintNotPreferred,
    /// The placement would mix single-NUMA and cross-NUMA allocations on a node, or join a node
    /// to a different group.
    #[error("[memorymanager] preferred hint violates NUMA node allocation")]
    ViolatesNumaAllocation,
    /// The affinity names a NUMA node the machine state does not have.
    #[error("[memorymanager] NUMA node {node} of the affinity does not exist in the machine state")]
    UnknownAffinityNode {
        /// The missing node.
        node: usize,
    },
    /// Pod-level resources: the exclusive containers' requests leave nothing of the pod's budget
    /// for the containers that share it (the kubelet's reason: an empty pod shared pool).
    #[error("{message}")]
    EmptyPodSharedPool {
        /// The kubelet's sentence, naming the memory kind and amounts.
        message: String,
    },
    /// Start: assignments exist but the machine state is empty.
    #[error("[memorymanager] machine state can not be empty when it has memory assignments")]
    EmptyMachineStateWithAssignments,
    /// Start: an assignment uses a NUMA node the machine does not have.
    #[error(
        "[memorymanager] (pod: {pod}, container: {container}) the memory assignment uses the NUMA that does not exist"
    )]
    AssignmentUnknownNuma {
        /// The pod UID.
        pod: String,
        /// The container.
        container: String,
    },
    /// Start: an assignment uses a memory kind the machine does not have.
    #[error(
        "[memorymanager] (pod: {pod}, container: {container}) the memory assignment uses memory resource that does not exist"
    )]
    AssignmentUnknownResource {
        /// The pod UID.
        pod: String,
        /// The container.
        container: String,
    },
    /// Start: the stored machine state is not what the machine, the reservation and the
    /// assignments give. The kubelet's advice: drain the node and remove the state file.
    #[error("[memorymanager] the expected machine state is different from the real one")]
    MachineStateMismatch,
    /// `reservedMemory` names a NUMA node the machine does not have.
    #[error(
        "the reserved memory configuration references a NUMA node {node} that does not exist on this machine"
    )]
    ReservationUnknownNuma {
        /// The node.
        node: usize,
    },
    /// The `reservedMemory` total of a memory kind differs from Node Allocatable's reservation.
    #[error(
        "the total amount \"{reserved}\" of type \"{resource}\" is not equal to the value \"{allocatable}\" determined by Node Allocatable feature"
    )]
    ReservationMismatch {
        /// The memory kind.
        resource: String,
        /// The `reservedMemory` total.
        reserved: String,
        /// Node Allocatable's reservation.
        allocatable: String,
    },
    /// A `reservedMemory` amount that is not a whole number of bytes in `i64` (the kubelet's
    /// message, typo included).
    #[error("could not covert a variable of type Quantity to int64")]
    ReservationNotInt64 {
        /// The memory kind.
        resource: String,
    },
    /// A checkpoint is not valid JSON of the expected shape (the decoder's words, as the
    /// kubelet reports them).
    #[error("{message}")]
    CheckpointDecode {
        /// The decoder's message.
        message: String,
    },
    /// A v3 checkpoint (it has `data` or `dataChecksum`) that does not load; the kubelet does not
    /// fall back to older versions then.
    #[error("could not load v3 checkpoint: {message}")]
    CheckpointV3 {
        /// Why: the payload does not decode, or its checksum does not match.
        message: String,
    },
    /// A checkpoint's checksum does not match its content.
    #[error("checkpoint is corrupted")]
    CorruptCheckpoint {
        /// The checksum in the file.
        expected: u64,
        /// The checksum of the content.
        actual: u64,
    },
    /// The checkpoint was written by another policy.
    #[error(
        "[memorymanager] configured policy \"{configured}\" differs from state checkpoint policy \"{stored}\""
    )]
    PolicyMismatch {
        /// The configured policy.
        configured: String,
        /// The policy in the checkpoint.
        stored: String,
    },
}

impl Error {
    /// What an operator should do, for errors that stop the kubelet from starting: a state that
    /// does not match the machine or configuration, or a damaged checkpoint.
    pub fn remedy(&self) -> Option<&'static str> {
        match self {
            Error::EmptyMachineStateWithAssignments
            | Error::AssignmentUnknownNuma { .. }
            | Error::AssignmentUnknownResource { .. }
            | Error::MachineStateMismatch
            | Error::CheckpointDecode { .. }
            | Error::CheckpointV3 { .. }
            | Error::CorruptCheckpoint { .. }
            | Error::PolicyMismatch { .. } => Some(
                "drain the node and delete the memory manager checkpoint file (memory_manager_state) before restarting the kubelet",
            ),
            _ => None,
        }
    }
}
