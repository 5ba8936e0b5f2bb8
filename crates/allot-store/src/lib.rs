//! The object store that every control-plane loop of allot reads and writes.
//!
//! Key design decision: one in-memory store of typed objects (the `allot-api` types), keyed by
//! kind, namespace and name, with a single monotonically increasing resourceVersion and an
//! append-only event log. Loops never talk to each other: they read the store, write the store,
//! and are woken by the events their writes cause, exactly as Kubernetes controllers are woken by
//! watches. The store is deterministic: iteration is always in key order and the only sources of
//! identity (uids, resourceVersions, creation timestamps) are counters and the clock value the
//! caller passes in. The cost: everything lives in memory, so a persistent server needs another
//! implementation behind the same operations.

#![deny(missing_docs)]

mod history;
mod journal;
mod objects;

pub use journal::Uncommitted;
use journal::key_of_stored;

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use allot_api::allot::v1alpha1::NodeTopology;
use allot_api::apps::v1::{ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet};
use allot_api::batch::v1::{CronJob, Job};
use allot_api::coordination::v1::Lease;
use allot_api::core::v1::{
    Event as CoreEvent, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
    ReplicationController, Service,
};
use allot_api::load::Object;
use allot_api::meta::v1::ObjectMeta;
use allot_api::policy::v1::PodDisruptionBudget;
use allot_api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use allot_api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use allot_api::resource::v1alpha3::ResourcePoolStatusRequest;
use allot_api::scheduling::v1::PriorityClass;
use allot_api::scheduling::v1beta1::PodGroup;
use allot_api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};

/// The kinds the store holds, in the order `kubectl get` would list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `v1 Namespace` (cluster-scoped).
    Namespace,
    /// `v1 Node` (cluster-scoped).
    Node,
    /// `scheduling.k8s.io/v1 PriorityClass` (cluster-scoped).
    PriorityClass,
    /// `storage.k8s.io/v1 StorageClass` (cluster-scoped).
    StorageClass,
    /// `storage.k8s.io/v1 CSIDriver` (cluster-scoped).
    CSIDriver,
    /// `storage.k8s.io/v1 CSINode` (cluster-scoped).
    CSINode,
    /// `v1 PersistentVolume` (cluster-scoped).
    PersistentVolume,
    /// `storage.k8s.io/v1 VolumeAttachment` (cluster-scoped).
    VolumeAttachment,
    /// `resource.k8s.io/v1 DeviceClass` (cluster-scoped).
    DeviceClass,
    /// `resource.k8s.io/v1 ResourceSlice` (cluster-scoped).
    ResourceSlice,
    /// `resource.k8s.io DeviceTaintRule` (cluster-scoped).
    DeviceTaintRule,
    /// `resource.k8s.io/v1alpha3 ResourcePoolStatusRequest` (cluster-scoped).
    ResourcePoolStatusRequest,
    /// `resource.k8s.io/v1 ResourceClaimTemplate`.
    ResourceClaimTemplate,
    /// `resource.k8s.io/v1 ResourceClaim`.
    ResourceClaim,
    /// `scheduling.k8s.io PodGroup`.
    PodGroup,
    /// `storage.k8s.io/v1 CSIStorageCapacity`.
    CSIStorageCapacity,
    /// `v1 PersistentVolumeClaim`.
    PersistentVolumeClaim,
    /// `v1 Service`.
    Service,
    /// `policy/v1 PodDisruptionBudget`.
    PodDisruptionBudget,
    /// `apps/v1 Deployment`.
    Deployment,
    /// `apps/v1 ReplicaSet`.
    ReplicaSet,
    /// `apps/v1 StatefulSet`.
    StatefulSet,
    /// `apps/v1 DaemonSet`.
    DaemonSet,
    /// `apps/v1 ControllerRevision`.
    ControllerRevision,
    /// `batch/v1 Job`.
    Job,
    /// `batch/v1 CronJob`.
    CronJob,
    /// `v1 ReplicationController`.
    ReplicationController,
    /// `v1 ServiceAccount`.
    ServiceAccount,
    /// `v1 Secret`.
    Secret,
    /// `v1 ConfigMap`.
    ConfigMap,
    /// `v1 Endpoints`.
    Endpoints,
    /// `v1 ResourceQuota`.
    ResourceQuota,
    /// `v1 LimitRange`.
    LimitRange,
    /// `v1 PodTemplate`.
    PodTemplate,
    /// `discovery.k8s.io/v1 EndpointSlice`.
    EndpointSlice,
    /// `autoscaling/v2 HorizontalPodAutoscaler`.
    HorizontalPodAutoscaler,
    /// `certificates.k8s.io/v1 CertificateSigningRequest` (cluster-scoped).
    CertificateSigningRequest,
    /// `admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy` (cluster-scoped).
    ValidatingAdmissionPolicy,
    /// `admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding` (cluster-scoped).
    ValidatingAdmissionPolicyBinding,
    /// `networking.k8s.io/v1 ServiceCIDR` (cluster-scoped).
    ServiceCIDR,
    /// `networking.k8s.io/v1 IPAddress` (cluster-scoped).
    IPAddress,
    /// `storage.k8s.io/v1 VolumeAttributesClass` (cluster-scoped).
    VolumeAttributesClass,
    /// `v1 Pod`.
    Pod,
    /// `v1 Event`.
    Event,
    /// `allot.dev/v1alpha1 NodeTopology` (cluster-scoped): the machine of a simulated node.
    NodeTopology,
    /// `rbac.authorization.k8s.io/v1 Role`.
    Role,
    /// `rbac.authorization.k8s.io/v1 ClusterRole` (cluster-scoped).
    ClusterRole,
    /// `rbac.authorization.k8s.io/v1 RoleBinding`.
    RoleBinding,
    /// `rbac.authorization.k8s.io/v1 ClusterRoleBinding` (cluster-scoped).
    ClusterRoleBinding,
    /// `coordination.k8s.io/v1 Lease`.
    Lease,
}

