"""What-if replay: the trace's dependency graph (graph.py), its replay (engine.py), remedies as graph changes
(remedies.py), the critical path (critical.py), and a run's ranks joined at their collectives (run_join.py)."""
