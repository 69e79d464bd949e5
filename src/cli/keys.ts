/**
 * `qm keys hash`: the `key_sha256` of a key read from stdin (one trailing newline ignored), in
 * lower-case hex. `qm keys new NAME`: a new random key on the first line, then its
 * `[keys.NAME]` table with `key_sha256` — the key goes to whoever will use it, the table into
 * the config, which then holds no secret.
 */
import { ADMIN_KEY_NAME, ANONYMOUS_KEY_NAME, KEY_NAME } from "../config/keys.ts";
import { sha256Hex } from "../shared/digest.ts";
import { parse, UsageError } from "./args.ts";
import { KEYS_HELP } from "./help.ts";

export interface KeysIo {
  out(text: string): void;
  err(text: string): void;
  /** All of stdin. */
  stdin(): Promise<string>;
  /** `n` random bytes. */
  random(n: number): Uint8Array;
}

const stdio: KeysIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  stdin: () => Bun.stdin.text(),
  random: (n) => crypto.getRandomValues(new Uint8Array(n)),
};

/** A TOML key: bare when it can be, else quoted. */
function tomlKey(name: string): string {
  return /^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name);
}

export async function keysCommand(argv: string[], io: KeysIo = stdio): Promise<number> {
  const { values, positionals } = parse(argv, {});
  const [sub, ...rest] = positionals;
  if (values.help || sub === undefined) {
    io.out(KEYS_HELP);
    return values.help ? 0 : 2;
  }
  if (sub === "hash") {
    if (rest.length > 0)
      throw new UsageError("qm keys hash reads the key from stdin, not the command line");
    const text = await io.stdin();
    const key = text.endsWith("\r\n")
      ? text.slice(0, -2)
      : text.endsWith("\n")
        ? text.slice(0, -1)
        : text;
    if (key === "") {
      io.err('qm: no key on stdin (e.g. printf %s "$KEY" | qm keys hash)\n');
      return 1;
    }
    io.out(`${sha256Hex(key)}\n`);
    return 0;
  }
  if (sub === "new") {
    const [name, ...extra] = rest;
    if (name === undefined || extra.length > 0) throw new UsageError("qm keys new takes one NAME");
    if (!KEY_NAME.test(name)) {
      throw new UsageError(
        `"${name}" is no key name: 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit`,
      );
    }
    if (name === ADMIN_KEY_NAME || name === ANONYMOUS_KEY_NAME) {
      throw new UsageError(`"${name}" is taken; choose another name`);
    }
    // 32 random bytes (256 bits), base64url: a key no one guesses, safe in a header.
    const key = `qm-${Buffer.from(io.random(32)).toString("base64url")}`;
    io.out(`${key}\n[keys.${tomlKey(name)}]\nkey_sha256 = "${sha256Hex(key)}"\n`);
    return 0;
  }
  throw new UsageError(`unknown keys command "${sub}" (hash, new)`);
}
