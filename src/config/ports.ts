/**
 * `${PORT}` allocation. Ports are handed out in file order from `server.start_port`,
 * skipping ports something already listens on, so a restart next to a stray process
 * does not make a model fail to bind.
 */

/** True when nothing listens on 127.0.0.1:`port` right now (bind, then release at once). */
export function isPortFreeOnLoopback(port: number): boolean {
  try {
    const listener = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } });
    listener.stop(true);
    return true;
  } catch {
    return false;
  }
}

export class PortAllocator {
  private next: number;
  private readonly taken: Set<number>;

  constructor(
    start: number,
    private readonly isPortFree: (port: number) => boolean,
    reserved: Iterable<number> = [],
  ) {
    this.next = start;
    this.taken = new Set(reserved);
  }

  /** The next free port, or null once 65535 is passed. */
  allocate(): number | null {
    for (; this.next <= 65535; this.next++) {
      const port = this.next;
      if (this.taken.has(port) || !this.isPortFree(port)) continue;
      this.taken.add(port);
      this.next++;
      return port;
    }
    return null;
  }
}
