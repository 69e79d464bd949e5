/**
 * Turns an upstream's stdout/stderr bytes into lines. `LineSplitter` is the pure core
 * (feed text, get complete lines); `pumpLines` is the thin adapter over a byte stream.
 */

/** Longer lines are cut: a model printing megabytes without a newline must not grow memory. */
export const MAX_LINE_CHARS = 8192;

export class LineSplitter {
  // Fragments since the last newline, joined once per line rather than per chunk
  // (repeated string concatenation of a long partial line would be O(n²)).
  private parts: string[] = [];
  private partLength = 0;

  constructor(private readonly maxLine = MAX_LINE_CHARS) {}

  /** Feeds decoded text; returns the lines it completed (without "\n" or a trailing "\r"). */
  push(text: string): string[] {
    const lines: string[] = [];
    let from = 0;
    for (;;) {
      const nl = text.indexOf("\n", from);
      if (nl < 0) break;
      this.add(text.slice(from, nl), lines);
      lines.push(this.take());
      from = nl + 1;
    }
    if (from < text.length) this.add(text.slice(from), lines);
    return lines;
  }

  /** The unterminated last line, if any (the stream ended without a final newline). */
  end(): string[] {
    return this.partLength > 0 || this.parts.length > 0 ? [this.take()] : [];
  }

  private add(fragment: string, lines: string[]): void {
    let rest = fragment;
    while (this.partLength + rest.length > this.maxLine) {
      const room = this.maxLine - this.partLength;
      this.parts.push(rest.slice(0, room));
      this.partLength += room;
      lines.push(this.take());
      rest = rest.slice(room);
    }
    if (rest.length > 0) {
      this.parts.push(rest);
      this.partLength += rest.length;
    }
  }

  private take(): string {
    let line = this.parts.length === 1 ? (this.parts[0] as string) : this.parts.join("");
    this.parts = [];
    this.partLength = 0;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    return line;
  }
}

/** Reads `stream` to its end, calling `onLine` per line. Never rejects. */
export async function pumpLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const splitter = new LineSplitter();
  // `stream: true` keeps a multi-byte UTF-8 character split across chunks intact.
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const line of splitter.push(decoder.decode(value, { stream: true }))) onLine(line);
    }
    for (const line of splitter.push(decoder.decode())) onLine(line);
  } catch {
    // A pipe torn down under us ends the log; the exit status tells what happened.
  } finally {
    for (const line of splitter.end()) onLine(line);
    reader.releaseLock();
  }
}
