"""Names that moved down or up a layer still import from where they were, for one release,
and say (once) where they went; importing the lower package never imports the upper one."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


@pytest.mark.integration
def test_dataset_loading_moved_to_benchmarks_and_himga_data_says_so_once() -> None:
    lines = _run(
        "import sys, warnings\n"
        "import himga.data\n"
        "print('himga.benchmarks' in sys.modules)\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from himga.data import iter_dataset, load_dataset, resolve_dataset\n"
        "    from himga.data import load_dataset as again\n"
        "import himga.benchmarks as b\n"
        "print(load_dataset is b.load_dataset is again, iter_dataset is b.iter_dataset,\n"
        "      resolve_dataset is b.resolve_dataset)\n"
        "for w in caught:\n"
        "    print(w.category.__name__, w.message, w.filename == '<string>')\n"
    )
    assert lines == [
        "False",
        "True True True",
        *(
            f"DeprecationWarning himga.data.{name} moved to himga.benchmarks: "
            f"from himga.benchmarks import {name} True"
            for name in ("iter_dataset", "load_dataset", "resolve_dataset")
        ),
    ]


def test_a_name_himga_data_never_had_is_still_an_attribute_error() -> None:
    import himga.data

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = himga.data.nothing_here


@pytest.mark.integration
def test_the_synthetic_module_moved_to_longmemeval_and_the_old_path_says_so() -> None:
    lines = _run(
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from himga.data.synthetic import longmemeval_record, write_longmemeval\n"
        "from himga.benchmarks.longmemeval import synthetic\n"
        "print(write_longmemeval is synthetic.write_longmemeval,\n"
        "      longmemeval_record is synthetic.longmemeval_record)\n"
        "print([str(w.message) for w in caught if w.category is DeprecationWarning])\n"
    )
    assert lines == [
        "True True",
        "['himga.data.synthetic moved to himga.benchmarks.longmemeval.synthetic: "
        "from himga.benchmarks.longmemeval.synthetic import write_longmemeval']",
    ]


def test_unknown_dataset_error_is_one_class_wherever_it_is_imported_from() -> None:
    import himga.benchmarks
    import himga.data

    assert himga.data.UnknownDatasetError is himga.benchmarks.UnknownDatasetError
    with pytest.raises(himga.data.UnknownDatasetError, match="unknown dataset 'nope'"):
        himga.benchmarks.get_benchmark("nope")


@pytest.mark.integration
def test_the_text_scorers_moved_to_scoring_and_himga_eval_metrics_says_so() -> None:
    lines = _run(
        "import warnings\n"
        "import himga.eval\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from himga.eval.metrics import bleu1, exact_match, normalize_answer, token_f1\n"
        "    attribute = himga.eval.metrics\n"
        "import himga.scoring.metrics as moved\n"
        "print(token_f1 is moved.token_f1, bleu1 is moved.bleu1,\n"
        "      exact_match is moved.exact_match, normalize_answer is moved.normalize_answer,\n"
        "      attribute.token_f1 is moved.token_f1)\n"
        "print([str(w.message) for w in caught if w.category is DeprecationWarning])\n"
    )
    assert lines == [
        "True True True True True",
        "['himga.eval.metrics moved to himga.scoring.metrics: "
        "from himga.scoring.metrics import token_f1']",
    ]


def test_himga_eval_still_exports_the_result_and_metric_types_of_scoring() -> None:
    import himga.eval
    import himga.scoring

    for name in ("EvalResult", "MemoryCallError", "Metric", "MetricNeed", "RunMetric", "SEARCH_K"):
        assert name in himga.eval.__all__
        assert getattr(himga.eval, name) is getattr(himga.scoring, name)


@pytest.mark.integration
def test_locomo_f1_is_still_found_where_the_first_pass_moved_it_from() -> None:
    """``himga.eval.metrics.locomo_f1`` (issue 35's example): now LoCoMo's own scorer."""
    lines = _run(
        "import warnings\n"
        "import himga.eval.metrics as old\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from himga.eval.metrics import locomo_f1\n"
        "from himga.benchmarks.locomo import locomo_f1 as moved\n"
        "print(locomo_f1 is moved, old.locomo_f1 is moved)\n"
        "print([str(w.message) for w in caught if w.category is DeprecationWarning])\n"
    )
    assert lines == [
        "True True",
        "['himga.eval.metrics.locomo_f1 moved to himga.benchmarks.locomo: "
        "from himga.benchmarks.locomo import locomo_f1']",
    ]
