/**
 * Shell-like word splitting for `cmd`, without running a shell: the process supervisor
 * spawns argv directly so that signals reach the model server, not an `sh -c` wrapper.
 * Follows POSIX sh quoting (XCU 2.2): single quotes are literal; inside double quotes a
 * backslash escapes only `"`, `\`, `$` and newline; outside quotes a backslash escapes
 * any character and backslash-newline is a line continuation. `#` at the start of a word
 * starts a comment, which makes multi-line `"""` commands copied from llama-swap configs
 * work as written. No globbing, no variable expansion (macros are expanded earlier).
 */

export class SplitCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SplitCommandError";
  }
}

const BLANK = new Set([" ", "\t", "\n", "\r"]);
const DQUOTE_ESCAPABLE = new Set(['"', "\\", "$", "`"]);

export function splitCommand(s: string): string[] {
  const words: string[] = [];
  let word = "";
  // A word exists once any of its characters (or an empty quoted string) was seen, so
  // `''` yields an empty argument while plain blanks yield nothing.
  let inWord = false;
  let i = 0;
  const end = () => {
    if (inWord) words.push(word);
    word = "";
    inWord = false;
  };
  while (i < s.length) {
    const c = s[i]!;
    if (BLANK.has(c)) {
      end();
      i++;
    } else if (c === "#" && !inWord) {
      while (i < s.length && s[i] !== "\n") i++;
    } else if (c === "\\") {
      const next = continuation(s, i + 1);
      if (next !== -1) {
        i = next; // line continuation: the backslash and newline vanish
      } else {
        // A trailing lone backslash has nothing to escape; keep it, as sh does.
        word += s[i + 1] ?? "\\";
        inWord = true;
        i += 2;
      }
    } else if (c === "'") {
      const close = s.indexOf("'", i + 1);
      if (close === -1) throw new SplitCommandError("unterminated single quote in command");
      word += s.slice(i + 1, close);
      inWord = true;
      i = close + 1;
    } else if (c === '"') {
      i = doubleQuoted(s, i + 1, (text) => {
        word += text;
      });
      inWord = true;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  end();
  return words;
}

/** Index after a newline (`\n` or `\r\n`) starting at `i`, or -1 when there is none. */
function continuation(s: string, i: number): number {
  if (s[i] === "\n") return i + 1;
  if (s[i] === "\r" && s[i + 1] === "\n") return i + 2;
  return -1;
}

/** Reads a double-quoted string whose body starts at `i`; returns the index after it. */
function doubleQuoted(s: string, i: number, emit: (text: string) => void): number {
  let j = i;
  while (j < s.length) {
    const c = s[j]!;
    if (c === '"') return j + 1;
    if (c === "\\") {
      const next = continuation(s, j + 1);
      if (next !== -1) {
        j = next;
        continue;
      }
      const e = s[j + 1];
      if (e !== undefined && DQUOTE_ESCAPABLE.has(e)) {
        emit(e);
        j += 2;
        continue;
      }
    }
    emit(c);
    j++;
  }
  throw new SplitCommandError("unterminated double quote in command");
}
