"""Studies: the best configuration found on one part of a golden set and confirmed on the other.

The logic is plain Python (numpy and Optuna, each module checked free of Django); `services` runs a study over
stored golden sets and the search core, as a job, for the REST API, the dashboard and the command:

- `space`: which fields of a configuration a study varies and over what values, checked before anything runs;
- `split`: the golden set cut, with the seed, into a tuning part and a confirmation part, stratified by tag;
- `search`: the trials (Optuna's samplers, and a pruner that stops a trial early on a sample of the tuning
  questions), each a configuration scored on the tuning part only;
- `confirm`: the winner and the baseline on the confirmation part, which no trial saw: their means with
  bootstrap intervals, the paired randomization test, and a verdict said in words;
- `importance`: how much each varied field mattered (Optuna's PED-ANOVA over the stored trials);
- `request`: what a study is asked, read strictly;
- `services` (Django): the study created with its job, the job, the study as the API gives it, presets.
"""
