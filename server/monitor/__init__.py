"""The monitoring port and nats-server's monitoring pages: ``http`` is the
HTTP/1.1 server (``Monitor``) and its routes; ``varz``, ``connz``, ``jsz``,
``cluster`` and ``debug`` build each page's JSON (the ``$SYS`` requests in
``server/sysmon.py`` answer with the same builders), with Go's wire
conventions and nats-server's query rules in ``format``.

Nothing is imported here, so loading one page's module (a ``$SYS`` request,
a test) does not load the others or the HTTP server."""
