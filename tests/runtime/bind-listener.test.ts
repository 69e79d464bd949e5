/** `bindListener`: a listener that cannot bind ends startup with a sentence naming port and key. */
import { describe, expect, test } from "bun:test";
import { bindListener } from "../../src/runtime/serve.ts";

function failing(code: string): () => never {
  return () => {
    throw Object.assign(new Error(`${code}: from the kernel`), { code });
  };
}

describe("bindListener", () => {
  test("each bind failure becomes a sentence naming the address and the key", () => {
    expect(() =>
      bindListener("server.listen[2]", "10.9.9.9:8080", failing("EADDRNOTAVAIL")),
    ).toThrow(
      "cannot listen on 10.9.9.9:8080 (server.listen[2]): no network interface of this machine has that address",
    );
    expect(() => bindListener("server.metrics_listen", "0.0.0.0:80", failing("EACCES"))).toThrow(
      "cannot listen on 0.0.0.0:80 (server.metrics_listen): permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)",
    );
    expect(() => bindListener("server.listen[0]", "127.0.0.1:1", failing("EADDRINUSE"))).toThrow(
      /^port 1 is already in use \(server\.listen\[0\] = "127\.0\.0\.1:1"\), by .+: stop it, or choose another port$/,
    );
  });

  test("other errors pass through unchanged", () => {
    expect(() => bindListener("server.listen[0]", "127.0.0.1:1", failing("EMFILE"))).toThrow(
      "EMFILE: from the kernel",
    );
  });
});
