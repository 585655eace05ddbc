"""The benchmark engine: template bank, instances, sandboxed grading, calibration, metrics."""