impl Kind {
    /// Whether creation starts `metadata.generation` at 1. Upstream's registry strategies do so
    /// for the kinds with a spec whose changes controllers observe; Namespace, Node, Pod, Event,
    /// Lease, the RBAC kinds and the storage and service kinds below (whose strategies set no
    /// generation in PrepareForCreate) get none.
    pub fn starts_generation(self) -> bool {
        !matches!(
            self,
            Kind::Namespace
                | Kind::Node
                | Kind::Pod
                | Kind::Event
                | Kind::Lease
                | Kind::Role
                | Kind::ClusterRole
                | Kind::RoleBinding
                | Kind::ClusterRoleBinding
                | Kind::StorageClass
                | Kind::CSINode
                | Kind::CSIStorageCapacity
                | Kind::PersistentVolume
                | Kind::PersistentVolumeClaim
                | Kind::VolumeAttachment
                | Kind::Service
                | Kind::ControllerRevision
                | Kind::ServiceAccount
                | Kind::Secret
                | Kind::ConfigMap
                | Kind::Endpoints
                | Kind::ResourceQuota
                | Kind::LimitRange
                | Kind::PodTemplate
                | Kind::CertificateSigningRequest
                | Kind::ServiceCIDR
                | Kind::IPAddress
                | Kind::VolumeAttributesClass
        )
    }

    /// Every kind, in list order.
    pub const ALL: [Kind; 50] = [
        Kind::Namespace,
        Kind::Node,
        Kind::PriorityClass,
        Kind::StorageClass,
        Kind::CSIDriver,
        Kind::CSINode,
        Kind::PersistentVolume,
        Kind::VolumeAttachment,
        Kind::DeviceClass,
        Kind::ResourceSlice,
        Kind::DeviceTaintRule,
        Kind::ResourcePoolStatusRequest,
        Kind::ResourceClaimTemplate,
        Kind::ResourceClaim,
        Kind::PodGroup,
        Kind::CSIStorageCapacity,
        Kind::PersistentVolumeClaim,
        Kind::Service,
        Kind::PodDisruptionBudget,
        Kind::Deployment,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::DaemonSet,
        Kind::ControllerRevision,
        Kind::Job,
        Kind::CronJob,
        Kind::ReplicationController,
        Kind::ServiceAccount,
        Kind::Secret,
        Kind::ConfigMap,
        Kind::Endpoints,
        Kind::ResourceQuota,
        Kind::LimitRange,
        Kind::PodTemplate,
        Kind::EndpointSlice,
        Kind::HorizontalPodAutoscaler,
        Kind::CertificateSigningRequest,
        Kind::ValidatingAdmissionPolicy,
        Kind::ValidatingAdmissionPolicyBinding,
        Kind::ServiceCIDR,
        Kind::IPAddress,
        Kind::VolumeAttributesClass,
        Kind::Pod,
        Kind::Event,
        Kind::NodeTopology,
        Kind::Role,
        Kind::ClusterRole,
        Kind::RoleBinding,
        Kind::ClusterRoleBinding,
        Kind::Lease,
    ];

