//! One module per subcommand. Each exposes `Args` (clap) and `run(args) -> anyhow::Result<u8>`.

pub mod allocate;
// bench and serve print with the std macros (their owners' modules); every other command
// writes through `crate::out`.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod bench;
#[path = "gen.rs"]
pub mod generate;
pub mod merge_hints;
pub mod node;
pub mod node_admit;
pub mod node_discover;
pub mod node_show;
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod serve;
pub mod simulate;
pub mod snapshot;
pub mod take_cpus;
pub mod validate;
