/**
 * Tokens of a text as a BPE or SentencePiece vocabulary of the Llama 3, Qwen, Gemma or Phi-3
 * kind would make them, or more: the text part of the prompt estimate
 * (`api/anthropic/translate/estimate.ts`, which explains the rates and the corpus that
 * calibrates them), and of the Responses API's reasoning count when the upstream gives none.
 */

const encoder = new TextEncoder();

/** ASCII letters a token in a word ("configuration" is 1–3 tokens). */
const ASCII_LETTERS = 5;
/** ASCII symbols a token in a run (`");`, `": "`, `},` are often one). */
const ASCII_SYMBOLS = 2;

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;
const HANGUL = /\p{Script=Hangul}/u;
/** Scripts every vocabulary here covers well: about two letters a token. */
const COMMON = /[\p{Script=Latin}\p{Script=Cyrillic}]/u;
/** Letter runs, single digits, whitespace runs, ASCII symbol runs, other symbol runs. */
const PIECES = /\p{L}+|\p{N}|\s+|[!-/:-@[-`{-~]+|[^\p{L}\p{N}\s\x21-\x7e]+/gu;
const LETTER = /\p{L}/u;
const DIGIT = /\p{N}/u;
/** What a preceding space joins in a BPE pre-tokenizer: a word or a symbol run. */
const SYMBOL = /[!-/:-@[-`{-~]/;
const JOINS = /[\p{L}!-/:-@[-`{-~]/u;

function letters(run: string): number {
  let ascii = 0;
  let other = 0;
  let rare = false;
  for (const ch of run) {
    if (ch.charCodeAt(0) < 128) ascii++;
    else if (CJK.test(ch)) other += 1;
    // Phi-3's 32k SentencePiece vocabulary falls back to bytes for much of Hangul.
    else if (HANGUL.test(ch)) {
      other += 1.5;
      rare = true;
    } else if (COMMON.test(ch)) other += 0.5;
    // Greek, Hebrew, Arabic, Devanagari, Thai, …: a token a letter in Phi-3, half in the others.
    else {
      other += 1;
      rare = true;
    }
  }
  // In a SentencePiece vocabulary the word's leading space ("▁") is a token of its own there.
  return Math.ceil(ascii / ASCII_LETTERS) + Math.ceil(other) + (rare ? 1 : 0);
}

function whitespace(run: string, prev: string | undefined, next: string | undefined): number {
  // A line break is a token, unless it ends a symbol run (`",\n` is one); of the indentation
  // after it, the last space joins the next word or symbol, the rest is one token.
  const nl = run.lastIndexOf("\n");
  const spaces = run.length - nl - 1;
  let n = nl < 0 ? 0 : run[0] === "\n" && prev !== undefined && SYMBOL.test(prev) ? 0.5 : 1;
  if (spaces >= 2) n++;
  if (spaces >= 1 && (next === undefined || !JOINS.test(next))) n++;
  return n;
}

/** Tokens of a text as a BPE vocabulary of the Llama 3 / Qwen kind would make them, or more. */
export function estimateText(text: string): number {
  let n = 0;
  for (const m of text.matchAll(PIECES)) {
    const piece = m[0];
    const first = piece[0] ?? "";
    const prev = text[m.index - 1];
    const next = text[m.index + piece.length];
    if (/\s/.test(first)) n += whitespace(piece, prev, next);
    else if (LETTER.test(first)) {
      // Letters against digits are ids, hashes, base64: they split into short pieces.
      const id = DIGIT.test(prev ?? "") || DIGIT.test(next ?? "");
      n += id ? Math.ceil(piece.length / 2) : letters(piece);
    } else if (DIGIT.test(first)) n++;
    else if (SYMBOL.test(first)) n += Math.ceil(piece.length / ASCII_SYMBOLS);
    else n += Math.ceil(encoder.encode(piece).byteLength / 2);
  }
  return Math.ceil(n);
}
