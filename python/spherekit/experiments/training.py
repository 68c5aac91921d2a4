"""Moved to spherekit.training.trainer (importable from here for one release, with a DeprecationWarning)."""

from .._moved import moved_module

__getattr__ = moved_module(__name__, 'spherekit.training.trainer', [
    'DEFAULT_DISTRIBUTED_TIMEOUT_S', 'DISTRIBUTED_TIMEOUT_ENV', 'MultiViewLoss', 'PRECISIONS', 'PROBE_FILE',
    'PROBE_ROWS', 'SCHEDULES', 'TRAINER_DIR', 'TrainConfig', 'TrainResult', 'barrier', 'clear_checkpoints',
    'distributed_timeout', 'distributed_world_size', 'is_main_process', 'last_complete_checkpoint', 'loss_curve',
    'plot_loss', 'probe_loss', 'put_model_back_in_loss', 'reporting', 'resolve_precision', 'shutdown_distributed',
    'train', 'training_arguments'
])
