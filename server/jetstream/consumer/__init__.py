"""A consumer (``consumer.Consumer``): its config (``config``), and the three
objects its state is in, the ack state (``acks``), the pull queue
(``pullqueue``, ``priorities`` for the prioritized policy) and delivery
(``delivery``), with the delivery state on disk (``state``).

A consumer reads its stream's store and never writes it: what it acks is
removed by the stream (interest and work-queue retention). Nothing is
imported here."""
