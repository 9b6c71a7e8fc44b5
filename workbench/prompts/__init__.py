"""The prompts every model call uses: the templates (``<name>_v<N>.md`` beside this file), the
one reader of them (``template``: ``## system``/``## user`` sections, ``{{name}}``
placeholders, version from the file name, SHA-256 of the file), and the data fencing that keeps
user, policy and model text out of a prompt's instructions (``fencing``)."""
