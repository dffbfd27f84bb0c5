"""MAGMA (arXiv 2601.03236; code FredJiang0324/MAMGA), reproduced without its evaluation leaks.

See ``docs/magma.md`` for what is reproduced, what is not, and every choice made.
"""

from himga.memory._magma._build import BuildStats
from himga.memory._magma._memory import MagmaMemory, MagmaPaperMemory

__all__ = ["BuildStats", "MagmaMemory", "MagmaPaperMemory"]
