"""Settings: the model roles, their endpoints, a connection test per role, usage totals."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from components.errors import show_error
from components.identity import warn_admins_without_password
from components.metric_row import metric_row
from components.role_settings import role_settings_editor
from components.safe import md
from pages._sign_in import admins_without_password
from pages._state import engine, model_gateway
from store import audit_repo
from store.llm_cache import SqlResponseCache, SqlUsageLog
from store.llm_endpoints import SqlEndpointLog
from workbench import words
from workbench.audit.window import judge_window
from workbench.llm import LlmConfigError, api_key_source, load_config
from workbench.llm.check import check_role
from workbench.llm.embedded import current_embedded_server
from workbench.llm.fleet import fleet_table
from workbench.llm.redact import redact_url
from workbench.llm.role_models import embedded_status, role_endpoint, role_model_title
from workbench.llm.weights import EMBEDDED_MODELS
from workbench.settings import LLM_MODE

RESULTS = "settings_check_results"


def traced_calls_by_role(traces) -> list[dict]:
    """One row per role of the model calls kept in ``traces`` (AuditTrace objects)."""
    by_role: dict[str, dict] = {}
    for trace in traces:
        for call in trace.usage:
            row = by_role.setdefault(call.role, {"role": call.role, "calls": 0, "cache hits": 0,
                                                 "prompt tokens": 0, "completion tokens": 0,
                                                 "ms": 0.0})
            row["calls"] += 1
            row["cache hits"] += bool(call.cached)
            row["prompt tokens"] += call.prompt_tokens
            row["completion tokens"] += call.completion_tokens
            row["ms"] += call.latency_ms
    return [{**{k: v for k, v in row.items() if k != "ms"}, "model time": words.duration_ms(row["ms"])}
            for _, row in sorted(by_role.items())]


st.title("Settings")
warn_admins_without_password(admins_without_password())
try:
    config = load_config()
except LlmConfigError as exc:
    show_error(exc, "The model configuration is invalid; fix it and reload the page.", block=True)
    st.stop()

mode = LLM_MODE.read(default="live")
st.caption(
    f"Model roles from {config.source} (mode: {mode}). An admin changes a role below (saved "
    "to workbench.toml); WORKBENCH_<ROLE>_<SETTING> variables override the file, and "
    "workbench.toml.example explains every setting. API keys are read from the environment "
    "or .streamlit/secrets.toml and never shown."
)

st.subheader("Roles")
st.dataframe(
    pd.DataFrame(
        [
            {
                "role": r.name,
                "model": r.model,
                "runs": role_model_title(r),
                "endpoint": redact_url(role_endpoint(config, r)),
                "temperature": r.temperature,
                "max tokens": r.max_tokens,
                "timeout s": r.timeout,
                "concurrency": r.concurrency,
                "retries": r.retries,
                "API key": api_key_source(r),
            }
            for r in config.roles.values()
        ]
    ),
    hide_index=True,
    width="stretch",
)

st.subheader("Change a role")
role_settings_editor(config)

for status in embedded_status(config, {name: current_embedded_server(name) for name in EMBEDDED_MODELS}):
    used_by = f" (used by {', '.join(status.roles)})" if status.roles else ""
    st.caption(f"Embedded model {status.title}{used_by}: {status.text}.")

window = judge_window(config)
if window is None:
    st.caption(
        md(f"Judge context window: unknown for '{config.role('judge').model}' (litellm has no "
           "information on it).") + " Set `context_window` under `[roles.judge]` in the "
        "settings file so that audits fit contexts to it; until then contexts are sent whole."
    )
else:
    st.caption(
        md(f"Judge context window: {words.plural(window.tokens, 'token')} per request "
           f"({window.source}). Audits keep {words.plural(window.answer_tokens, 'token')} for "
           "the answer, size the policy context to the rest and judge a larger one in parts.")
    )

st.subheader("Test connection")
results: dict = st.session_state.setdefault(RESULTS, {})
for role in config.roles.values():
    left, middle, right = st.columns([2, 1, 4])
    left.markdown(f"**{role.name}** · `{role.model}`")
    # "Test", not "Test connection": the label was cut to "Test conne…" in this column (the
    # heading above says what is tested).
    if middle.button("Test", key=f"settings_test_{role.name}",
                     help=f"Test the connection: send one small request as the {role.name}"):
        note = " (the embedded model starts first, about 10 s)" if role.is_embedded else ""
        with st.spinner(f"Sending one small request for {role.name}{note}..."):
            results[role.name] = check_role(model_gateway(config), role.name)
    result = results.get(role.name)
    if result is None:
        right.caption("not tested yet")
    elif result["ok"]:
        right.success(
            f"ok · {words.duration_ms(result['latency_ms'])} · {result['prompt_tokens']} prompt + "
            f"{result['completion_tokens']} completion tokens"
        )
    else:
        right.error("failed")
        right.code(result.get("error", ""), language=None, wrap_lines=True)

fleets = [r for r in config.roles.values() if r.is_fleet]
if fleets:
    st.subheader("Model fleets")
    logged = SqlEndpointLog(engine()).summary()
    st.caption(
        "Endpoints of roles with several servers, as the litellm Router used them (every "
        "attempt in this database). Share: of the answered calls. Cooling down: its last "
        "attempt failed within the role's cooldown, so the Router leaves it out for now."
    )
    st.dataframe(
        pd.DataFrame(
            [
                row
                for r in fleets
                for row in fleet_table(
                    r, logged.get(r.name, {}), time.time(), config.roles.get(r.fallback)
                )
            ]
        ),
        hide_index=True,
        width="stretch",
    )

st.subheader("Usage so far")
# Two records of model calls: the gateway's log (calls made by this workbench) and the calls
# kept in stored audit traces (imported runs too: what Replay shows). Counting only the first
# said "No model calls recorded" beside a Replay full of the demo's calls (issue 44 item 8).
totals = SqlUsageLog(engine()).totals_by_role()
traced = traced_calls_by_role(audit_repo.load_traces(engine()))
if not totals and not traced:
    st.info("No model calls recorded in this workbench database yet.")
if totals:
    st.caption("Calls made through this workbench's model gateway:")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "role": role,
                    "calls": t.calls,
                    "cache hits": t.cached_calls,
                    "prompt tokens (live)": t.live_prompt_tokens,
                    "completion tokens (live)": t.live_completion_tokens,
                    "model time": words.duration_ms(t.latency_ms),
                    "cost USD": (f"{t.cost_usd:.4f}" if t.unpriced_calls < t.calls
                                 else words.MISSING),
                }
                for role, t in sorted(totals.items())
            ]
        ),
        hide_index=True,
        width="stretch",
    )
if traced:
    st.caption("Calls recorded in the stored audit traces (audited here or imported; Replay "
               "shows them per case):")
    st.dataframe(pd.DataFrame(traced), hide_index=True, width="stretch")
cache = SqlResponseCache(engine()).stats()
metric_row([
    ("Cached answers", words.number(cache["entries"])),
    ("Tokens behind them", words.number(cache["prompt_tokens"] + cache["completion_tokens"])),
    ("Model time they saved per replay", words.duration_ms(cache["latency_ms"])),
], key="settings_cache")
