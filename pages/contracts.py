"""Skill contracts: edit and validate a contract, replay trajectories against it, step
through one, and read the dataset summary (PCR, RF-PCR, outcome, PCR x outcome).

Everything that comes from a trajectory (messages, tool arguments and results, ids) is shown
with st.code / st.dataframe / st.text, which display text as is: never as Markdown or HTML.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from components.errors import show_error
from components.metric_row import metric_row
from workbench import contracts
from workbench.contracts.metrics import outcome_class
from workbench.inputs import InputError, decode_text
from workbench.words import help_for, number, percent, plural

ROOT = Path(__file__).resolve().parents[1]
CONTRACT_FILE = ROOT / "fixtures" / "contracts" / "airline.yaml"
SOURCES = {
    "Synthetic airline conversations (3)": ROOT / "fixtures" / "contracts" / "airline_synthetic.json",
    "tau-bench gpt-4o airline sample (5 runs)": ROOT / "fixtures" / "contracts" / "tau_airline_sample.json",
    "tau-bench gpt-4o airline (200 runs, shared corpus)": ROOT.parent / "shared" / "corpora" / "tau-bench"
    / "historical_trajectories" / "gpt-4o-airline.json",
}
UPLOAD = "Upload a file…"
PASTE = "Paste JSON…"


@st.cache_data(show_spinner=False)
def _replay(contract_text: str, name: str, data: str, feedback: bool = True) -> list[contracts.ReplayReport]:
    contract = contracts.parse_contract(contract_text)
    return contracts.replay_all(contract, contracts.read_trajectories(data, name), feedback=feedback)


@st.cache_data(show_spinner=False)
def _read(path: str, mtime: float) -> str:
    return Path(path).read_text(encoding="utf-8")


st.title("Skill contracts")
st.caption("Procedural compliance: does each trajectory follow the contract's phases, "
           "with explicit confirmation and verified milestones?")

# -- blocked at run time -------------------------------------------------------------------
# Calls an agent runtime asked about (POST /v1/contracts/{name}/check) and was refused; the
# log is workbench.contracts.guard.ContractCheckLog (WORKBENCH_CONTRACT_LOG).
_blocked, _log_problems = contracts.ContractCheckLog().read(limit=200)
with st.expander(f"Blocked at run time ({len(_blocked)})", expanded=False):
    if _blocked:
        st.dataframe(pd.DataFrame([{
            "when": r.get("checked_at", ""), "contract": r.get("contract", ""),
            "session": r.get("session", ""),
            "call": (r.get("call") or {}).get("name", ""), "phase": r.get("phase", ""),
            "feedback": r.get("feedback", ""), "by": r.get("actor", ""),
        } for r in _blocked]), hide_index=True, key="blocked_calls")
    else:
        st.text("No call has been blocked yet: agent runtimes ask the audit API before each "
                "tool call (POST /v1/contracts/NAME/check), and refused calls are listed here.")
    for problem in _log_problems[:3]:
        st.warning(problem)

# -- contract ------------------------------------------------------------------------------
if "contract_yaml" not in st.session_state:
    st.session_state["contract_yaml"] = CONTRACT_FILE.read_text(encoding="utf-8")
with st.expander("Contract (YAML)", expanded=False):
    st.text_area("Contract", key="contract_yaml", height=420, label_visibility="collapsed")
    if st.button("Reset to the airline contract"):
        st.session_state.pop("contract_yaml")
        st.rerun()
text = st.session_state["contract_yaml"]
contract, issues = contracts.check_contract_text(text, "contract")
if issues:
    st.error(f"The contract has {plural(len(issues), 'problem')}; fix "
             f"{'it' if len(issues) == 1 else 'them'} to replay.")
    st.code("\n".join(str(i) for i in issues), language=None, wrap_lines=True)
    st.stop()
assert contract is not None
st.success(f"Valid contract: {len(contract.phases)} phases, {len(contract.milestones)} milestones.")
st.text(f"Contract: {contract.name}   required phases: {', '.join(contract.required_phases) or 'none'}")

# -- trajectories --------------------------------------------------------------------------
available = [label for label, path in SOURCES.items() if path.exists()]
source = st.selectbox("Trajectories", available + [UPLOAD, PASTE])
feedback = st.toggle(
    "Feedback shown on rejections", True, key="contract_feedback",
    help="Off replays as if feedback were withheld from the agent (the factorial study's "
    "outcome-only and credit-only arms): the same verdicts, but no step counts as a hint.",
)
if source == PASTE:
    name = "pasted.json"
    data = st.text_area("Trajectory JSON (tau-bench records, a message list, or records with "
                        "'messages')", key="pasted_trajectories", height=200)
    if not data.strip():
        st.info("Paste a trajectory to replay it.")
        st.stop()
elif source == UPLOAD:
    uploaded = st.file_uploader("Trajectory file", type=["json", "jsonl"])
    if uploaded is None:
        st.info("Upload tau-bench records, message lists or JSON Lines.")
        st.stop()
    try:
        name, (data, _) = uploaded.name, decode_text(uploaded.getvalue(), uploaded.name)
    except InputError as exc:
        show_error(exc, "The trajectory file could not be read.", block=True)
        st.stop()
else:
    path = SOURCES[source]
    name, data = path.name, _read(str(path), path.stat().st_mtime)
try:
    reports = _replay(text, name, data, feedback)
except contracts.TrajectoryFormatError as exc:
    show_error(exc, "The trajectory file could not be read.", block=True)
    st.stop()
if not reports:
    st.info("The file holds no trajectories.")
    st.stop()

# -- dataset summary -----------------------------------------------------------------------
summary = contracts.summarize(reports)
st.subheader("Dataset summary")
metric_row([
    ("Trajectories", number(summary.n)),
    ("PCR", percent(summary.pcr, 1), help_for("PCR")),
    ("RF-PCR", percent(summary.rf_pcr, 1), help_for("RF-PCR")),
    ("No-rejection PCR", percent(summary.no_rejection_pcr, 1), help_for("no-rejection PCR")),
    ("Outcome rate", percent(summary.outcome_rate, 1), help_for("outcome rate")),
    ("Hint rate", percent(summary.hint_rate, 1), help_for("Hint rate")),
    ("Mean credit", number(summary.mean_credit), help_for("mean credit")),
], key="contracts_summary")
st.caption("PCR × outcome (trajectory counts)")
st.dataframe(pd.DataFrame(summary.table.rows()), hide_index=True, key="pcr_table")
table = pd.DataFrame([{
    "id": r.trajectory_id, "accepted termination": r.accepted_termination,
    "rejected": r.rejected, "credit": number(r.credit), "outcome": outcome_class(r.outcome),
    "final phase": r.termination.phase,
} for r in reports])
with st.expander("All trajectories"):
    st.dataframe(table, hide_index=True, key="trajectory_table")

# -- one trajectory, step by step ----------------------------------------------------------
st.subheader("Step through a trajectory")
by_id = {r.trajectory_id: r for r in reports}
picked = st.selectbox(
    "Trajectory", list(by_id),
    format_func=lambda tid: f"{tid} — {'accepted' if by_id[tid].accepted_termination else 'not accepted'}, "
    f"{by_id[tid].rejected} rejected",
)
report = by_id[picked]
verdict = report.termination
if verdict.accepted:
    st.success("Accepted termination" + (" (no rejected action)" if report.rejection_free else ""))
else:
    st.warning("No accepted termination")
    st.text(verdict.reason)
st.text(f"Milestones: {', '.join(sorted(report.milestones)) or 'none'}   credit: {report.credit:.2f}"
        f"   outcome: {report.outcome if report.outcome is not None else 'unknown'}")

steps = report.steps
if not steps:
    st.info("This trajectory has no steps.")
    st.stop()
index = 0
if len(steps) > 1:
    index = st.slider("Step", 0, len(steps) - 1, 0, key=f"step-{picked}")
step = steps[index]
left, right = st.columns([2, 3])
with left:
    st.text(f"Step {step.index}: {step.action.label()}")
    st.text(f"Phase: {step.phase_before} → {step.phase}   ({step.via})")
    if step.accepted:
        st.success("Accepted")
    else:
        st.error("Rejected")
    st.caption("Contract feedback" + ("" if step.accepted or step.feedback_shown
                                      else " (not shown to the agent)"))
    st.code(step.feedback.render(), language=None, wrap_lines=True)
    if step.milestones:
        st.text(f"Milestones: {', '.join(step.milestones)} (+{step.credit:.2f})"
                + ("  [recovery: discounted]" if step.recovery else ""))
with right:
    action = step.action
    if action.kind == "tool":
        st.caption("Tool call")
        st.json(dict(action.args), expanded=True)
        st.caption("Observation")
        st.code(step.observation if step.observation is not None else "(none)", language=None,
                wrap_lines=True)
    else:
        st.caption(f"{action.kind.capitalize()} message")
        st.code(action.text or "(empty)", language=None, wrap_lines=True)

st.caption("Steps up to here")
st.dataframe(pd.DataFrame([{
    "step": s.index, "verdict": "accepted" if s.accepted else "REJECTED",
    "phase": f"{s.phase_before} → {s.phase}", "action": s.action.summary(120),
    "milestones": ", ".join(s.milestones), "feedback": "" if s.accepted else s.feedback.render(),
} for s in steps[: index + 1]]), hide_index=True, key="steps_table")
