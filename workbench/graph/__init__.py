"""The constraint dependency graph (CDG): rules, ``require`` edges, the SKILL graphs they form
and the policy index of a workspace, with everything the workbench does to a graph.

An edge ``source -> target`` means "judging ``source`` needs ``target`` judged first", so the
context a judge needs for a set of seed rules is their transitive closure along edges.

The graph's own types are re-exported here, so ``from workbench.graph import PolicyIndex,
SkillGraph, Rule`` is the Python API; what is done to a graph lives in a module of its own:

- ``rule_graph``: the plain data (``Span``, ``Rule``, ``Edge``, ``EdgeDecision``,
  ``RuleGraph``, ``SkillGraph``) and finding rules by text (``search_rules``);
- ``policy_index``: ``PolicyIndex`` and its ``skillcdg/1`` JSON file;
- ``validation``: checking ``skillcdg/1`` data, every problem with its location;
- ``closure``: the judge context of a set of seed rules (``select_closure``), with
  ``EmptySeed`` and ``BudgetExceeded`` outcomes;
- ``render``: rules written as the blocks a judge reads;
- ``stats``: coupling, rule density, complexity and depth (the first paper's measures);
- ``diff``: what changed between two versions of a SKILL (``diff_skills``);
- ``editing``: an author's edits and edge decisions, checked, as a new ``SkillGraph``;
- ``layout``: the layered placement the rule-graph drawing uses;
- ``graphml``: export to networkx / GraphML.

The modules of this package import each other by module (``workbench.graph.rule_graph``),
never through this file, so this file can re-export from any of them without a cycle
(``tests/test_layers.py`` checks it, and that no module here imports the audit: which stored
cases an edit changes, which re-audits them, is ``workbench.audit.impact``).
"""

from workbench.graph import rule_graph
from workbench.graph.policy_index import PolicyIndex
from workbench.graph.rule_graph import *  # noqa: F403 (the graph's types: rule_graph.__all__)

__all__ = ["PolicyIndex", *rule_graph.__all__]
