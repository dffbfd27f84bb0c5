"""himga: research tooling for the long-term conversational memory of LLM agents.

The pipeline, one sub-package per stage: :mod:`himga.data` (schema and benchmark
loaders) -> :mod:`himga.memory` (the interface and memory systems) ->
:mod:`himga.agent` -> :mod:`himga.eval`; :mod:`himga.llm` talks to model
providers and :mod:`himga.testing` proves that a memory honours its contract.
"""

from importlib.metadata import PackageNotFoundError, version

from himga._errors import HimgaError, HimgaWarning

try:
    __version__ = version("himga")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["HimgaError", "HimgaWarning", "__version__"]
