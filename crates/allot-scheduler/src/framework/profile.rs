//! A scheduling profile as data: which plugins run, at which points, with which weights and
//! arguments (the shape of KubeSchedulerConfiguration's `profiles[]`).

use serde_json::Value;

/// One enabled plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginConfig {
    /// The plugin's name (`NodeResourcesFit`, ...).
    pub name: String,
    /// Its Score weight; 0 means the default, 1.
    pub weight: i64,
    /// Its arguments (`pluginConfig[].args`), `null` for the defaults.
    pub args: Value,
    /// Extension points where the plugin is disabled although it implements them (e.g.
    /// `Score` for a filter-only use): `PreEnqueue`, `QueueSort`, `PreFilter`, `Filter`,
    /// `PostFilter`, `PreScore`, `Score`, `Reserve`, `Permit`, `PreBind`, `Bind`.
    pub disabled_points: Vec<String>,
}

impl PluginConfig {
    /// A plugin with default arguments and weight.
    pub fn new(name: &str) -> Self {
        PluginConfig {
            name: name.to_string(),
            weight: 0,
            args: Value::Null,
            disabled_points: Vec::new(),
        }
    }

    /// With a Score weight.
    pub fn weight(mut self, weight: i64) -> Self {
        self.weight = weight;
        self
    }

    /// With arguments.
    pub fn args(mut self, args: Value) -> Self {
        self.args = args;
        self
    }
}

/// A profile: the plugins in order (each runs at every point it implements, in this order,
/// except where disabled), and the share of nodes to find feasible before scoring.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// `spec.schedulerName` of the pods this profile schedules.
    pub scheduler_name: String,
    /// The plugins.
    pub plugins: Vec<PluginConfig>,
    /// `percentageOfNodesToScore`; 0 means upstream's adaptive default.
    pub percentage_of_nodes_to_score: u32,
    /// Per extension point (`PreFilter`, `Filter`, ...), the plugins in the order they run
    /// there, as a KubeSchedulerConfiguration's expansion gives it ([`crate::config`]). A point
    /// not listed runs its plugins in `plugins` order. An entry marked explicit was enabled at
    /// that point by name (a plugin that does not implement the point is an error); the others
    /// came from `multiPoint` (skipped where the plugin does not implement the point).
    pub point_order: Vec<(String, Vec<PointEntry>)>,
}

/// A plugin at one extension point of [`Profile::point_order`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointEntry {
    /// The plugin's name.
    pub name: String,
    /// Enabled at this point by name (not through `multiPoint`).
    pub explicit: bool,
}

impl Profile {
    /// kube-scheduler 1.37's default profile, every plugin of it:
    /// SchedulingGates, PrioritySort, NodeUnschedulable, NodeName,
    /// TaintToleration (weight 3), NodeAffinity (2), NodePorts, NodeResourcesFit (1),
    /// VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
    /// PodTopologySpread (2), InterPodAffinity (2), DynamicResources (1), DefaultPreemption,
    /// NodeResourcesBalancedAllocation (1), ImageLocality (1), DefaultBinder, and
    /// GangScheduling (upstream adds it with the GangScheduling feature, which allot has on).
    pub fn default_profile(scheduler_name: &str) -> Self {
        let p = PluginConfig::new;
        Profile {
            scheduler_name: scheduler_name.to_string(),
            plugins: vec![
                p("SchedulingGates"),
                p("PrioritySort"),
                p("NodeUnschedulable"),
                p("NodeName"),
                p("TaintToleration").weight(3),
                p("NodeAffinity").weight(2),
                p("NodePorts"),
                p("NodeResourcesFit").weight(1),
                p("VolumeRestrictions"),
                p("NodeVolumeLimits"),
                p("VolumeBinding"),
                p("VolumeZone"),
                p("PodTopologySpread").weight(2),
                p("InterPodAffinity").weight(2),
                p("DynamicResources"),
                p("DefaultPreemption"),
                p("NodeResourcesBalancedAllocation").weight(1),
                p("ImageLocality").weight(1),
                p("DefaultBinder"),
                p("GangScheduling"),
            ],
            percentage_of_nodes_to_score: 0,
            point_order: Vec::new(),
        }
    }

    /// The configuration of a plugin, mutably (to set its arguments).
    pub fn plugin_mut(&mut self, name: &str) -> Option<&mut PluginConfig> {
        self.plugins.iter_mut().find(|p| p.name == name)
    }
}
