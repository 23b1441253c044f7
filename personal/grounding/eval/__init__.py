"""The POG evaluation (PersONAL object grounding): scoring and reports (``pog``), the offline run
(``pog_run``), its command line (``pog_cli``) and recorded-bag replays (``pog_replay``)."""
