"""What-if replay: the trace's dependency graph (graph.py), its replay (engine.py), remedies as graph changes
(remedies.py) and the critical path (critical.py)."""