    /// The kind's name as in `kind:`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Namespace => "Namespace",
            Kind::Node => "Node",
            Kind::DeviceClass => "DeviceClass",
            Kind::ResourceSlice => "ResourceSlice",
            Kind::DeviceTaintRule => "DeviceTaintRule",
            Kind::ResourcePoolStatusRequest => "ResourcePoolStatusRequest",
            Kind::ResourceClaimTemplate => "ResourceClaimTemplate",
            Kind::ResourceClaim => "ResourceClaim",
            Kind::PodGroup => "PodGroup",
            Kind::Pod => "Pod",
            Kind::Event => "Event",
            Kind::NodeTopology => "NodeTopology",
            Kind::Role => "Role",
            Kind::ClusterRole => "ClusterRole",
            Kind::RoleBinding => "RoleBinding",
            Kind::ClusterRoleBinding => "ClusterRoleBinding",
            Kind::Lease => "Lease",
            Kind::PriorityClass => "PriorityClass",
            Kind::StorageClass => "StorageClass",
            Kind::CSIDriver => "CSIDriver",
            Kind::CSINode => "CSINode",
            Kind::PersistentVolume => "PersistentVolume",
            Kind::VolumeAttachment => "VolumeAttachment",
            Kind::CSIStorageCapacity => "CSIStorageCapacity",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
            Kind::Service => "Service",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::Deployment => "Deployment",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::DaemonSet => "DaemonSet",
            Kind::ControllerRevision => "ControllerRevision",
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
            Kind::ReplicationController => "ReplicationController",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::Secret => "Secret",
            Kind::ConfigMap => "ConfigMap",
            Kind::Endpoints => "Endpoints",
            Kind::ResourceQuota => "ResourceQuota",
            Kind::LimitRange => "LimitRange",
            Kind::PodTemplate => "PodTemplate",
            Kind::EndpointSlice => "EndpointSlice",
            Kind::HorizontalPodAutoscaler => "HorizontalPodAutoscaler",
            Kind::CertificateSigningRequest => "CertificateSigningRequest",
            Kind::ValidatingAdmissionPolicy => "ValidatingAdmissionPolicy",
            Kind::ValidatingAdmissionPolicyBinding => "ValidatingAdmissionPolicyBinding",
            Kind::ServiceCIDR => "ServiceCIDR",
            Kind::IPAddress => "IPAddress",
            Kind::VolumeAttributesClass => "VolumeAttributesClass",
        }
    }

    /// The `apiVersion` the store writes for this kind.
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Namespace | Kind::Node | Kind::Pod | Kind::Event => "v1",
            Kind::DeviceClass
            | Kind::ResourceSlice
            | Kind::ResourceClaimTemplate
            | Kind::ResourceClaim => "resource.k8s.io/v1",
            Kind::DeviceTaintRule | Kind::ResourcePoolStatusRequest => "resource.k8s.io/v1alpha3",
            Kind::PodGroup => "scheduling.k8s.io/v1beta1",
            Kind::NodeTopology => "allot.dev/v1alpha1",
            Kind::Role | Kind::ClusterRole | Kind::RoleBinding | Kind::ClusterRoleBinding => {
                "rbac.authorization.k8s.io/v1"
            }
            Kind::Lease => "coordination.k8s.io/v1",
            Kind::PersistentVolume
            | Kind::PersistentVolumeClaim
            | Kind::Service
            | Kind::ReplicationController => "v1",
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            Kind::StorageClass
            | Kind::CSIDriver
            | Kind::CSINode
            | Kind::VolumeAttachment
            | Kind::CSIStorageCapacity => "storage.k8s.io/v1",
            Kind::PodDisruptionBudget => "policy/v1",
            Kind::Deployment
            | Kind::ReplicaSet
            | Kind::StatefulSet
            | Kind::DaemonSet
            | Kind::ControllerRevision => "apps/v1",
            Kind::Job | Kind::CronJob => "batch/v1",
            Kind::ServiceAccount => "v1",
            Kind::Secret => "v1",
            Kind::ConfigMap => "v1",
            Kind::Endpoints => "v1",
            Kind::ResourceQuota => "v1",
            Kind::LimitRange => "v1",
            Kind::PodTemplate => "v1",
            Kind::EndpointSlice => "discovery.k8s.io/v1",
            Kind::HorizontalPodAutoscaler => "autoscaling/v2",
            Kind::CertificateSigningRequest => "certificates.k8s.io/v1",
            Kind::ValidatingAdmissionPolicy => "admissionregistration.k8s.io/v1",
            Kind::ValidatingAdmissionPolicyBinding => "admissionregistration.k8s.io/v1",
            Kind::ServiceCIDR => "networking.k8s.io/v1",
            Kind::IPAddress => "networking.k8s.io/v1",
            Kind::VolumeAttributesClass => "storage.k8s.io/v1",
        }
    }

    /// Whether objects of this kind live in a namespace.
    pub fn namespaced(self) -> bool {
        matches!(
            self,
            Kind::ResourceClaimTemplate
                | Kind::ResourceClaim
                | Kind::PodGroup
                | Kind::Pod
                | Kind::Event
                | Kind::Role
                | Kind::RoleBinding
                | Kind::Lease
                | Kind::CSIStorageCapacity
                | Kind::PersistentVolumeClaim
                | Kind::Service
                | Kind::PodDisruptionBudget
                | Kind::Deployment
                | Kind::ReplicaSet
                | Kind::StatefulSet
                | Kind::DaemonSet
                | Kind::ControllerRevision
                | Kind::Job
                | Kind::CronJob
                | Kind::ReplicationController
                | Kind::ServiceAccount
                | Kind::Secret
                | Kind::ConfigMap
                | Kind::Endpoints
                | Kind::ResourceQuota
                | Kind::LimitRange
                | Kind::PodTemplate
                | Kind::EndpointSlice
                | Kind::HorizontalPodAutoscaler
        )
    }
}

/// Where an object lives: kind, namespace ("" for cluster-scoped kinds) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The kind.
    pub kind: Kind,
    /// The namespace, empty for cluster-scoped kinds.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// A key.
    pub fn new(kind: Kind, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

/// A key borrowed from its parts, so that lookups need not allocate an [`ObjectKey`]. Equal
/// and hashed exactly as `ObjectKey` is (kind, namespace, name).
trait KeyParts {
    fn parts(&self) -> (Kind, &str, &str);
}

impl KeyParts for ObjectKey {
    fn parts(&self) -> (Kind, &str, &str) {
        (self.kind, &self.namespace, &self.name)
    }
}

impl KeyParts for (Kind, &str, &str) {
    fn parts(&self) -> (Kind, &str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn KeyParts + 'a> for ObjectKey {
    fn borrow(&self) -> &(dyn KeyParts + 'a) {
        self
    }
}

impl PartialEq for dyn KeyParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyParts + '_ {}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind.name(), self.name)
        } else {
            write!(f, "{} {}/{}", self.kind.name(), self.namespace, self.name)
        }
    }
}

