"""SKILL documents: reading one (``document``: front matter, heading blocks with source
offsets), what a SKILL name may be (``names``) and the guards on an uploaded SKILL
(``upload``)."""
