"""HiMGA, the hierarchical multi-graph memory."""

from himga.memory._himga._memory import HiMGAMemory
from himga.memory._himga._weights import HiMGAWeights

__all__ = ["HiMGAMemory", "HiMGAWeights"]
