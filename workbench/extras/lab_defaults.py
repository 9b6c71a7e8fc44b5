"""The research lab's settings that ``workbench --help`` shows (issue 49).

``workbench train`` names these in its help, and building the parser loads no lab package
(``workbench.train.joint`` imports torch at the top; ``tests/test_command_modules.py``
holds the parser to that). So they live here, in a module that imports nothing: the lab
reads them from here (``workbench.train.joint``), or a test holds its own equal to them
(``workbench.train.recipes``, whose recipes carry their names).
"""

from __future__ import annotations

# `train opd --recipe`: the names of workbench.train.recipes.RECIPES, in their order, and
# its DEFAULT_RECIPE.
OPD_RECIPES = ("cpu", "scaling-guided", "entropy-gated")
DEFAULT_OPD_RECIPE = "cpu"

# `train joint`: w, the OPD loss against the GRPO loss, and the verdict's length limit
# (workbench.train.joint.JointSettings).
DEFAULT_OPD_WEIGHT = 1.0
DEFAULT_JUDGE_TOKENS = 128
