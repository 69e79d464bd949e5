/**
 * Which readings change the VRAM picture enough to tell the dashboard (`event: vram`). Pure: the
 * caller passes each reading's figures and the time.
 */

/** What one `vram` report showed. */
interface Picture {
  usedGb: number;
  foreignGb: number;
  ceilingGb: number;
  at: number;
}

/**
 * Decides which readings change the VRAM picture enough to report: the first trusted one, the
 * loss of trust (and its return), and a move of used, foreign or the ceiling by more than
 * `thresholdGb` since the last report — at most once per `minMs`. A move held back by that
 * limit is not lost: the next reading past it is compared with the last report, not the last
 * reading, so the change is reported then.
 */
export class VramPictures {
  /** The last report: a picture, "none" (trust lost), or null (nothing reported yet). */
  private shown: Picture | "none" | null = null;

  constructor(
    private readonly thresholdGb = 0.25,
    private readonly minMs = 1000,
  ) {}

  /** A trusted reading (with the ceiling it gives) at `now`: true when it is to be reported. */
  reading(usedGb: number, foreignGb: number, ceilingGb: number, now: number): boolean {
    const last = this.shown;
    const next = { usedGb, foreignGb, ceilingGb, at: now };
    if (last === null || last === "none") {
      this.shown = next;
      return true;
    }
    const moved = (a: number, b: number) => Math.abs(a - b) > this.thresholdGb;
    const changed =
      moved(usedGb, last.usedGb) ||
      moved(foreignGb, last.foreignGb) ||
      moved(ceilingGb, last.ceilingGb);
    if (!changed || now - last.at < this.minMs) return false;
    this.shown = next;
    return true;
  }

  /** No trusted reading: reported once, when trust is lost. */
  untrusted(): boolean {
    if (this.shown === null || this.shown === "none") return false;
    this.shown = "none";
    return true;
  }
}
