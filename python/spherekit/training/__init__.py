"""The training layer beside spherekit.losses: the sentence-transformers trainer path with its record
(trainer: train, TrainConfig, the loss curve and probe), the token verifiers' trainer (verifier), optimiser
parameter groups (optim) and clean Ctrl-C handling (interrupt). The experiments train through it; so can users."""
