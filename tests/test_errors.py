"""One root for himga's exceptions (``HimgaError``) and warnings (``HimgaWarning``)."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import warnings
from collections.abc import Iterator
from types import ModuleType

import pytest

import himga
from himga import HimgaError, HimgaWarning
from himga.data import DatasetError, DownloadError
from himga.llm import LLMConfigError


def _modules() -> Iterator[ModuleType]:
    """Every module of the package (``__main__`` would run the command line)."""
    yield himga
    for info in pkgutil.walk_packages(himga.__path__, "himga."):
        if info.name != "himga.__main__":
            with warnings.catch_warnings():  # the moved himga.testing.llm_server says so
                warnings.simplefilter("ignore", DeprecationWarning)
                module = importlib.import_module(info.name)
            yield module


def _is_public(module: ModuleType) -> bool:
    return not any(part.startswith("_") for part in module.__name__.split("."))


def _raised_types(namespace: dict[str, object]) -> Iterator[type[BaseException]]:
    for value in namespace.values():
        if inspect.isclass(value) and issubclass(value, BaseException):
            yield value


def test_every_exported_exception_derives_from_the_root() -> None:
    exported: dict[str, type[BaseException]] = {}
    for module in _modules():
        if _is_public(module):
            names = getattr(module, "__all__", ())
            namespace = {f"{module.__name__}.{name}": getattr(module, name) for name in names}
            for name, cls in namespace.items():
                if inspect.isclass(cls) and issubclass(cls, BaseException):
                    exported[name] = cls
    # The walk must have found the exceptions the docs promise, or it proves nothing.
    assert {
        "himga.data.DatasetError",
        "himga.llm.LLMError",
        "himga.testing.ContractViolation",
    } <= set(exported)
    wrong = {
        name: cls
        for name, cls in exported.items()
        if not issubclass(cls, HimgaWarning if issubclass(cls, Warning) else HimgaError)
    }
    assert wrong == {}


def test_every_exception_class_himga_defines_derives_from_the_root() -> None:
    """Also the ones only private modules define (the CLI's), so a new one cannot slip out."""
    defined = {
        f"{cls.__module__}.{cls.__qualname__}": cls
        for module in _modules()
        for cls in _raised_types(vars(module))
        if cls.__module__.startswith("himga") and not cls.__name__.startswith("_")
    }
    assert len(defined) >= 40
    wrong = [
        name
        for name, cls in defined.items()
        if not issubclass(cls, HimgaWarning if issubclass(cls, Warning) else HimgaError)
        and name not in _CONTROL_FLOW
    ]
    assert wrong == []


#: BaseExceptions that are control flow, never raised to a caller: MemoryHung must get
#: past Hypothesis (which catches Exception) and never leaves check_contract, where it
#: becomes a ContractViolation; ProcessExitCalled stands for a memory's ``os._exit`` and,
#: like ``sys.exit``, must not be swallowed by the memory's own ``except Exception`` (the
#: memory-call guards turn it into the memory's failure).
_CONTROL_FLOW = frozenset(
    {"himga.testing._deadline.MemoryHung", "himga._exit_guard.ProcessExitCalled"}
)


def test_roots_keep_the_builtin_bases() -> None:
    assert issubclass(DatasetError, ValueError)
    assert issubclass(DownloadError, OSError)
    assert issubclass(LLMConfigError, ValueError)
    assert issubclass(HimgaWarning, UserWarning)
    assert not issubclass(HimgaWarning, HimgaError)
    with pytest.raises(ValueError, match="sample s1"):
        raise DatasetError("f.json", "bad", sample="s1")


def test_errors_with_a_builtin_layout_still_pickle() -> None:
    error = DownloadError(2, "no route")
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.errno, copy.strerror) == (DownloadError, 2, "no route")
    dataset = pickle.loads(pickle.dumps(DatasetError("f.json", "bad", field="x")))
    assert (dataset.file, dataset.field, str(dataset)) == ("f.json", "x", "f.json: field 'x': bad")
