/**
 * What the caller has actually heard. Each chunk of agent audio sent to the carrier is followed
 * by a `mark`; Twilio echoes a mark once the audio before it has played. So the last echoed mark
 * says how much of the model's item was heard (for `conversation.item.truncate`), and no mark
 * outstanding means the agent has finished speaking (the silence timer starts then, and an
 * `end_call` hangs up then), whatever the model finished sending long before.
 */

/** μ-law at 8 kHz: one byte per sample, 8 bytes per millisecond. */
export const MULAW_BYTES_PER_MS = 8;

/** Decoded length of a base64 string, without decoding it. */
export function base64Bytes(b64: string): number {
  const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return ((b64.length * 3) >> 2) - pad;
}

interface SentMark {
  name: string;
  itemId: string;
  /** Milliseconds of the item's audio sent up to this mark. */
  endMs: number;
}

export class Playout {
  /** `bytesPerMs`: the audio format's (μ-law 8, PCM16 at 24 kHz 48). */
  constructor(private readonly bytesPerMs: number = MULAW_BYTES_PER_MS) {}

  private seq = 0;
  private readonly sentMs = new Map<string, number>();
  private readonly playedMs = new Map<string, number>();
  private pending: SentMark[] = [];

  /** Records a chunk of `itemId`'s audio sent to the carrier; returns the mark to send after it. */
  sent(itemId: string, bytes: number): string {
    const endMs = (this.sentMs.get(itemId) ?? 0) + bytes / this.bytesPerMs;
    this.sentMs.set(itemId, endMs);
    const name = `a${++this.seq}`;
    this.pending.push({ name, itemId, endMs });
    return name;
  }

  /**
   * A mark came back. Marks are played in order, so it settles every mark sent before it. Marks
   * dropped by an interruption (Twilio echoes them after a `clear`) are unknown by then and ignored.
   * Returns true when the echo finished the agent's audio.
   */
  echoed(name: string): boolean {
    const at = this.pending.findIndex((m) => m.name === name);
    if (at < 0) return false;
    const mark = this.pending[at]!;
    this.pending.splice(0, at + 1);
    this.playedMs.set(mark.itemId, mark.endMs);
    return this.pending.length === 0;
  }

  /** Agent audio is sent and not yet played. */
  get playing(): boolean {
    return this.pending.length > 0;
  }

  /** The caller spoke over the agent: the item being played and how much of it was heard; the rest is forgotten. */
  interrupt(): { itemId: string; audioEndMs: number } | null {
    const current = this.pending[0];
    if (!current) return null;
    this.pending = [];
    return { itemId: current.itemId, audioEndMs: Math.floor(this.playedMs.get(current.itemId) ?? 0) };
  }
}
