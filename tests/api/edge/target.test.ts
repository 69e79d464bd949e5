import { describe, expect, test } from "bun:test";
import { checkOrigin } from "../../../src/api/edge/cors.ts";
import { hostPolicy } from "../../../src/api/edge/hosts.ts";
import { parseTarget } from "../../../src/api/edge/target.ts";
import { QmError } from "../../../src/shared/errors.ts";
import { isLoopbackName } from "../../../src/shared/net.ts";

describe("parseTarget", () => {
  test("finds the path after any Host, short ones included", () => {
    for (const host of ["x", "qm", "abc", "localhost:8080", "[::1]:9"]) {
      const t = parseTarget(`http://${host}/v1/chat/completions?x=1`, host);
      expect(t).toMatchObject({ path: "/v1/chat/completions", host });
    }
  });

  test("a fragment anywhere after the path start is refused", () => {
    for (const url of ["http://x/health#/api/status", "http://x/a?b#c", "http://x/#"]) {
      const t = parseTarget(url, "x");
      expect(t).toBeInstanceOf(QmError);
      expect((t as QmError).status).toBe(400);
    }
  });

  test("malformed or doubled Hosts are refused; no Host at all is accepted (HTTP/1.0)", () => {
    for (const host of ["a/b", "a b", "a, b", "u@evil", "a#b", "a?b", ""]) {
      expect(parseTarget("/api/status", host)).toBeInstanceOf(QmError);
    }
    expect(parseTarget("/api/status", null)).toMatchObject({ path: "/api/status", host: "" });
  });

  test("host names are compared lower-case without the port", () => {
    expect(parseTarget("http://LocalHost:80/", "LocalHost:80")).toMatchObject({
      hostname: "localhost",
    });
    expect(parseTarget("http://[::1]:80/", "[::1]:80")).toMatchObject({ hostname: "[::1]" });
  });

  test("an over-long target is a 414", () => {
    const t = parseTarget(`http://x/${"a".repeat(20_000)}`, "x");
    expect((t as QmError).status).toBe(414);
  });
});

describe("hostPolicy", () => {
  test("loopback listeners admit loopback names only, by default", () => {
    const p = hostPolicy([], true);
    for (const h of ["localhost", "127.0.0.1", "127.1.2.3", "[::1]", "ui.localhost"]) {
      expect(p.allows(h)).toBe(true);
    }
    for (const h of ["evil.example", "localhost.evil", "10.0.0.1", "0.0.0.0"]) {
      expect(p.allows(h)).toBe(false);
    }
  });

  test("other listeners admit any host until the list is set; * admits all", () => {
    expect(hostPolicy([], false).allows("evil.example")).toBe(true);
    const listed = hostPolicy(["box.lan", "*.corp"], false);
    expect(listed.allows("box.lan")).toBe(true);
    expect(listed.allows("a.b.corp")).toBe(true);
    expect(listed.allows("corp")).toBe(false);
    expect(listed.allows("localhost")).toBe(false);
    expect(hostPolicy(["*"], true).allows("anything")).toBe(true);
  });

  test("listed names may carry a port; listeners are loopback by their address", () => {
    expect(hostPolicy(["box:8080"], false).allows("box")).toBe(true);
    expect(isLoopbackName("127.0.0.1")).toBe(true);
    expect(isLoopbackName("::1")).toBe(true);
    expect(isLoopbackName("0.0.0.0")).toBe(false);
    expect(isLoopbackName("192.168.1.2")).toBe(false);
  });
});

describe("checkOrigin", () => {
  test("no Origin (curl, SDKs) passes; a cross-site fetch without one does not", () => {
    expect(checkOrigin(null, null, "localhost:8080", []).ok).toBe(true);
    expect(checkOrigin(null, "same-origin", "localhost:8080", []).ok).toBe(true);
    expect(checkOrigin(null, "none", "localhost:8080", []).ok).toBe(true);
    expect(checkOrigin(null, "cross-site", "localhost:8080", []).ok).toBe(false);
  });

  test("qm's own origin passes without CORS headers; listed ones get them; others do not", () => {
    expect(checkOrigin("http://localhost:8080", null, "localhost:8080", [])).toEqual({
      ok: true,
      allowOrigin: null,
    });
    expect(
      checkOrigin("http://app.example", null, "localhost:8080", ["http://app.example"]),
    ).toEqual({
      ok: true,
      allowOrigin: "http://app.example",
    });
    expect(
      checkOrigin("http://evil.example", null, "localhost:8080", ["http://app.example"]).ok,
    ).toBe(false);
    expect(checkOrigin("null", null, "localhost:8080", []).ok).toBe(false);
    expect(checkOrigin("http://localhost:8081", null, "localhost:8080", []).ok).toBe(false);
  });
});
