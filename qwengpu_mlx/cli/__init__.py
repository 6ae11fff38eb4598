"""The command line (the top floor): one module per subcommand."""
