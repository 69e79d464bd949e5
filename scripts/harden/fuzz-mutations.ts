/**
 * The mutations of the fuzz suite, each named by what it breaks (`target:%ZZ`, `frame:chunked`,
 * …): the per-category tallies on stderr use these names. Most set or append one of a few
 * values to one part of the request (the table); the rest rewrite it (the functions).
 */
import { BROKEN_MODEL, type Draft, OK_MODEL, pickWith, type Rng } from "./fuzz-cases.ts";

export type Mutation = [string, (d: Draft, r: Rng, port: number) => void];

const long = (n: number, c = "a") => c.repeat(n);
const chat = (content = "hi") =>
  JSON.stringify({ model: OK_MODEL, max_tokens: 4, messages: [{ role: "user", content }] });

function setHeader(d: Draft, name: string, value: string): void {
  d.headers = d.headers.filter((h) => !h.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  d.headers.push(`${name}: ${value}`);
}

/** Replaces the body's `model` with a JSON value (given as JSON text). */
function setModel(d: Draft, json: string): void {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(d.body);
  } catch {
    o = { messages: [{ role: "user", content: "hi" }] };
  }
  if (typeof o !== "object" || o === null) o = {};
  o.model = JSON.parse(json);
  d.body = JSON.stringify(o);
}

type Op = (d: Draft, v: string) => void;
const method: Op = (d, v) => {
  d.method = v;
};
const target: Op = (d, v) => {
  d.target = v;
};
const append: Op = (d, v) => {
  d.target += v;
};
const prefix: Op = (d, v) => {
  d.target = v + d.target;
};
const version: Op = (d, v) => {
  d.version = v;
};
const host: Op = (d, v) => {
  d.headers[0] = `Host: ${v}`.trimEnd();
};
const header =
  (name: string, framed = false): Op =>
  (d, v) => {
    setHeader(d, name, v);
    if (framed) d.framed = true;
  };
const push: Op = (d, v) => {
  d.headers.push(v);
};
const body: Op = (d, v) => {
  d.body = v;
};
const model: Op = setModel;

const TABLE: [string, Op, string[]][] = [
  ["method:other", method, ["GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE"]],
  ["method:garbage", method, ["FOO", "get", "Post", "P\x01ST", "BREW", long(300, "X")]],
  ["method:connect", method, ["CONNECT"]],
  ["target:query", append, ["?", "?a=1&a=2", "?x=%ZZ", "?ctx=-1", "??&&==", "?#"]],
  ["target:fragment", append, ["#", "#frag", "#/api/status", "#/../x"]],
  ["target:%-end", append, ["%", "%4"]],
  ["target:%00", append, ["%00"]],
  ["target:traversal", append, ["/../../../../etc/passwd"]],
  ["target:bytes", append, ["/\xff\xfe", "/\xe9", "/\x7f", "/a b", "/a\tb"]],
  ["target:params", append, [";x=1"]],
  ["target:long", append, [`/${long(2000)}`, `/${long(9000)}`, `/${long(70_000)}`]],
  ["target:long-query", append, [`?q=${long(9000)}`, `?q=${long(70_000)}`]],
  ["target:*", target, ["*"]],
  ["target:empty", target, [""]],
  ["target:dotdot", prefix, ["/..", "/x/..", "/%2e%2e", "/./."]],
  ["target://", prefix, ["/"]],
  ["target:absolute", prefix, ["http://x", "http://127.0.0.1:{port}", "https://evil.example"]],
  ["version:odd", version, ["HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/1.1 x", ""]],
  ["version:case", version, ["http/1.1", "HTTP/1.1\t"]],
  ["host:short", host, ["x", "qm", "a", "::1"]],
  ["host:empty", host, [""]],
  ["host:slash", host, ["a/b", "/", "x/api/status", "x#y", "x?y"]],
  ["host:long", host, [long(300)]],
  ["host:foreign", host, ["evil.example"]],
  ["header:hold", header("X-QM-Hold-Ms"), ["99999999999", "-1", "abc", "1e3", "", "0x10"]],
  ["header:patience", header("X-QM-Patience-Ms"), ["99999999999", "-5", "NaN", "Infinity"]],
  [
    "header:content-type",
    header("Content-Type"),
    ["text/plain", "multipart/form-data", "multipart/form-data; boundary=zz", "\x01"],
  ],
  ["header:form-type", header("Content-Type"), ["application/x-www-form-urlencoded"]],
  ["header:charset", header("Content-Type"), ["application/json; charset=utf-16"]],
  ["header:auth-garbage", header("Authorization"), ["Bearer", "Basic ???", long(5000)]],
  ["header:expect", header("Expect"), ["100-continue"]],
  ["header:anthropic", header("anthropic-version"), ["", "1999-01-01", long(1000)]],
  [
    "header:huge",
    push,
    [`X-Big: ${long(9000)}`, `X-Big: ${long(20_000)}`, `X-Big: ${long(70_000)}`],
  ],
  ["header:many", push, [Array.from({ length: 300 }, (_, i) => `X-H${i}: v`).join("\r\n")]],
  ["header:no-colon", push, ["X-Broken-Header"]],
  ["header:obs-fold", push, ["X-Fold: a\r\n b"]],
  ["header:ctl-bytes", push, ["X-Ctl: a\x00b"]],
  ["frame:te-odd", header("Transfer-Encoding"), ["gzip", "identity", "chunked, gzip", "x"]],
  [
    "frame:cl-garbage",
    header("Content-Length", true),
    ["abc", "-1", "1.5", "0x10", "9".repeat(20)],
  ],
  ["body:invalid-json", body, ["{", "}{", "nul", '{"model":', "[1,2", "{'a':1}", "\x00\x01\x02"]],
  ["body:top-level", body, ["[]", '"str"', "1", "null", "true", `[{"model":"${OK_MODEL}"}]`]],
  ["body:empty", body, [""]],
  ["body:deep", body, [long(1000, "["), long(100_000, "[")]],
  ["body:bad-utf8", body, [chat("\xff\xfe\xc3")]],
  ["body:number-edge", body, [chat().replace('"max_tokens":4', '"max_tokens":1e309')]],
  ["body:dup-keys", body, [`{"model":"${OK_MODEL}","model":1,"messages":[]}`]],
  ["body:proto", body, [chat().replace("{", '{"__proto__":{"x":1},"constructor":{},')]],
  ["body:huge", body, [900_000, 1_500_000, 2_600_000].map((n) => chat(long(n)))],
  ["body:wrong-types", model, ["1", "[]", "{}", "null", "true", '""', `"${long(100_000)}"`]],
  [
    "body:model-variant",
    model,
    ["abc", "-1", "99999999999999999999", "", "4096"].map((c) => `"${OK_MODEL}?ctx=${c}"`),
  ],
  ["body:model-unknown", model, ['"nope"', `"../${OK_MODEL}"`, `"${OK_MODEL}\\u0000"`, '"Z-OK"']],
  ["body:model-broken", model, [`"${BROKEN_MODEL}"`]],
];

