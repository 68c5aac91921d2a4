"""The template of a reproduction: a toy paper ("A Toy Paper: Fine-Tuning Helps Term Retrieval") that runs in
seconds and uses every part of the experiment core. Copy this folder to experiments/<name>/ to start a new one;
docs/new_experiment.md walks through each file.

    spec     the paper's conditions, configuration, presets and main metric (EXPERIMENT)
    paper    the numbers the paper prints (PRINTED), its claims as checks (CLAIMS), where a run departs from it
    run      the data of a preset (prepare) and one run of a condition (run_unit)
    figures  the card's own tables and plots
    gpu      optional: the `paper` preset's GPU work items (gpu_plan), timed by scripts/gpu_papers.py

It is not discovered (its folder starts with "_"); the conformance test runs it like the real papers.
"""
