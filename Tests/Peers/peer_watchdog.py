"""Shared by the test peers: never outlive the test process that started us, nor run longer
than `limit` seconds (a peer left behind would hold a port and a process forever)."""
import os, threading, time

def watchdog(limit, follow_parent=True):
    """follow_parent=False: only the time limit (a daemon whose starter exits on purpose)."""
    parent = os.getppid()
    def watch():
        started = time.time()
        while (os.getppid() == parent or not follow_parent) and time.time() - started < limit:
            time.sleep(0.2)
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()
