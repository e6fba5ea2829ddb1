"""The rules at the door, one module per topic (docs/architecture/design.md §2, docs/adr/0021).

Each rule is a pure function: it reads a :class:`~chips_eventlog.state.DoorState`
snapshot and the event, and either refuses (:class:`~chips_eventlog.refused.Refused`) or
returns a :class:`~chips_eventlog.state.Decision`: the fields Chips fills in and the
changes to the door state. ``chips_eventlog.door`` dispatches to them through one table
and applies what they return; ``chips_eventlog.state_store`` writes it.

Layers, each importing only those before it: ``refused``, ``state``, ``rules.common``,
then the topic modules (``lanes`` before ``runs``, which hands a run that names its lane
to it; ``words`` before ``threads`` and ``messages``).
"""
