/**
 * One HTTP/1.1 exchange over a raw socket: the request goes out byte for byte as written, so a
 * test can send what `fetch` would refuse or normalise (fragments, odd Hosts, absolute-form).
 */
export interface RawResponse {
  status: number;
  headers: Headers;
  body: string;
}

export async function rawRequest(
  url: string,
  text: string,
  timeoutMs = 5000,
): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const out: Uint8Array[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    void Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        open: (s) => void s.write(text),
        data: (_s, d) => void out.push(new Uint8Array(d)),
        close: done,
        error: done,
      },
    }).catch(reject);
  });
  const all = new TextDecoder().decode(Buffer.concat(out));
  const split = all.indexOf("\r\n\r\n");
  const head = split < 0 ? all : all.slice(0, split);
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  let body = split < 0 ? "" : all.slice(split + 4);
  if (headers.get("transfer-encoding")?.includes("chunked")) body = unchunk(body);
  return { status: Number(statusLine.split(" ")[1] ?? 0), headers, body };
}

/** A request with `Connection: close`, so the answer ends when the socket does. */
export function rawGet(path: string, headers: Record<string, string>, method = "GET"): string {
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return `${method} ${path} HTTP/1.1\r\n${lines.join("")}Connection: close\r\n\r\n`;
}

function unchunk(body: string): string {
  let out = "";
  let at = 0;
  for (;;) {
    const eol = body.indexOf("\r\n", at);
    if (eol < 0) return out;
    const size = Number.parseInt(body.slice(at, eol), 16);
    if (!(size > 0)) return out;
    out += body.slice(eol + 2, eol + 2 + size);
    at = eol + 4 + size;
  }
}
