"""A server subsystem's messaging inside one configured account: what an
account's own JetStream talks through when the account has a subject space
of its own (not the server's index).

nats-server gives each account's JetStream internal clients of that account,
so its subscriptions (``$JS.API.>``, each stream's subjects, ack subjects)
and everything it sends (API answers, PubAcks, deliveries, advisories) live
in that account alone: a stream ORDERS of account A and one of account B
never meet. ``AccountInternal`` is that for natslab: it offers the internal
messaging calls of ``Server`` (``subscribe_internal``, ``publish_internal``,
``reply_internal``, ``reply_run``, ``deliver_internal``, ``has_interest``,
``no_responders``, ...) as the very same functions, run against the
account's subject index and an internal client of the account, so there is
one implementation of each; everything else (the loop, options, logger,
flushing) is the server's. A publish from it is routed as any message of the
account (``Accounts.route``): to the account's subscribers and to whoever
imports it.
"""

from __future__ import annotations

from .internal import InternalClient
from .server import Server


class AccountInternalClient(InternalClient):
    """The internal client of one account (its messages route in it)."""

    def __init__(self, server, account):
        super().__init__(server)
        self.account = account


class _ServerAttr:
    """An attribute that is the server's, read and written through."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        return getattr(obj.server, self.name)

    def __set__(self, obj, value) -> None:
        setattr(obj.server, self.name, value)


class AccountInternal:
    # Server's own internal messaging, on this account's index and client
    subscribe_internal = Server.subscribe_internal
    unsubscribe_internal = Server.unsubscribe_internal
    publish_internal = Server.publish_internal
    no_responders = Server.no_responders
    _no_responders = Server._no_responders
    reply_internal = Server.reply_internal
    reply_run = Server.reply_run
    deliver_internal = Server.deliver_internal
    deliver_matched = staticmethod(Server.deliver_matched)
    deliver_matched_run = staticmethod(Server.deliver_matched_run)
    has_interest = Server.has_interest
    match_deliver = Server.match_deliver

    def __init__(self, server, account):
        self.server = server
        self.account = account
        self.index = account.index
        self.internal_client = AccountInternalClient(server, account)
        self.match_reply = self.index.reply_matcher()
        self._deliver_memo: tuple = ("", -1, None)
        self.interest_listeners = account.interest_listeners
        self.deliver_account = account

    # who sent the message being routed, and the client traffic counters:
    # the server's one record of each, read and written there
    current_publisher = _ServerAttr()
    in_msgs = _ServerAttr()
    in_bytes = _ServerAttr()

    def __getattr__(self, name):
        # the loop, opts, logger, route, schedule_flush, write_behind, ...
        return getattr(self.server, name)
