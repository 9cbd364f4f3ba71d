"""EO spectral retrieval: scenes, radiometry, masks, spectral indices, geophysical parameters, statistics."""
