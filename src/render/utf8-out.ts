/**
 * An answer's JSON text written as UTF-8 into one growing Buffer, piece by piece (each record's
 * text as it is rendered), and sent as those bytes. Concatenated into one string instead, a page
 * is a rope of a few thousand pieces that Fastify flattens to count its bytes (Buffer.byteLength)
 * and the socket then encodes again; where a piece holds a character past Latin-1 (the benchmark's
 * 東京, an emoji), the flattened string is two bytes a character, and a 71 KiB expanded page
 * becomes a 150 KB string allocated for each answer. Here each piece is encoded once, where it is.
 */
export class Utf8Out {
  private buf: Buffer;
  private length = 0;

  constructor(capacity = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(capacity);
  }

  text(s: string): void {
    // A UTF-16 unit is at most 3 bytes of UTF-8: only a piece that may not fit is measured.
    if (this.length + s.length * 3 > this.buf.length) this.room(Buffer.byteLength(s));
    this.length += this.buf.write(s, this.length);
  }

  /** The bytes written (a view of the buffer: nothing is copied). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }

  private room(needed: number): void {
    if (this.length + needed <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + needed));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
}
