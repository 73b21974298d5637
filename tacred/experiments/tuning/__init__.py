"""Hyperparameter search with Optuna: a YAML search space (:mod:`.space`), every trial an ordinary ``tacred fit``
run folder scored on dev only (:mod:`.study`), and the study in an RDB storage (SQLite by default) so that a
killed study resumes and several processes or machines can share one study; its results as data (:mod:`.records`).
"""

from tacred.experiments.tuning.records import (
    FINISHED,
    STUDY_FILES,
    best_trial,
    export_trials,
    import_trials,
    render_summary,
    render_trials_csv,
    trial_label,
    trial_rows,
    write_study_files,
)
from tacred.experiments.tuning.space import (
    OBJECTIVES,
    PARAM_TYPES,
    PRUNERS,
    SAMPLERS,
    Param,
    SearchSpace,
    TuneError,
    nested,
    override_args,
)
from tacred.experiments.tuning.study import (
    Objective,
    build_pruner,
    build_sampler,
    open_study,
    run_label,
    run_number,
)

__all__ = [
    "FINISHED", "OBJECTIVES", "PARAM_TYPES", "PRUNERS", "SAMPLERS", "STUDY_FILES", "Objective", "Param", "SearchSpace",
    "TuneError", "best_trial", "build_pruner", "build_sampler", "export_trials", "import_trials", "nested",
    "open_study", "override_args", "render_summary", "render_trials_csv", "run_label", "run_number", "trial_label", "trial_rows",
    "write_study_files",
]