const FIELD_TYPES: [string, unknown][] = [
  ["messages", "x"],
  ["messages", [1]],
  ["messages", [{}]],
  ["stream", "true"],
  ["stream", 1],
  ["max_tokens", -1],
  ["max_tokens", "9"],
  ["max_tokens", 1.5],
  ["tools", "x"],
  ["tools", [{}]],
  ["system", 5],
  ["stream_options", 1],
];

const MULTIPART = [
  '--XX\r\nContent-Disposition: form-data; name="model"\r\n\r\nz-ok\r\n',
  "--YY\r\n\r\n",
  '--XX\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n\x00\x01\r\n--XX--\r\n',
  "--XX--",
  "garbage",
];

const chunked = (parts: string[]) =>
  `${parts.map((p) => `${p.length.toString(16)}\r\n${p}\r\n`).join("")}0\r\n\r\n`;

const FUNCTIONS: Mutation[] = [
  [
    "target:%ZZ",
    (d) => {
      d.target = d.target.replace(/\/([^/]*)$/, "/%ZZ$1");
    },
  ],
  [
    "target:%2F",
    (d) => {
      d.target = d.target.replace(/\/(?=[^/]*$)/, "%2F");
    },
  ],
  [
    "target:backslash",
    (d) => {
      d.target = d.target.replaceAll("/", "\\");
    },
  ],
  [
    "target:case",
    (d) => {
      d.target = d.target.toUpperCase();
    },
  ],
  ["host:duplicated", (d) => d.headers.splice(1, 0, "Host: evil.example")],
  ["host:missing", (d) => d.headers.shift()],
  [
    "body:field-types",
    (d, r) => {
      const [k, v] = pickWith(r)(FIELD_TYPES);
      d.body = JSON.stringify({ ...JSON.parse(chat()), [k]: v });
    },
  ],
  [
    "body:truncated",
    (d, r) => {
      d.body = d.body.slice(0, Math.floor(r() * d.body.length));
    },
  ],
  [
    "body:bom-nul",
    (d, r) => {
      d.body = r() < 0.5 ? `\xef\xbb\xbf${d.body}` : `${d.body}\x00`;
    },
  ],
  [
    "body:multipart",
    (d, r) => {
      setHeader(d, "Content-Type", "multipart/form-data; boundary=XX");
      d.body = pickWith(r)(MULTIPART);
    },
  ],
  [
    "frame:cl-conflict",
    (d) => {
      d.headers.push(`Content-Length: ${d.body.length}`, `Content-Length: ${d.body.length + 5}`);
      d.framed = true;
    },
  ],
  [
    "frame:cl-short",
    (d) => {
      setHeader(d, "Content-Length", String(Math.floor(d.body.length / 2)));
      d.framed = true;
    },
  ],
  [
    "frame:chunked",
    (d, r) => {
      const cut = Math.floor(r() * d.body.length);
      d.body = chunked([d.body.slice(0, cut), d.body.slice(cut)].filter((p) => p.length > 0));
      setHeader(d, "Transfer-Encoding", "chunked");
      d.framed = true;
    },
  ],
  [
    "frame:chunked-bad",
    (d, r) => {
      const bad = [
        "zz\r\nabc\r\n0\r\n\r\n",
        "3\r\nabcdef\r\n0\r\n\r\n",
        "-1\r\n\r\n",
        "0\r\nX: y\r\n\r\n",
      ];
      d.body = pickWith(r)(bad);
      setHeader(d, "Transfer-Encoding", "chunked");
      d.framed = true;
    },
  ],
  [
    "frame:te-and-cl",
    (d) => {
      d.body = chunked([d.body]);
      d.headers.push("Transfer-Encoding: chunked", "Content-Length: 3");
      d.framed = true;
    },
  ],
];

export const MUTATIONS: Mutation[] = [
  ...TABLE.map(
    ([label, op, values]): Mutation => [
      label,
      (d, r, port) => op(d, pickWith(r)(values).replace("{port}", String(port))),
    ],
  ),
  ...FUNCTIONS,
];
