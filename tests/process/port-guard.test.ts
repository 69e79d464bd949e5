/** The port checks around a start: which port, moving it, who holds it, whose listener. */
import { afterEach, describe, expect, test } from "bun:test";
import type { ModelConfig } from "../../src/config/types.ts";
import { mintVariant } from "../../src/config/variant.ts";
import {
  claimPort,
  listenerOwnership,
  pickPort,
  portOf,
  withPort,
} from "../../src/process/port-guard.ts";
import { foreignListenerAsync, freePortFor } from "../../src/process/start-guard.ts";
import { QmError } from "../../src/shared/errors.ts";
import { modelFromToml } from "../support/config.ts";
import { FakeProc } from "../support/fake-proc.ts";
import { freePort } from "../support/net.ts";
import { captureLogger } from "./support.ts";

// biome-ignore lint/suspicious/noTemplateCurlyInString: qm's macros, not JS.
const [PORT, MODEL_ID] = ["${PORT}", "${MODEL_ID}"];

const listeners: { stop(force?: boolean): void }[] = [];
afterEach(() => {
  for (const l of listeners.splice(0)) l.stop(true);
});

/** `[models.ID]` keys as TOML lines → the model the loader builds, `${PORT}` from `port`. */
function model(id: string, keys: string, port = 10001): ModelConfig {
  return modelFromToml(`[server]\nstart_port = ${port}\n[models.${id}]\n${keys}\n`);
}

/** `cmd = "server --port ${PORT} --name ${MODEL_ID}"`, the port in its env too. */
function portModel(id: string, port: number): ModelConfig {
  return model(
    id,
    `cmd = "server --port ${PORT} --name ${MODEL_ID}"\nenv = { WHERE = "${PORT}" }`,
    port,
  );
}

function hold(): number {
  const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  listeners.push(l);
  return l.port;
}

describe("portOf", () => {
  test("a port qm allocated can move; a port written in the proxy cannot", () => {
    expect(portOf(portModel("a", 9100))).toEqual({ port: 9100, movable: true });
    const fixed = model("b", 'cmd = "server --port 9200"\nproxy = "http://localhost:9200"');
    expect(portOf(fixed)).toEqual({ port: 9200, movable: false });
  });

  test("a port only the proxy follows cannot move: the server would not follow it", () => {
    const proxyOnly = model("e", 'cmd = "server --port 9250"', 9250);
    expect(proxyOnly.port).toBe(9250);
    expect(portOf(proxyOnly)).toEqual({ port: 9250, movable: false });
  });

  test("a command that never names the port, with readiness unchecked, proxies to a server run elsewhere", () => {
    const proxy = 'proxy = "http://127.0.0.1:9400"';
    const outside = model("x", `cmd = "sleep 3600"\n${proxy}\ncheck_endpoint = "none"`);
    expect(portOf(outside)).toBeNull();
    // Naming the port, or checking readiness, makes the model the one meant to listen there.
    const named = model("x", `cmd = "server --port 9400"\n${proxy}\ncheck_endpoint = "none"`);
    expect(portOf(named)).toEqual({ port: 9400, movable: false });
    expect(portOf(model("x", `cmd = "sleep 3600"\n${proxy}`))).toEqual({
      port: 9400,
      movable: false,
    });
  });

  test("no check for an upstream elsewhere or a URL without a port", () => {
    const elsewhere = 'cmd = "server --port 9300"\nproxy = "http://10.1.2.3:9300"';
    expect(portOf(model("c", elsewhere))).toBeNull();
    expect(portOf(model("d", 'cmd = "server"\nproxy = "http://127.0.0.1"'))).toBeNull();
  });
});

describe("withPort", () => {
  test("re-renders command, proxy and env from the template; keeps the id", () => {
    const m = withPort(portModel("a", 9100), 9555);
    expect(m.id).toBe("a");
    expect(m.port).toBe(9555);
    expect(m.argv).toEqual(["server", "--port", "9555", "--name", "a"]);
    expect(m.proxy).toBe("http://127.0.0.1:9555");
    expect(m.env).toEqual({ WHERE: "9555" });
  });

  test("a ?ctx= variant keeps its context size and its base's name", () => {
    const v = mintVariant(portModel("a", 9100), { ctx: 4096, port: 9100, estVramGb: 0 });
    const m = withPort(v, 9556);
    expect(m.id).toBe("a?ctx=4096");
    expect(m.argv).toEqual(["server", "--port", "9556", "--name", "a", "--ctx-size", "4096"]);
  });
});

