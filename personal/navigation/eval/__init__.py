"""The PAN evaluation (PersONAL active navigation): scoring and reports (``pan``), the offline run
(``pan_run``), threshold calibration (``pan_calibrate``) and episode sequences (``pan_sequence``)."""
