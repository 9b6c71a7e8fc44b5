"""The prompts every model call uses: the templates (``*.md`` beside this file) and the data
fencing that keeps user, policy and model text out of a prompt's instructions (``fencing``)."""
