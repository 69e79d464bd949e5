/**
 * A bounded FIFO of the most recent items: pushing onto a full buffer drops the oldest.
 * Used for model logs, where memory must stay flat however chatty an upstream is.
 */
export class RingBuffer<T> {
  readonly capacity: number;
  // A fixed array with a moving head avoids Array#shift's O(n) cost per push when full.
  private readonly items: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`ring buffer capacity must be a positive integer, got ${capacity}`);
    }
    this.capacity = capacity;
    this.items = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.count;
  }

  push(item: T): void {
    this.items[(this.head + this.count) % this.capacity] = item;
    if (this.count < this.capacity) this.count++;
    else this.head = (this.head + 1) % this.capacity;
  }

  /** Oldest first. */
  toArray(): T[] {
    return this.tail(this.count);
  }

  /** The last `n` items, oldest first. */
  tail(n: number): T[] {
    const take = Math.max(0, Math.min(Math.floor(n), this.count));
    const out: T[] = new Array(take);
    const start = this.head + this.count - take;
    for (let i = 0; i < take; i++) out[i] = this.items[(start + i) % this.capacity] as T;
    return out;
  }

  clear(): void {
    this.items.fill(undefined);
    this.head = 0;
    this.count = 0;
  }
}
