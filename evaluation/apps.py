from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Search engine, metrics, judging, runs and the dashboard (built on goldenset; docs/architecture.md)."""

    name = "evaluation"
    verbose_name = "Evaluation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Late: AppConfig.ready runs once the models are loaded, which these modules import.
        from evalsite.audit.models import register_audit_objects
        from evalsite.jobs.kinds import register_job_handler, register_tick
        from evaluation.answers.evaluate import AnswerRequest
        from evaluation.judgments.assess import assess_job
        from evaluation.models import EvaluationAuditObject, EvaluationJobKind, WatchJobKind
        from evaluation.reports.batch_jobs import batch_job_gather, batch_job_handler
        from evaluation.retrieval.config_jobs import config_job
        from evaluation.retrieval.indexes import build_schedule, index_build_job
        from evaluation.retrieval.request import RetrievalRequest
        from evaluation.studies.parallel import study_gather, study_job, trials_job
        from evaluation.watch.schedules import scheduled_job
        from evaluation.watch.ticks import watch_tick
        from goldenset.services.content import content_changed_hooks

        for request_type in (RetrievalRequest, AnswerRequest):  # one job skeleton for both kinds of batch
            register_job_handler(
                request_type.job_kind, batch_job_handler(request_type), gather=batch_job_gather(request_type)
            )
        register_job_handler(EvaluationJobKind.EVALUATE_CONFIG, config_job)
        register_job_handler(EvaluationJobKind.INDEX_BUILD, index_build_job)
        register_job_handler(EvaluationJobKind.ASSESS, assess_job)
        register_job_handler(EvaluationJobKind.STUDY, study_job, gather=study_gather)
        register_job_handler(EvaluationJobKind.STUDY_TRIALS, trials_job)
        register_job_handler(WatchJobKind.SCHEDULED, scheduled_job)
        register_tick("schedules", watch_tick)
        register_audit_objects(EvaluationAuditObject)
        content_changed_hooks.append(build_schedule)
