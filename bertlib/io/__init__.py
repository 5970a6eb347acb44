"""Files and downloads, below everything else: `files` (atomic writes, folder locks, the cache folder) and
`downloads` (datasets by name: registry, hashes, `bertlib download`)."""
