"""An Earth-Bench-style task suite over the server's tools, scored at trajectory and outcome level."""
