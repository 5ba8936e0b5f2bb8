//! One module per subcommand. Each exposes `Args` (clap) and `run(args) -> anyhow::Result<u8>`.
