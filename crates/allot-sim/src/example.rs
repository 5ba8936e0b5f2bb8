//! The bundled example cluster (`examples/simulate/` in the repository), compiled into the
//! binary so `allot simulate --example` runs on a fresh machine.

/// The example's files: `(file name, text)`, in the order the loader reads a directory.
pub const FILES: &[(&str, &str)] = &[
    (
        "examples/simulate/00-cluster.yaml",
        include_str!("../../../examples/simulate/00-cluster.yaml"),
    ),
    (
        "examples/simulate/10-devices.yaml",
        include_str!("../../../examples/simulate/10-devices.yaml"),
    ),
    (
        "examples/simulate/20-workloads.yaml",
        include_str!("../../../examples/simulate/20-workloads.yaml"),
    ),
    (
        "examples/simulate/30-timeline.yaml",
        include_str!("../../../examples/simulate/30-timeline.yaml"),
    ),
];

/// The example, loaded and validated.
pub fn input() -> Result<crate::Input, crate::SimError> {
    crate::load_texts(FILES)
}
