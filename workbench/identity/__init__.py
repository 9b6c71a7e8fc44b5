"""Who may do what: the roles and the actions each allows (``roles``), and the pure half of
signing in, password hashes and signed expiring tokens (``sign_in``)."""
