"""Start Streamlit on ``app.py`` with ``st.navigation`` in charge from the very first request.

Streamlit treats any ``pages/`` folder beside the entry script as a legacy multipage app and,
for the first script run of each session, lists the files there instead of running ``app.py``
(so a deep link like ``/graph`` shows the wrong navigation). ``st.navigation`` turns that off,
but only once ``app.py`` has run. We keep the house layout (``pages/`` at the top) and switch
the legacy mode off before the server starts. Usage: ``python -m components.launcher ARGS``,
with the arguments of ``streamlit run``.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web import cli

    PagesManager.uses_pages_directory = False
    sys.argv = ["streamlit", "run", *argv]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
