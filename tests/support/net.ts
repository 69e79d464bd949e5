/**
 * The one way tests and scripts get a port for a server they cannot start on port 0 themselves
 * (a child process told `--port N`, a config that must name its port): bind port 0 on loopback,
 * read the port the kernel chose, release it. Racy in principle — another process may take it
 * before the caller binds it — which every caller tolerates (the model supervisor moves an
 * allocated port that turns out to be taken).
 */
export function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = probe;
  probe.stop(true);
  return port;
}
