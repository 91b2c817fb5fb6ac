"""/stacksz: where the broker is right now, for debugging a stuck or busy
natslab. nats-server dumps its goroutines as text; the Python equivalent is
every thread's stack plus every pending asyncio task's stack."""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback


def stacksz(mon, q: dict):
    out: list[str] = []
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        out.append(f"thread {ident} [{names.get(ident, '?')}]:\n")
        out.extend(traceback.format_stack(frame))
        out.append("\n")
    for task in sorted(asyncio.all_tasks(), key=lambda t: t.get_name()):
        coro = task.get_coro()
        out.append(f"task {task.get_name()} [{getattr(coro, '__qualname__', coro)}]:\n")
        for frame in task.get_stack():
            out.extend(traceback.format_stack(frame, limit=1))
        out.append("\n")
    # nats-server labels this text as JSON too; tools only show it
    return "application/json", "".join(out).encode()