/// An object type the store can hold.
pub trait Resource: Clone + PartialEq + Sized + 'static {
    /// Its kind.
    const KIND: Kind;
    /// Its metadata.
    fn meta(&self) -> &ObjectMeta;
    /// Its metadata, mutably.
    fn meta_mut(&mut self) -> &mut ObjectMeta;
    /// Wraps it in the store's object enum.
    fn into_stored(self) -> Stored;
    /// Wraps a shared copy in the store's object enum (no copy of the object).
    fn into_stored_shared(object: Arc<Self>) -> Stored;
    /// Borrows it out of the store's object enum, when the kinds agree.
    fn from_stored(stored: &Stored) -> Option<&Self>;
    /// Borrows the shared copy out of the store's object enum, when the kinds agree: a
    /// reader that keeps an object clones the `Arc`, not the object.
    fn from_stored_shared(stored: &Stored) -> Option<&Arc<Self>>;
    /// Sets `apiVersion` and `kind` as Kubernetes would serialise them.
    fn set_type_meta(&mut self);
}

macro_rules! stored_kinds {
    ($($variant:ident => $ty:ty),* $(,)?) => {
        /// One stored object of any kind. The object is shared: the store's map, its event
        /// log and any reader that keeps it hold the same copy, so a clone costs a reference
        /// count, and a change (`Arc::make_mut`) copies the object only while others share it.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Stored {
            $(
                #[doc = concat!("A `", stringify!($variant), "`.")]
                $variant(Arc<$ty>),
            )*
        }

        impl Stored {
            /// The object's kind.
            pub fn kind(&self) -> Kind {
                match self {
                    $(Stored::$variant(_) => Kind::$variant,)*
                }
            }

            /// The object's metadata.
            pub fn meta(&self) -> &ObjectMeta {
                match self {
                    $(Stored::$variant(o) => &o.metadata,)*
                }
            }

            /// Sets `apiVersion` and `kind` as Kubernetes would serialise them (copying the
            /// object only when they change and someone else shares it).
            pub fn set_type_meta(&mut self) {
                match self {
                    $(Stored::$variant(o) => {
                        let kind = Kind::$variant;
                        if o.api_version != kind.api_version() || o.kind != kind.name() {
                            Resource::set_type_meta(Arc::make_mut(o));
                        }
                    })*
                }
            }

            /// The object's metadata, mutably (copying the object when someone else shares
            /// it).
            pub fn meta_mut(&mut self) -> &mut ObjectMeta {
                match self {
                    $(Stored::$variant(o) => &mut Arc::make_mut(o).metadata,)*
                }
            }

            /// The object as Kubernetes serialises it (with `apiVersion` and `kind`).
            pub fn to_json(&self) -> serde_json::Value {
                let mut value = match self {
                    $(Stored::$variant(o) => serde_json::to_value(&**o),)*
                }
                .unwrap_or(serde_json::Value::Null);
                if let serde_json::Value::Object(map) = &mut value {
                    let mut ordered = serde_json::Map::new();
                    ordered.insert(
                        "apiVersion".into(),
                        serde_json::Value::String(self.kind().api_version().into()),
                    );
                    ordered.insert(
                        "kind".into(),
                        serde_json::Value::String(self.kind().name().into()),
                    );
                    for (k, v) in std::mem::take(map) {
                        if k != "apiVersion" && k != "kind" {
                            ordered.insert(k, v);
                        }
                    }
                    *map = ordered;
                }
                value
            }

            /// Converts a decoded document into a stored object; `None` for kinds the store
            /// does not hold (options documents, extensions).
            pub fn from_object(object: Object) -> Option<Stored> {
                match object {
                    $(Object::$variant(o) => Some(Stored::$variant(Arc::new(o))),)*
                    _ => None,
                }
            }

            /// A copy of the object as the decoded document enum (for validation rules that
            /// compare an object with its stored version).
            pub fn to_object(&self) -> Object {
                match self {
                    $(Stored::$variant(o) => Object::$variant((**o).clone()),)*
                }
            }
        }

        /// The typed object's own serialisation (its `apiVersion` and `kind` fields as they
        /// are held; [`Stored::to_json`] sets them): for encoders that take the type meta
        /// from elsewhere, such as the protobuf envelope.
        impl serde::Serialize for Stored {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Stored::$variant(o) => serde::Serialize::serialize(&**o, serializer),)*
                }
            }
        }

        impl Store {
            /// [`Store::update`] of an object of any kind. Returns the stored copy, shared.
            pub fn update_stored(&mut self, object: Stored) -> Result<Stored, StoreError> {
                match object {
                    $(Stored::$variant(o) => self.write(o).map(Resource::into_stored_shared),)*
                }
            }
        }

        $(
            impl Resource for $ty {
                const KIND: Kind = Kind::$variant;
                fn meta(&self) -> &ObjectMeta {
                    &self.metadata
                }
                fn meta_mut(&mut self) -> &mut ObjectMeta {
                    &mut self.metadata
                }
                fn into_stored(self) -> Stored {
                    Stored::$variant(Arc::new(self))
                }
                fn into_stored_shared(object: Arc<Self>) -> Stored {
                    Stored::$variant(object)
                }
                fn from_stored(stored: &Stored) -> Option<&Self> {
                    match stored {
                        Stored::$variant(o) => Some(o),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
                fn from_stored_shared(stored: &Stored) -> Option<&Arc<Self>> {
                    match stored {
                        Stored::$variant(o) => Some(o),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
                fn set_type_meta(&mut self) {
                    let kind = Kind::$variant;
                    if self.api_version != kind.api_version() {
                        self.api_version = kind.api_version().to_string();
                    }
                    if self.kind != kind.name() {
                        self.kind = kind.name().to_string();
                    }
                }
            }
        )*
    };
}

stored_kinds! {
    Namespace => Namespace,
    Node => Node,
    DeviceClass => DeviceClass,
    ResourceSlice => ResourceSlice,
    DeviceTaintRule => DeviceTaintRule,
    ResourcePoolStatusRequest => ResourcePoolStatusRequest,
    ResourceClaimTemplate => ResourceClaimTemplate,
    ResourceClaim => ResourceClaim,
    PodGroup => PodGroup,
    Pod => Pod,
    Event => CoreEvent,
    NodeTopology => NodeTopology,
    Role => Role,
    ClusterRole => ClusterRole,
    RoleBinding => RoleBinding,
    ClusterRoleBinding => ClusterRoleBinding,
    Lease => Lease,
    PriorityClass => PriorityClass,
    StorageClass => StorageClass,
    CSIDriver => CSIDriver,
    CSINode => CSINode,
    PersistentVolume => PersistentVolume,
    VolumeAttachment => VolumeAttachment,
    CSIStorageCapacity => CSIStorageCapacity,
    PersistentVolumeClaim => PersistentVolumeClaim,
    Service => Service,
    PodDisruptionBudget => PodDisruptionBudget,
    Deployment => Deployment,
    ReplicaSet => ReplicaSet,
    StatefulSet => StatefulSet,
    DaemonSet => DaemonSet,
    ControllerRevision => ControllerRevision,
    Job => Job,
    CronJob => CronJob,
    ReplicationController => ReplicationController,
    ServiceAccount => allot_api::core::v1::ServiceAccount,
    Secret => allot_api::core::v1::Secret,
    ConfigMap => allot_api::core::v1::ConfigMap,
    Endpoints => allot_api::core::v1::Endpoints,
    ResourceQuota => allot_api::core::v1::ResourceQuota,
    LimitRange => allot_api::core::v1::LimitRange,
    PodTemplate => allot_api::core::v1::PodTemplate,
    EndpointSlice => allot_api::discovery::v1::EndpointSlice,
    HorizontalPodAutoscaler => allot_api::autoscaling::v2::HorizontalPodAutoscaler,
    CertificateSigningRequest => allot_api::certificates::v1::CertificateSigningRequest,
    ValidatingAdmissionPolicy => allot_api::admissionregistration::v1::ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding => allot_api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    ServiceCIDR => allot_api::networking::v1::ServiceCIDR,
    IPAddress => allot_api::networking::v1::IPAddress,
    VolumeAttributesClass => allot_api::storage::v1::VolumeAttributesClass,
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Updated (spec, status or metadata).
    Modified,
    /// Removed.
    Deleted,
}

/// One entry of the event log.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The resourceVersion the change produced.
    pub resource_version: u64,
    /// What happened.
    pub event_type: EventType,
    /// Which object.
    pub key: ObjectKey,
    /// The object after the change (before it, for `Deleted`).
    pub object: Stored,
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// `create` of an object that exists (HTTP 409 AlreadyExists).
    #[error("{key} already exists")]
    AlreadyExists {
        /// The object.
        key: ObjectKey,
    },
    /// The object does not exist (HTTP 404 NotFound).
    #[error("{key} not found")]
    NotFound {
        /// The object.
        key: ObjectKey,
    },
    /// An update carried a stale resourceVersion (HTTP 409 Conflict).
    #[error(
        "Operation cannot be fulfilled on {key}: the object has been modified; please apply your changes to the latest version and try again (have {have}, stored {stored})"
    )]
    Conflict {
        /// The object.
        key: ObjectKey,
        /// The resourceVersion the writer had.
        have: String,
        /// The resourceVersion in the store.
        stored: String,
    },
    /// The object has no name and no generateName.
    #[error("{kind}: metadata.name or metadata.generateName is required")]
    NameRequired {
        /// The kind name.
        kind: &'static str,
    },
}

