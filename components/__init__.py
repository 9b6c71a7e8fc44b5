"""Reusable Streamlit widgets. Everything shown from policies, conversations or models is
escaped here, once, so pages cannot forget to."""
