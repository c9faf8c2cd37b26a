"""Runnable training templates that record traces with known, injected causes of low GPU utilization.

``python -m tracelens.templates.pytorch_train`` and ``python -m tracelens.templates.tf_train``; the scenarios
they share are in :mod:`tracelens.templates.scenarios` and ``docs/templates.md``.
"""
