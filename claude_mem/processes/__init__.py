"""Our processes: the locks that say one is alive, starting one detached, and finding them.

  locks.py    exclusive flocks a live process holds for its whole life (workers, the memory
              service): the kernel drops them when it dies, so they never go stale; probing
              one costs microseconds (standard library only: the hooks probe them)
  detach.py   `python -m claude_mem ARGS` started in a process session of its own (standard
              library only: the hooks start workers and the service)
  census.py   which running processes are ours (psutil, off the hook path): an observer CLI and
              what it started, a live worker by pid and create time; stopping them
"""
