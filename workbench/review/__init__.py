"""Analysts' review of audit verdicts: the queue and its progress (``queue``), the three-way
decisions and their undo (``decisions``), and saved views of the queue (``views``)."""
