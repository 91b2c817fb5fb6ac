"""Where a stream's messages are kept: the interface both stores share
(``base.Store``, with the real server's byte accounting), the memory store
(``memory``) and the file store (``file``).

A store knows nothing of limits, retention or consumers: the stream decides
what to keep. Nothing here imports a stream, a consumer or the API
(tests/test_seam.py). Nothing is imported here."""
