"""Submissions: validation, address policy, uploads, secrets, the queue and the worker.

The UI-free API (see service.py and worker.py for details):
    SubmissionService(store, settings).submit(form, submitter, dry_run) -> SubmitOutcome
    SubmissionService.list_jobs / job / events / cancel / retry
    Worker(store, settings).run_once() / run_forever(); start_worker_thread(data_dir, settings)
"""
from .queue import ENDED, STATES, Job, JobError, Queue
from .service import SubmissionService, SubmitOutcome
from .settings import SubmissionSettings, Submitter, settings_from_env
from .validation import LICENCES, SubmissionForm, validate_form

__all__ = ["ENDED", "LICENCES", "STATES", "Job", "JobError", "Queue", "SubmissionForm", "SubmissionService",
           "SubmissionSettings", "SubmitOutcome", "Submitter", "settings_from_env", "validate_form"]
