"""The ``$JS.API`` as a client sees it: the dispatcher (``dispatch.Api``: one
handler per API subject, JSON in and out in the real server's shapes) and
the requests that are more than a handler, stream backup and restore
(``snapshot``, in nats-server's archive format, ``s2`` its framing).

Made by the account's JetStream (``jetstream.py``) at the first request;
it reaches streams and consumers through that JetStream. Nothing is
imported here: a server starts without the API's modules."""
