"""Human labels and the judges' calibration over REST (evaluation.judgments.calibration does the work)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from evalsite.api.parsers import FormParser, JSONParser, MultiPartParser
from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.api.judgments import MachineAgreementOut
from evaluation.api.views import read_strictly
from evaluation.judgments import calibration as services
from evaluation.judgments.assessor_report import assessors_against_people
from evaluation.judgments.label_import import labels_import
from evaluation.judgments.labels import read_labels, read_rows
from evaluation.models import LabelLevel
from goldenset import selectors as golden_selectors
from goldenset.api.base import TenantAPIView, read
from goldenset.api.serializers import TenantIn
from goldenset.vocabulary.metric_names import JUDGED_METRICS


class LabelsIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    labels = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Label rows (evaluation.judgments.labels fields).",
    )
    file = serializers.FileField(required=False, help_text="A CSV or JSON / JSON-lines file of label rows.")
    format = serializers.CharField(
        required=False, help_text='"csv" or "json" (default: told by the first character).'
    )
    dry_run = serializers.BooleanField(required=False, default=False)


class LabelsOut(serializers.Serializer):
    labels = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    raters = serializers.ListField(child=serializers.CharField())
    metrics = serializers.DictField(child=serializers.IntegerField())
    dry_run = serializers.BooleanField()


class CalibrationIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    metric = serializers.ChoiceField(choices=list(JUDGED_METRICS), required=False)
    judge = serializers.CharField(required=False, help_text='"heuristic" or "llm-judge:<model>".')


class ThresholdIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    metric = serializers.ChoiceField(choices=list(JUDGED_METRICS))
    judge = serializers.CharField(default="heuristic", max_length=300)  # JudgeThreshold.judge's length
    value = serializers.FloatField(
        required=False, min_value=0.0, max_value=1.0, help_text="Default: the report's best threshold."
    )


class ConfusionOut(serializers.Serializer):
    tp = serializers.IntegerField()
    fp = serializers.IntegerField()
    tn = serializers.IntegerField()
    fn = serializers.IntegerField()


class BinOut(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField()
    count = serializers.IntegerField()
    mean_score = serializers.FloatField(allow_null=True)
    pass_rate = serializers.FloatField(
        allow_null=True, help_text="The share of the bin's items people passed."
    )


class BestThresholdOut(serializers.Serializer):
    value = serializers.FloatField()
    balanced_accuracy = serializers.FloatField()
    low = serializers.FloatField(help_text="The bootstrap interval (95%) of the best threshold.")
    high = serializers.FloatField()


class JudgeCalibrationOut(serializers.Serializer):
    judge = serializers.CharField(help_text='"heuristic" or "llm-judge:<model>".')
    metric = serializers.CharField()
    level = serializers.ChoiceField(choices=LabelLevel.values)
    n = serializers.IntegerField(help_text="Items with a majority label (an even split is left out).")
    positives = serializers.IntegerField()
    auc = serializers.FloatField(allow_null=True)
    threshold = serializers.FloatField(help_text="The verdict's cut in force.")
    threshold_source = serializers.CharField()
    confusion = ConfusionOut()
    precision = serializers.FloatField(allow_null=True)
    recall = serializers.FloatField(allow_null=True)
    balanced_accuracy = serializers.FloatField(allow_null=True)
    cohen_kappa = serializers.FloatField(
        allow_null=True, help_text="The verdict against the raters' majority."
    )
    reliability = BinOut(many=True)
    roc = serializers.ListField(child=serializers.ListField(child=serializers.FloatField()))
    best_threshold = BestThresholdOut(allow_null=True)


class AgreementOut(serializers.Serializer):
    metric = serializers.CharField()
    level = serializers.ChoiceField(choices=LabelLevel.values)
    raters = serializers.IntegerField()
    items = serializers.IntegerField()
    items_rated_twice = serializers.IntegerField()
    tied_items = serializers.IntegerField()
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    fleiss_kappa = serializers.FloatField(allow_null=True)


class ThresholdOut(serializers.Serializer):
    judge = serializers.CharField()
    metric = serializers.CharField()
    value = serializers.FloatField()
    calibrated_from = serializers.DictField(
        help_text="The calibration it came from: labels, AUC, best threshold, when and by whom."
    )


class CalibrationOut(serializers.Serializer):
    collection_id = serializers.CharField()
    labels = serializers.IntegerField()
    items = serializers.IntegerField()
    raters = serializers.ListField(child=serializers.CharField())
    agreement = AgreementOut(many=True)
    judges = JudgeCalibrationOut(many=True)
    warnings = serializers.ListField(child=serializers.CharField())
    thresholds = ThresholdOut(many=True)
    relevance_assessors = MachineAgreementOut(
        many=True, help_text="Each machine relevance assessor against people's grades of the same documents."
    )


class LabelsApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(
        request={"application/json": LabelsIn, "multipart/form-data": LabelsIn},
        responses={200: LabelsOut, 201: LabelsOut},
        summary="Imports human labels of answer judgements (JSON rows, or a CSV / JSON file).",
        description="Each row: question_id, rater, metric, label (pass/fail; supported/partially/not supported "
        "for a statement) or score, optional statement, and the answer judged: run_id, or answer with "
        "passages. A rater's new label of an item replaces the old one. A bad row refuses the whole import, "
        "naming each bad row (up to 50).",
    )
    def post(self, request):
        body = request.data
        # A form's fields (last value wins), or the JSON body as it came: one that is no object (`[null, null]`)
        # is the serializer's validation-error, as on every endpoint.
        raw = body.dict() if hasattr(body, "dict") else body
        if "file" in request.FILES:
            raw["file"] = request.FILES["file"]
        data = read_strictly(LabelsIn, raw)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(data), collection_id=data["collection_id"]
        )
        if ("file" in data) == ("labels" in data):
            raise EvalsiteError(
                "validation-error", "labels: send labels (JSON rows) or a file, one of them.",
                details={"field": "labels"},
            )  # fmt: skip
        if "file" in data:
            rows = read_labels(data["file"].read(), fmt=data.get("format"))
        else:
            rows = read_rows([(f"labels[{i}]", row) for i, row in enumerate(data["labels"])])
        summary = labels_import(
            tenant=collection.tenant, collection=collection, rows=rows, actor=self.actor,
            dry_run=data["dry_run"],
        )  # fmt: skip
        return Response(summary, status=status.HTTP_200_OK if data["dry_run"] else status.HTTP_201_CREATED)


class CalibrationApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)

    @extend_schema(
        parameters=[CalibrationIn],
        responses=CalibrationOut,
        summary="How well each judge agrees with the collection's human labels, per metric.",
        description="Per judge (heuristic; llm-judge:<model> from the runs the labels name), metric and level "
        "(question or statement): n, AUC, the verdict at the threshold in force (confusion, precision, recall, "
        "balanced accuracy, Cohen's kappa with the raters' majority), reliability bins, ROC points and the "
        "best balanced-accuracy threshold with a bootstrap interval; and the raters' own agreement "
        "(Krippendorff's alpha, Fleiss' kappa).",
    )
    def get(self, request):
        data = read(CalibrationIn, request.query_params)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(), collection_id=data["collection_id"]
        )
        report = services.calibration_report(
            collection=collection, metric=data.get("metric"), judge_filter=data.get("judge")
        )
        return Response(
            {
                **report,
                "thresholds": services.thresholds_list(collection),
                "relevance_assessors": assessors_against_people(collection),
            }
        )


class ThresholdApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE, DELETE=Perm.CURATE)

    @extend_schema(
        request=ThresholdIn,
        responses=ThresholdOut,
        summary="Applies a calibrated pass threshold to the collection's answer evaluations by that judge.",
    )
    def post(self, request):
        data = read_strictly(ThresholdIn, request.data)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(data), collection_id=data["collection_id"]
        )
        found = services.threshold_apply(
            collection=collection, metric=data["metric"], judge_key=data["judge"], actor=self.actor,
            value=data.get("value"),
        )  # fmt: skip
        return Response(
            {
                "judge": found.judge,
                "metric": found.metric,
                "value": found.value,
                "calibrated_from": found.source,
            }
        )

    @extend_schema(
        parameters=[ThresholdIn],
        responses={204: None},
        summary="Returns the metric to its default threshold.",
    )
    def delete(self, request):
        data = read(ThresholdIn, request.query_params)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(), collection_id=data["collection_id"]
        )
        if not services.threshold_reset(
            collection=collection, metric=data["metric"], judge_key=data["judge"], actor=self.actor
        ):
            raise EvalsiteError(
                "not-found", f"metric: no calibrated {data['metric']} threshold for {data['judge']}.",
                details={"field": "metric"}, status=404,
            )  # fmt: skip
        return Response(status=status.HTTP_204_NO_CONTENT)
