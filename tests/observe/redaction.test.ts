/**
 * Capture redaction by pattern: every header whose name contains key, token, secret, auth,
 * cookie, session or password (any case), and the values of such query parameters.
 */
import { describe, expect, test } from "bun:test";
import {
  CaptureStore,
  captureJson,
  isSecretName,
  REDACTED,
  redactQuery,
} from "../../src/observe/capture.ts";

const enc = new TextEncoder();

describe("headers", () => {
  test("any name containing a secret word, any case, is redacted; others are kept", () => {
    const secret: Record<string, string> = {
      Authorization: "Bearer s1",
      "X-Goog-Api-Key": "s2",
      "x-amz-security-token": "s3",
      "X-Client-SECRET": "s4",
      "Proxy-Authenticate": "s5",
      "Set-Cookie": "s6",
      "X-Session-Id": "s7",
      "X-DB-Password": "s8",
      "Anthropic-Api-Key": "s9",
      "X-Auth": "s10",
    };
    const kept = { "X-Trace": "t", "Content-Type": "application/json", Accept: "*/*" };
    const c = new CaptureStore(1024, 1 << 20).begin(
      new Request("http://localhost/v1/x", { method: "POST", headers: { ...secret, ...kept } }),
      enc.encode("{}"),
    );
    const json = captureJson(c)!;
    for (const name of Object.keys(secret)) {
      expect({ name, value: json.request.headers[name.toLowerCase()] }).toEqual({
        name,
        value: REDACTED,
      });
    }
    expect(json.request.headers).toMatchObject({
      "x-trace": "t",
      "content-type": "application/json",
      accept: "*/*",
    });
    const text = JSON.stringify(json);
    for (const v of Object.values(secret)) expect(text).not.toContain(`"${v}"`);
  });

  test("the words", () => {
    for (const name of [
      "key",
      "MONKEY",
      "tokens",
      "x-secrets",
      "oauth",
      "cookie2",
      "sessionid",
      "passwords",
    ]) {
      expect({ name, secret: isSecretName(name) }).toEqual({ name, secret: true });
    }
    for (const name of ["accept", "x-request-id", "content-length", "user-agent", "host"]) {
      expect({ name, secret: isSecretName(name) }).toEqual({ name, secret: false });
    }
  });
});

describe("query parameters", () => {
  test("the values of secret-named parameters are redacted, the rest kept byte for byte", () => {
    expect(redactQuery("/v1/x?api_key=s1&a=1&Token=s2&b=%20x&session=&c")).toBe(
      `/v1/x?api_key=${REDACTED}&a=1&Token=${REDACTED}&b=%20x&session=${REDACTED}&c`,
    );
    expect(redactQuery("/v1/x?a=1&b=2")).toBe("/v1/x?a=1&b=2");
    expect(redactQuery("/v1/x")).toBe("/v1/x");
  });

  test("names are compared decoded; a malformed escape is compared as it is", () => {
    expect(redactQuery("/x?api%5Fkey=s1&pass%77ord=s2&%zzkey=s3")).toBe(
      `/x?api%5Fkey=${REDACTED}&pass%77ord=${REDACTED}&%zzkey=${REDACTED}`,
    );
  });

  test("a capture's path carries them redacted", () => {
    const c = new CaptureStore(1024, 1 << 20).begin(
      new Request("http://localhost/upstream/m/props?key=s1&x=1"),
      null,
    );
    expect(captureJson(c)!.request.path).toBe(`/upstream/m/props?key=${REDACTED}&x=1`);
  });
});