/// The store.
#[derive(Debug, Clone, Default)]
pub struct Store {
    objects: objects::Objects,
    resource_version: u64,
    uid_counter: u64,
    name_counter: u64,
    events: Vec<Event>,
    /// The newest resourceVersion whose event compaction dropped (0: none dropped).
    compacted_through: u64,
    /// Pre-images for rollback, while a mirror of shared storage has uncommitted changes.
    journal: Option<journal::Journal>,
    /// ResourceSlice names by (driver, pool name): a pool's slices without scanning them all.
    pool_slices: BTreeMap<(String, String), BTreeSet<String>>,
    /// Dependents by owner uid: the keys of the objects whose `ownerReferences` name the uid,
    /// so that a controller finds what it owns, and the garbage collector what an owner leaves
    /// behind, without scanning every object.
    dependents: HashMap<String, BTreeSet<ObjectKey>, foldhash::fast::FixedState>,
}

impl Store {
    /// An empty store.
    pub fn new() -> Self {
        Store::default()
    }

    /// The newest resourceVersion handed out.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// The key of an object.
    pub fn key_of<R: Resource>(object: &R) -> ObjectKey {
        let meta = object.meta();
        let namespace = if R::KIND.namespaced() {
            meta.namespace.clone()
        } else {
            String::new()
        };
        ObjectKey::new(R::KIND, namespace, meta.name.clone())
    }

