/**
 * Who holds a TCP port, at any address: for a listener qm cannot bind (`qm serve` refusing to
 * start, `qm doctor`). Linux only for now — /proc/net/tcp{,6} for the listening socket's inode,
 * then /proc/PID/fd for the process that has it open; elsewhere (or for another user's
 * process, whose fds qm may not read) the answer is null and the message says how to look.
 */
import { describeHolder, findHolder, type Holder } from "./port-guard.ts";
import { linuxProc, type ProcFs } from "./proc-fs.ts";

export function portHolder(port: number, fs: ProcFs = linuxProc): Holder | null {
  if (!fs.available) return null;
  const inodes = new Set(
    fs
      .listeners()
      .filter((l) => l.port === port)
      .map((l) => l.inode),
  );
  return findHolder(inodes, fs);
}

/** "pid 123 (llama-server)", or how to find it (`ss -ltnp …`). */
export function describePortHolder(port: number, fs: ProcFs = linuxProc): string {
  return describeHolder(port, portHolder(port, fs));
}
