//! The allocator's error type: bad input, never "does not fit".

/// Why an allocation could not even be attempted, or had to stop: the input is at fault.
///
/// Messages follow upstream's wording so that the same substrings can be searched for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A feature gate name that the allocator does not know.
    #[error("unknown feature gate {gate}")]
    UnknownFeatureGate {
        /// The name given.
        gate: String,
    },
    /// A `--feature-gates` item that is not `Name=true|false`.
    #[error("invalid feature gate setting {item:?}: expected Name=true or Name=false")]
    BadFeatureGateFlag {
        /// The item given.
        item: String,
    },
    /// A request uses `firstAvailable` while `DRAPrioritizedList` is off.
    #[error(
        "claim {claim}, request {request}: has subrequests, but the DRAPrioritizedList feature is disabled"
    )]
    PrioritizedListDisabled {
        /// The claim, as `namespace/name`.
        claim: String,
        /// The request.
        request: String,
    },
    /// A request asks for capacity while `DRAConsumableCapacity` is off.
    #[error(
        "claim {claim}, {kind} {request}: has capacity requests, but the DRAConsumableCapacity feature is disabled"
    )]
    ConsumableCapacityDisabled {
        /// The claim.
        claim: String,
        /// `request` or `subrequest`.
        kind: &'static str,
        /// The request or subrequest name.
        request: String,
    },
    /// A selector without a CEL expression.
    #[error(
        "claim {claim}, request {request}, selector #{index}: CEL expression empty (unsupported selector type?)"
    )]
    EmptySelector {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The selector's index.
        index: usize,
    },
    /// `adminAccess` is set while `DRAAdminAccess` is off.
    #[error(
        "claim {claim}, request {request}: admin access is requested, but the feature is disabled"
    )]
    AdminAccessDisabled {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
    },
    /// `adminAccess: true` in a namespace that is not labelled for it.
    #[error(
        "claim {claim}, request {request}: admin access to devices requires the {label}: \"true\" label on namespace {namespace}"
    )]
    AdminAccessForbidden {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The namespace.
        namespace: String,
        /// The label key.
        label: &'static str,
    },
    /// A request without a device class.
    #[error(
        "claim {claim}, request {request}: missing device class name (unsupported request type?)"
    )]
    MissingDeviceClass {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
    },
    /// A request names a device class that does not exist.
    #[error(
        "claim {claim}, request {request}: could not retrieve device class {class}: deviceclass.resource.k8s.io \"{class}\" not found"
    )]
    UnknownDeviceClass {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The class name.
        class: String,
    },
    /// An `ExactCount` request asks for more devices than can be counted.
    #[error("claim {claim}, request {request}: exact count {count} is too large")]
    CountTooLarge {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The count.
        count: i64,
    },
    /// An allocation mode the allocator does not know.
    #[error("claim {claim}, request {request}: unsupported count mode {mode}")]
    UnsupportedAllocationMode {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The mode.
        mode: String,
    },
    /// An `All` request while a pool is incomplete or invalid.
    #[error(
        "claim {claim}, request {request}: asks for all devices, but resource pool {pool} is currently {state}"
    )]
    AllDevicesPoolNotReady {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The pool as `driver/pool`.
        pool: String,
        /// `being updated` or `invalid`.
        state: &'static str,
    },
    /// A claim asks for more devices than one allocation result can hold.
    #[error(
        "claim {claim}: number of requested devices {count} exceeds the claim limit of {limit}"
    )]
    TooManyDevices {
        /// The claim.
        claim: String,
        /// The minimum number of devices asked for.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A constraint with neither `matchAttribute` nor `distinctAttribute`.
    #[error("claim {claim}, constraint #{index}: empty constraint (unsupported constraint type?)")]
    EmptyConstraint {
        /// The claim.
        claim: String,
        /// The constraint's index.
        index: usize,
    },
    /// A CEL expression did not compile.
    #[error("{owner}: selector #{index}: CEL compile error: {message}")]
    CelCompile {
        /// `class NAME` or `claim NAME`.
        owner: String,
        /// The selector's index.
        index: usize,
        /// The compiler's message.
        message: String,
    },
    /// A CEL expression failed at runtime.
    #[error("{owner}: selector #{index}: CEL runtime error: {message}")]
    CelRuntime {
        /// `class NAME` or `claim NAME`.
        owner: String,
        /// The selector's index.
        index: usize,
        /// The evaluator's message.
        message: String,
    },
    /// A request defines derived attributes while `DRADerivedAttributes` is off.
    #[error(
        "claim {claim}, request {request}: has derived attributes, but the DRADerivedAttributes feature is disabled"
    )]
    DerivedAttributesDisabled {
        /// The claim.
        claim: String,
        /// The request or subrequest name.
        request: String,
    },
    /// A derived attribute breaks one of the spec's rules (name, count, use, cost).
    #[error("claim {claim}, request {request}: derived attribute {name:?}: {reason}")]
    InvalidDerivedAttribute {
        /// The claim.
        claim: String,
        /// The request or subrequest name.
        request: String,
        /// The derived attribute's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Evaluating a derived attribute failed for a candidate device, which aborts allocation.
    #[error(
        "claim {claim}, request {request}: derived attribute {name}: device {device}: CEL runtime error: {message}"
    )]
    DerivedAttributeRuntime {
        /// The claim.
        claim: String,
        /// The request or subrequest name.
        request: String,
        /// The derived attribute's name.
        name: String,
        /// The device as `driver/pool/device`.
        device: String,
        /// The evaluator's message.
        message: String,
    },
    /// An `All` request includes a device that a claim constraint rejects.
    #[error(
        "claim {claim}, request {request}: cannot add device {device} because a claim constraint would not be satisfied"
    )]
    ConstraintRejectsRequiredDevice {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The device as `driver/pool/device`.
        device: String,
    },
    /// A device attribute used by a constraint has no value of a known type.
    #[error("claim {claim}: device {device}: attribute {attribute}: unsupported attribute value")]
    UnsupportedAttributeValue {
        /// The claim.
        claim: String,
        /// The device.
        device: String,
        /// The attribute.
        attribute: String,
    },
    /// A capacity request that the device's request policy cannot represent.
    #[error(
        "claim {claim}, request {request}: device {device}: capacity {capacity:?}: capacity request cannot be represented in the device's range arithmetic"
    )]
    CapacityNotRepresentable {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The device.
        device: String,
        /// The capacity.
        capacity: String,
    },
    /// A request names one capacity twice (qualified and unqualified).
    #[error(
        "claim {claim}, request {request}: capacity {capacity:?} requested twice, with and without the driver domain"
    )]
    CapacityRequestedTwice {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The capacity.
        capacity: String,
    },
    /// A node selector that cannot be evaluated.
    #[error("failed to perform node selection for {what}: {message}")]
    NodeSelection {
        /// The slice or device.
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// A slice node selector with more than one term, which the result cannot express.
    #[error(
        "create NodeSelector for claim {claim}: unsupported ResourceSlice.NodeSelector with {terms} terms"
    )]
    NodeSelectorTerms {
        /// The claim.
        claim: String,
        /// The number of terms.
        terms: usize,
    },
    /// No solution, and some pools were invalid (so the devices there could not be used).
    #[error("allocation failed and invalid resource pools were encountered: {}", reasons.join("; "))]
    InvalidPools {
        /// One `driver/pool: reason` per invalid pool.
        reasons: Vec<String>,
    },
    /// A scenario file that is not valid YAML.
    #[error("scenario: {message}")]
    ScenarioParse {
        /// The parser's message.
        message: String,
    },
    /// A scenario document that does not decode.
    #[error("scenario document #{index} ({kind}): {message}")]
    ScenarioDocument {
        /// The document's position (from 0).
        index: usize,
        /// Its kind.
        kind: String,
        /// What is wrong.
        message: String,
    },
    /// The named node is not in the input.
    #[error("node {node} not found in the input")]
    UnknownNode {
        /// The node name.
        node: String,
    },
    /// No node named and not exactly one node in the input.
    #[error(
        "no node chosen: the input has {nodes} nodes; name one with --node or AllocationOptions.node"
    )]
    NodeNotChosen {
        /// How many nodes the input has.
        nodes: usize,
    },
    /// An `AllocationOptions` field with a value the allocator cannot use.
    #[error("AllocationOptions.{field}: {message}")]
    BadOption {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A claim listed in the options is not in the input.
    #[error("claim {claim} not found in the input")]
    UnknownClaim {
        /// The claim as given.
        claim: String,
    },
}
