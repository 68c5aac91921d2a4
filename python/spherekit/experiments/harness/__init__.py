"""What runs papers: discovery of the plugins, the runner and each unit's context, restore, the result card and the
docs index, the command line and the GPU-hours estimate. No paper imports it (the api is spherekit.experiments.api)."""
