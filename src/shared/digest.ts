/** SHA-256, as qm names API keys by it (`[keys.NAME] key_sha256`, `qm keys hash`). */
import { createHash } from "node:crypto";

/** SHA-256 of `text` (UTF-8), lower-case hex. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