    /// One object by namespace and name.
    pub fn get<R: Resource>(&self, namespace: &str, name: &str) -> Option<&R> {
        let namespace = if R::KIND.namespaced() { namespace } else { "" };
        self.objects
            .get(&(R::KIND, namespace, name))
            .and_then(R::from_stored)
    }

    /// One object by namespace and name, shared: a reader that keeps it clones the `Arc`, not
    /// the object.
    pub fn get_shared<R: Resource>(&self, namespace: &str, name: &str) -> Option<&Arc<R>> {
        let namespace = if R::KIND.namespaced() { namespace } else { "" };
        let key = (R::KIND, namespace, name);
        self.objects
            .get(&key as &dyn KeyParts)
            .and_then(R::from_stored_shared)
    }

    /// One object of any kind.
    pub fn get_stored(&self, key: &ObjectKey) -> Option<&Stored> {
        self.objects.get(key)
    }

    /// The ResourceSlices of one pool, in name order.
    pub fn pool_slices<'a>(
        &'a self,
        driver: &str,
        pool: &str,
    ) -> impl Iterator<Item = &'a ResourceSlice> + 'a {
        self.pool_slices
            .get(&(driver.to_string(), pool.to_string()))
            .into_iter()
            .flatten()
            .filter_map(|name| self.get::<ResourceSlice>("", name))
    }

    /// Stores an object under its key, keeping the indexes; returns the one it replaced.
    fn put(&mut self, key: &ObjectKey, object: Stored) -> Option<Stored> {
        if let Stored::ResourceSlice(slice) = &object {
            self.pool_slices
                .entry((slice.spec.driver.clone(), slice.spec.pool.name.clone()))
                .or_default()
                .insert(slice.metadata.name.clone());
        }
        let owners_changed = {
            let before = self
                .objects
                .get(key)
                .map(|o| o.meta().owner_references.as_slice());
            let after = object.meta().owner_references.as_slice();
            !before
                .unwrap_or_default()
                .iter()
                .map(|r| &r.uid)
                .eq(after.iter().map(|r| &r.uid))
        };
        if owners_changed && let Some(old) = self.objects.get(key).cloned() {
            self.unindex_owners(key, &old);
        }
        if owners_changed {
            self.index_owners(key, &object);
        }
        let previous = self.objects.insert(key, object);
        if let Some(Stored::ResourceSlice(old)) = &previous {
            self.unindex_slice_if_moved(old);
        }
        previous
    }

    /// Removes an object, keeping the indexes.
    fn take(&mut self, key: &ObjectKey) -> Option<Stored> {
        let object = self.objects.remove(key)?;
        if let Stored::ResourceSlice(old) = &object {
            self.unindex_slice(old);
        }
        self.unindex_owners(key, &object);
        Some(object)
    }

    fn index_owners(&mut self, key: &ObjectKey, object: &Stored) {
        for owner in &object.meta().owner_references {
            self.dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert(key.clone());
        }
    }

    fn unindex_owners(&mut self, key: &ObjectKey, object: &Stored) {
        for owner in &object.meta().owner_references {
            if let Some(keys) = self.dependents.get_mut(&owner.uid) {
                keys.remove(key);
                if keys.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
    }

    /// The objects whose `metadata.ownerReferences` name the owner uid `owner`, in key order
    /// (kind, namespace, name). Kept by every write, so it never lags behind the objects.
    pub fn dependents<'a>(&'a self, owner: &str) -> impl Iterator<Item = &'a ObjectKey> + 'a {
        self.dependents.get(owner).into_iter().flatten()
    }

    /// Whether any object names the owner uid `owner` in its `metadata.ownerReferences`.
    pub fn has_dependents(&self, owner: &str) -> bool {
        self.dependents.contains_key(owner)
    }

    /// Forgets a replaced slice's pool entry when the slice now lives in another pool.
    fn unindex_slice_if_moved(&mut self, old: &ResourceSlice) {
        let still_there = matches!(
            self.get::<ResourceSlice>("", &old.metadata.name),
            Some(now) if now.spec.driver == old.spec.driver && now.spec.pool.name == old.spec.pool.name
        );
        if !still_there {
            self.unindex_slice(old);
        }
    }

    fn unindex_slice(&mut self, old: &ResourceSlice) {
        let pool = (old.spec.driver.clone(), old.spec.pool.name.clone());
        if let Some(names) = self.pool_slices.get_mut(&pool) {
            names.remove(&old.metadata.name);
            if names.is_empty() {
                self.pool_slices.remove(&pool);
            }
        }
    }

    /// Every object of a kind, in (namespace, name) order.
    pub fn list<R: Resource>(&self) -> impl Iterator<Item = &R> {
        self.list_kind(R::KIND).filter_map(R::from_stored)
    }

    /// Every object of a kind in one namespace, in name order.
    pub fn list_in<'a, R: Resource + 'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a R> + 'a {
        let namespace = if R::KIND.namespaced() { namespace } else { "" };
        self.objects
            .in_namespace(R::KIND, namespace)
            .filter_map(|(_, v)| R::from_stored(v))
    }

    /// Every object of a kind, as stored values.
    pub fn list_kind(&self, kind: Kind) -> impl Iterator<Item = &Stored> {
        self.objects.of_kind(kind).map(|(_, v)| v)
    }

    /// Every object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Stored)> {
        self.objects.iter()
    }

    /// Creates an object: assigns a name from `generateName` when needed, a uid, a
    /// resourceVersion, and `creationTimestamp = now`. Returns the stored copy.
    pub fn create<R: Resource>(&mut self, object: R, now: &str) -> Result<R, StoreError> {
        self.create_shared(object, now).map(Arc::unwrap_or_clone)
    }

    /// [`Store::create`], returning the stored copy shared (no copy of the object).
    pub fn create_shared<R: Resource>(
        &mut self,
        object: R,
        now: &str,
    ) -> Result<Arc<R>, StoreError> {
        let stored = self.create_stored(object.into_stored(), now)?;
        Ok(R::from_stored_shared(&stored)
            .expect("the store keeps an object's kind")
            .clone())
    }

    /// Inserts an object of any kind (as `kubectl create` would; see [`Store::create`]).
    /// Returns the stored copy, shared with the store. The object is copied only when the
    /// caller still shares it.
    pub fn create_stored(&mut self, mut object: Stored, now: &str) -> Result<Stored, StoreError> {
        let kind = object.kind();
        object.set_type_meta();
        if object.meta().name.is_empty() {
            if object.meta().generate_name.is_empty() {
                return Err(StoreError::NameRequired { kind: kind.name() });
            }
            let name = self.generated_name(&object);
            object.meta_mut().name = name;
        }
        if !kind.namespaced() {
            if !object.meta().namespace.is_empty() {
                object.meta_mut().namespace.clear();
            }
        } else if object.meta().namespace.is_empty() {
            object.meta_mut().namespace = "default".into();
        }
        let key = key_of_stored(&object);
        if self.objects.contains_key(&key) {
            return Err(StoreError::AlreadyExists { key });
        }
        self.uid_counter += 1;
        let rv = self.next_rv();
        let uid_counter = self.uid_counter;
        let meta = object.meta_mut();
        if meta.uid.is_empty() {
            meta.uid = format!("{uid_counter:08x}-0000-4000-8000-{uid_counter:012x}");
        }
        meta.resource_version = rv.to_string();
        if meta.creation_timestamp.is_none() {
            meta.creation_timestamp = Some(now.to_string());
        }
        if meta.generation.is_none() && kind.starts_generation() {
            meta.generation = Some(1);
        }
        prepare_created(&mut object);
        self.put(&key, object.clone());
        self.journal_record(|| None);
        self.events.push(Event {
            resource_version: rv,
            event_type: EventType::Added,
            key,
            object: object.clone(),
        });
        Ok(object)
    }

    /// Replaces an object. When the object carries a resourceVersion it must match the stored
    /// one (optimistic concurrency); an empty resourceVersion overwrites unconditionally.
    /// Returns the stored copy; an update that changes nothing keeps the resourceVersion and
    /// records no event.
    pub fn update<R: Resource>(&mut self, object: R) -> Result<R, StoreError> {
        self.write(Arc::new(object))
            .map(|stored| Arc::unwrap_or_clone(stored))
    }

    /// [`Store::update`], returning the stored copy shared (no copy of the object).
    pub fn update_shared<R: Resource>(&mut self, object: R) -> Result<Arc<R>, StoreError> {
        self.write(Arc::new(object))
    }

    /// [`Store::update`] of a shared object: copied only when the caller still shares it and
    /// the store must set its metadata. Returns the stored copy, shared.
    fn write<R: Resource>(&mut self, mut object: Arc<R>) -> Result<Arc<R>, StoreError> {
        let meta = object.meta();
        let namespace = if R::KIND.namespaced() {
            meta.namespace.as_str()
        } else {
            ""
        };
        let Some(current) = self.objects.get(&(R::KIND, namespace, meta.name.as_str())) else {
            return Err(StoreError::NotFound {
                key: Self::key_of(&*object),
            });
        };
        let stored_meta = current.meta();
        let have = &meta.resource_version;
        if !have.is_empty() && *have != stored_meta.resource_version {
            return Err(StoreError::Conflict {
                key: Self::key_of(&*object),
                have: have.clone(),
                stored: stored_meta.resource_version.clone(),
            });
        }
        {
            // Copies the writer's object only when someone else still shares it.
            let target = Arc::make_mut(&mut object);
            target.set_type_meta();
            let meta = target.meta_mut();
            meta.uid.clone_from(&stored_meta.uid);
            meta.creation_timestamp
                .clone_from(&stored_meta.creation_timestamp);
            meta.resource_version
                .clone_from(&stored_meta.resource_version);
        }
        if let Some(now) = R::from_stored_shared(current)
            && (Arc::ptr_eq(now, &object) || **now == *object)
        {
            return Ok(now.clone());
        }
        let rv = self.next_rv();
        Arc::make_mut(&mut object).meta_mut().resource_version = rv.to_string();
        let key = Self::key_of(&*object);
        let stored = R::into_stored_shared(object.clone());
        let previous = self.put(&key, stored.clone());
        self.journal_record(|| previous);
        self.events.push(Event {
            resource_version: rv,
            event_type: EventType::Modified,
            key,
            object: stored,
        });
        Ok(object)
    }

    /// Reads, changes and writes back an object in one step. The closure's return value is
    /// passed through; the write happens only when the object changed.
    pub fn modify<R: Resource, T>(
        &mut self,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut R) -> T,
    ) -> Result<T, StoreError> {
        let Some(current) = self.get::<R>(namespace, name) else {
            return Err(StoreError::NotFound {
                key: ObjectKey::new(R::KIND, namespace, name),
            });
        };
        let mut object = current.clone();
        let out = change(&mut object);
        self.write(Arc::new(object))?;
        Ok(out)
    }

    /// Deletes an object; returns it.
    pub fn delete(&mut self, key: &ObjectKey) -> Result<Stored, StoreError> {
        let Some(object) = self.take(key) else {
            return Err(StoreError::NotFound { key: key.clone() });
        };
        let rv = self.next_rv();
        self.journal_record(|| Some(object.clone()));
        self.events.push(Event {
            resource_version: rv,
            event_type: EventType::Deleted,
            key: key.clone(),
            object: object.clone(),
        });
        Ok(object)
    }

    /// Forgets the events up to and including resourceVersion `through`, once every reader of
    /// the log has read them (a long simulation would otherwise keep every version of every
    /// object). `events_since` then answers only from what is left. Does nothing while a
    /// journal runs (a rollback needs the events since it began), and while fewer events
    /// would go than stay: dropping moves the ones that stay, so a reader far behind (a
    /// scheduler idle while a week of pods finish) would have the whole unread log moved at
    /// every call; this way each event is moved at most about once per event dropped.
    pub fn compact_events(&mut self, through: u64) {
        if self.journal.is_some() {
            return;
        }
        let end = self
            .events
            .partition_point(|e| e.resource_version <= through);
        if end < self.events.len() - end {
            return;
        }
        if let Some(last) = end.checked_sub(1) {
            self.compacted_through = self
                .compacted_through
                .max(self.events[last].resource_version);
        }
        self.events.drain(..end);
    }

    /// Changes the metadata of the object at `key` as written at resourceVersion `rv`, and of
    /// that write's event, keeping the resourceVersion: bookkeeping a writer adds to its own
    /// write before anyone read it (the API server's managedFields of controller writes).
    /// Returns false, changing nothing, when the object is no longer as written at `rv`.
    pub fn amend_meta(
        &mut self,
        key: &ObjectKey,
        rv: u64,
        change: impl Fn(&mut allot_api::meta::v1::ObjectMeta),
    ) -> bool {
        let rv_text = rv.to_string();
        let Some(object) = self.objects.get_mut(key) else {
            return false;
        };
        if object.meta().resource_version != rv_text {
            return false;
        }
        let at = self.events.partition_point(|e| e.resource_version < rv);
        let Some(event) = self
            .events
            .get_mut(at)
            .filter(|e| e.resource_version == rv && e.key == *key)
        else {
            return false;
        };
        if event.event_type == EventType::Deleted {
            return false;
        }
        change(object.meta_mut());
        event.object = object.clone();
        true
    }

    /// Events with a resourceVersion above `after`, oldest first.
    pub fn events_since(&self, after: u64) -> &[Event] {
        let start = self.events.partition_point(|e| e.resource_version <= after);
        &self.events[start..]
    }

    fn next_rv(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }

    /// A name for `generateName`: the prefix plus five characters from Kubernetes' alphabet
    /// (consonants and digits without look-alikes), drawn from a counter so runs repeat.
    fn generated_name(&mut self, object: &Stored) -> String {
        let kind = object.kind();
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        loop {
            self.name_counter += 1;
            // A multiplicative hash spreads consecutive counters over the suffix space.
            let mut n = self.name_counter.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
            let mut suffix = String::with_capacity(5);
            for _ in 0..5 {
                suffix.push(ALPHABET[(n % ALPHABET.len() as u64) as usize] as char);
                n /= ALPHABET.len() as u64;
            }
            let name = format!("{}{}", object.meta().generate_name, suffix);
            let namespace = if kind.namespaced() {
                object.meta().namespace.as_str()
            } else {
                ""
            };
            if !self.objects.contains_key(&(kind, namespace, name.as_str())) {
                return name;
            }
        }
    }
}

/// What upstream's registry strategies do at creation that needs the uid just assigned: a
/// Job without a manual selector gets its generated selector and pod labels.
fn prepare_created(object: &mut Stored) {
    if let Stored::Job(job) = object
        && job.spec.manual_selector != Some(true)
    {
        allot_api::defaults::workloads::generate_job_selector(Arc::make_mut(job));
    }
}

#[cfg(test)]
mod tests;
