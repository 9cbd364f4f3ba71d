"""Natural identifiers (hashes, addresses, short URLs) as post-hoc canaries: DP audits and dataset inference."""
