"""SkillCDG Workbench: the domain core (pure Python, no UI, no storage imports)."""

__version__ = "0.1.0"
