"""The debugging workbench: compare with OpenVINO or the float64 reference layer by layer, error
statistics, graph drawing and latency benchmarks."""
