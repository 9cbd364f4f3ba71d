"""EO benchmarks: windowed NDVI against gdal_calc.py and a whole-array NumPy read."""
