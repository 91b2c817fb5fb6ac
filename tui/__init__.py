"""The natslab workbench: a Textual app over nats-py.

Layout of this room:

- ``cli``      parses the command line and starts the app;
- ``app``      the thin App: connection, embedded broker lifecycle, themes, global keys;
- ``client/``  the one client layer over nats-py (typed results, all ``$JS.API`` subjects);
- ``widgets/`` reusable widgets (status header, live table, confirm dialog);
- ``panes/``   one folder per area (streams, consumers, pull hand, publish, ...).
"""
