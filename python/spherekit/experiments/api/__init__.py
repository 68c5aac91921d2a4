"""What a paper may import, and nothing else: its plugin base class and conditions (plugin), config fields and
presets (config), the card's units (units), claims and their checks (claims), the paper's printed numbers
(printed), metric names (metrics), the noise model (uncertainty), the "did it learn" gate (learning), number
formatting (fmt), the files a paper writes itself (files) and its GPU plan's work items (gpu_plan). The harness that
runs papers (spherekit.experiments.harness) and the training layer (spherekit.training) are not part of it: a paper
trains through its UnitContext, and tests/experiments/test_conformance.py fails when a paper imports the harness."""