describe("pickPort", () => {
  test("skips busy ports and the ports other models were given", () => {
    claimPort(portModel("other", 9402));
    const fs = new FakeProc();
    fs.tcp = [
      { port: 9401, inode: "1", local: true },
      { port: 9403, inode: "2", local: true },
      { port: 9404, inode: "3", local: false }, // bound elsewhere: 127.0.0.1 is free
    ];
    // No port binds: /proc, the whole truth, decides which are really taken.
    const probe = { fs, bindable: () => false };
    expect(pickPort(portModel("mover", 9400), 9400, probe)).toBe(9404);
    claimPort(model("other", 'cmd = "server"\nproxy = "http://10.0.0.1:1"'));
  });

  test("a port that binds is free without reading /proc (reading it can take milliseconds)", () => {
    const fs = new FakeProc();
    fs.listeners = () => {
      throw new Error("/proc read for a port that binds");
    };
    const probe = { fs, bindable: () => true };
    const m = portModel("cheap", 9700);
    expect(freePortFor(m, { log: captureLogger().log, ownerOf: () => null, probe })).toBe(m);
  });

  test("without /proc, a bind test decides", () => {
    const fs = new FakeProc();
    fs.available = false;
    const probe = { fs, bindable: (p: number) => p > 9601 };
    expect(pickPort(portModel("mover", 9600), 9600, probe)).toBe(9602);
  });
});

describe("freePortFor", () => {
  test("a free port: the model as it is", () => {
    const m = portModel("free", freePort());
    expect(freePortFor(m, { log: captureLogger().log, ownerOf: () => null })).toBe(m);
  });

  test("a taken allocated port: moved to a free port, and the log names the holder", () => {
    const port = hold();
    const cap = captureLogger();
    const m = freePortFor(portModel("mover", port), { log: cap.log, ownerOf: () => null });
    expect(m.port).not.toBe(port);
    expect(m.proxy).toBe(`http://127.0.0.1:${m.port}`);
    expect(cap.lines.join("\n")).toContain(`port ${port} is in use by pid ${process.pid} (`);
  });

  test("a taken fixed port: port_in_use (503) naming the port and the holder", () => {
    const port = hold();
    const fixed = model(
      "fixed",
      `cmd = "server --port ${port}"\nproxy = "http://127.0.0.1:${port}"`,
    );
    let err: unknown;
    try {
      freePortFor(fixed, { log: captureLogger().log, ownerOf: (pid) => (pid ? "twin" : null) });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(QmError);
    expect((err as QmError).code).toBe("port_in_use");
    expect((err as QmError).status).toBe(503);
    expect((err as QmError).message).toContain(`port ${port}`);
    // Held by another model of this qm: it says which.
    expect((err as QmError).message).toContain(`model "twin" (pid ${process.pid} (`);
  });
});

describe("listenerOwnership (after the health check's 200)", () => {
  const fs = new FakeProc();
  fs.tcp = [{ port: 9500, inode: "77", local: true }];
  const probe = { fs, bindable: () => true };

  test("the model's tree holds the socket: ours", () => {
    fs.add(10, { start: 100 });
    fs.sockets.set(10, new Set(["77"]));
    expect(listenerOwnership(9500, [10], 100, probe).kind).toBe("ours");
  });

  test("a process that ran before the model holds it: foreign, named", () => {
    fs.sockets.set(10, new Set());
    fs.add(20, { start: 40, comm: "stranger" });
    fs.sockets.set(20, new Set(["77"]));
    expect(listenerOwnership(9500, [10], 100, probe)).toEqual({
      kind: "foreign",
      holder: { pid: 20, comm: "stranger", start: 40 },
    });
  });

  test("a holder started after the model (a container's port forwarder) is given the benefit", () => {
    fs.add(20, { start: 150, comm: "docker-proxy" });
    expect(listenerOwnership(9500, [10], 100, probe).kind).toBe("unknown");
  });

  test("nobody listens here (a namespaced upstream): unknown, not refused", () => {
    expect(listenerOwnership(9999, [10], 100, probe).kind).toBe("unknown");
  });
});

describe("foreignListenerAsync (asked once the port first answers)", () => {
  const m = () => model("m", `cmd = "server --port 9500"\nproxy = "http://127.0.0.1:9500"`);
  const deps = { log: captureLogger().log, ownerOf: () => null };

  test("the leader holds the socket: ours, and the model's tree is never read", async () => {
    const fs = new FakeProc();
    fs.tcp = [{ port: 9500, inode: "77", local: true }];
    fs.add(10, { start: 100 });
    fs.sockets.set(10, new Set(["77"]));
    const members = () => {
      throw new Error("tree read although the leader holds the socket");
    };
    const probe = { fs, bindable: () => true };
    expect(await foreignListenerAsync(m(), 10, members, 100, { ...deps, probe })).toBeNull();
  });

  test("a child holds it: ours; a stranger that ran before the model: port_in_use naming it", async () => {
    const fs = new FakeProc();
    fs.tcp = [{ port: 9500, inode: "77", local: true }];
    fs.add(10, { start: 100 });
    fs.add(11, { start: 101 });
    fs.sockets.set(11, new Set(["77"]));
    const probe = { fs, bindable: () => true };
    expect(await foreignListenerAsync(m(), 10, () => [10, 11], 100, { ...deps, probe })).toBeNull();
    fs.sockets.set(11, new Set());
    fs.add(20, { start: 40, comm: "stranger" });
    fs.sockets.set(20, new Set(["77"]));
    const err = await foreignListenerAsync(m(), 10, () => [10, 11], 100, { ...deps, probe });
    expect(err?.code).toBe("port_in_use");
    expect(err?.message).toContain("pid 20 (stranger)");
  });
});
