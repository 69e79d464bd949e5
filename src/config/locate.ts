/**
 * Finds where each key of a TOML document is written, so validation errors can name a
 * line and column. smol-toml returns plain objects without positions, hence this small
 * scanner. It only runs on text smol-toml already accepted, so it can be lenient: it
 * tracks table headers (`[a.b]`, `[a."b.c"]`, `[[a]]`), `key = value` with quoted and
 * dotted keys, inline tables and array elements (indexed "0", "1", …), and skips strings
 * of all four kinds without interpreting them beyond key decoding.
 */

export interface Position {
  line: number;
  col: number;
}

const SEP = "\u0000";
const BARE = /[A-Za-z0-9_-]/;

export class SourceMap {
  private readonly positions = new Map<string, Position>();

  /** The first place `path` (or, when it is absent, its nearest written ancestor) appears. */
  find(path: readonly (string | number)[]): Position {
    for (let n = path.length; n > 0; n--) {
      const hit = this.positions.get(path.slice(0, n).map(String).join(SEP));
      if (hit) return hit;
    }
    return { line: 1, col: 1 };
  }

  /** Like `find` but only exact hits; used to order tables by where they are written. */
  exact(path: readonly (string | number)[]): Position | undefined {
    return this.positions.get(path.map(String).join(SEP));
  }

  /** Records `path` and every prefix not seen yet (implicit tables take their first use). */
  record(path: readonly string[], pos: Position): void {
    for (let n = 1; n <= path.length; n++) {
      const key = path.slice(0, n).join(SEP);
      if (!this.positions.has(key)) this.positions.set(key, pos);
    }
  }
}

export function locateKeys(text: string): SourceMap {
  const scanner = new Scanner(text);
  scanner.document();
  return scanner.map;
}

class Scanner {
  readonly map = new SourceMap();
  private i = 0;
  private readonly lineStarts: number[] = [0];
  private readonly arrayTables = new Map<string, number>();

  constructor(private readonly s: string) {
    for (let k = 0; k < s.length; k++) if (s[k] === "\n") this.lineStarts.push(k + 1);
  }

  private pos(offset: number): Position {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, col: offset - this.lineStarts[lo]! + 1 };
  }

  private at(str: string): boolean {
    return this.s.startsWith(str, this.i);
  }

  private skipPast(str: string): void {
    const end = this.s.indexOf(str, this.i);
    this.i = end < 0 ? this.s.length : end + str.length;
  }

  private skipSpace(newlines: boolean): void {
    while (this.i < this.s.length) {
      const c = this.s[this.i]!;
      if (c === " " || c === "\t" || (newlines && (c === "\n" || c === "\r"))) this.i++;
      else if (c === "#") while (this.i < this.s.length && this.s[this.i] !== "\n") this.i++;
      else break;
    }
  }

  document(): void {
    let table: string[] = [];
    while (this.i < this.s.length) {
      this.skipSpace(true);
      if (this.i >= this.s.length) break;
      const start = this.pos(this.i);
      if (this.at("[[")) {
        this.i += 2;
        const keys = this.key();
        const id = keys.join(SEP);
        const index = this.arrayTables.get(id) ?? 0;
        this.arrayTables.set(id, index + 1);
        table = [...keys, String(index)];
        this.map.record(table, start);
        this.skipPast("]]");
      } else if (this.at("[")) {
        this.i++;
        table = this.key();
        this.map.record(table, start);
        this.skipPast("]");
      } else {
        const before = this.i;
        this.keyValue(table);
        if (this.i === before) this.i++; // never loop on text we do not understand
      }
    }
  }

  /** A possibly dotted key; the cursor ends after it and any trailing blanks. */
  private key(): string[] {
    const parts: string[] = [];
    for (;;) {
      this.skipSpace(false);
      parts.push(this.keyPart());
      this.skipSpace(false);
      if (this.s[this.i] !== ".") return parts;
      this.i++;
    }
  }

  private keyPart(): string {
    const c = this.s[this.i];
    if (c === '"') return this.basicKey();
    if (c === "'") {
      const found = this.s.indexOf("'", this.i + 1);
      const end = found < 0 ? this.s.length : found;
      const part = this.s.slice(this.i + 1, end);
      this.i = end + 1;
      return part;
    }
    const start = this.i;
    while (this.i < this.s.length && BARE.test(this.s[this.i]!)) this.i++;
    return this.s.slice(start, this.i);
  }

  private basicKey(): string {
    let out = "";
    this.i++;
    while (this.i < this.s.length && this.s[this.i] !== '"') {
      const c = this.s[this.i]!;
      if (c !== "\\") {
        out += c;
        this.i++;
        continue;
      }
      const e = this.s[this.i + 1] ?? "";
      if (e === "u" || e === "U") {
        const len = e === "u" ? 4 : 8;
        out += String.fromCodePoint(
          Number.parseInt(this.s.slice(this.i + 2, this.i + 2 + len), 16),
        );
        this.i += 2 + len;
        continue;
      }
      const simple: Record<string, string> = {
        b: "\b",
        t: "\t",
        n: "\n",
        f: "\f",
        r: "\r",
        e: "\x1b",
      };
      out += simple[e] ?? e;
      this.i += 2;
    }
    this.i++;
    return out;
  }

  private keyValue(table: readonly string[]): void {
    const start = this.pos(this.i);
    const path = [...table, ...this.key()];
    this.map.record(path, start);
    if (this.s[this.i] === "=") this.i++;
    this.skipSpace(false);
    this.value(path);
  }

  private value(path: string[]): void {
    if (this.at('"""')) this.skipString('"""', true);
    else if (this.at("'''")) this.skipString("'''", false);
    else if (this.at('"')) this.skipString('"', true);
    else if (this.at("'")) this.skipString("'", false);
    else if (this.at("[")) this.array(path);
    else if (this.at("{")) this.inlineTable(path);
    else while (this.i < this.s.length && !/[,\]}\n#]/.test(this.s[this.i]!)) this.i++;
  }

  private skipString(quote: string, escapes: boolean): void {
    this.i += quote.length;
    while (this.i < this.s.length) {
      if (escapes && this.s[this.i] === "\\") this.i += 2;
      else if (this.at(quote)) {
        this.i += quote.length;
        // A multi-line string may end with up to two extra quotes that belong to it.
        if (quote.length === 3) for (let k = 0; k < 2 && this.s[this.i] === quote[0]; k++) this.i++;
        return;
      } else this.i++;
    }
  }

  private array(path: string[]): void {
    this.i++;
    for (let index = 0; this.i < this.s.length; index++) {
      this.skipSpace(true);
      if (this.s[this.i] === "]") break;
      const element = [...path, String(index)];
      this.map.record(element, this.pos(this.i));
      this.value(element);
      this.skipSpace(true);
      if (this.s[this.i] === ",") this.i++;
    }
    this.i++;
  }

  private inlineTable(path: string[]): void {
    this.i++;
    while (this.i < this.s.length) {
      this.skipSpace(true);
      if (this.s[this.i] === "}") break;
      const before = this.i;
      this.keyValue(path);
      this.skipSpace(true);
      if (this.s[this.i] === ",") this.i++;
      if (this.i === before) this.i++;
    }
    this.i++;
  }
}
