import type { CallToolCalls, Transcript } from '../shared/domain/calls/schemas';
import type { ReplyLatency } from '../shared/domain/conversations/latency';

/** One transcript turn as the call keeps it. */
export interface TranscriptEntry {
  /** `system` only in turns a resumed stream carries over (a transfer's briefing, written by the platform). */
  role: Transcript[number]['role'];
  text: string;
  time_sec: number;
  /** The caller cut the agent off: `text` holds only the words they heard. */
  interrupted?: boolean;
  /** An agent reply to the caller: where its time went (turn-taking.ts). A reply the caller cut off keeps its figures. */
  latency_ms?: ReplyLatency;
}

/**
 * The words of `text` a caller heard when `fraction` (0–1) of its audio played: speech runs about
 * evenly through the text, so the cut falls at that share of its characters, and a word is kept
 * when at least half of it was said.
 */
export function heardWords(text: string, fraction: number): string {
  const share = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  if (share >= 1) return text.trim();
  const heard = share * text.length;
  const kept: string[] = [];
  for (const word of text.matchAll(/\S+/g)) {
    if (word.index! + word[0].length / 2 > heard) break;
    kept.push(word[0]);
  }
  return kept.join(' ');
}

/** One agent turn by its model item: its full text and, once interrupted, the share of audio played. */
interface AgentItem {
  entry?: TranscriptEntry;
  full?: string;
  heard?: number;
  atMs?: number;
  latency?: ReplyLatency;
}

/**
 * The call's transcript and tool calls as they happen, each stamped with seconds since the stream
 * started. The caller's words arrive from transcription after the agent may already be answering,
 * so turns are ordered by when they were spoken, not by when their text arrived. An agent turn is
 * kept per model item, so an interruption (before or after its text arrived) cuts it to the words
 * the caller heard.
 */
export class TranscriptRecorder {
  private readonly turns: TranscriptEntry[] = [];
  private readonly tools: CallToolCalls = [];
  /** Agent turns by model item: their full text and, once interrupted, the share of audio played. */
  private readonly agentItems = new Map<string, AgentItem>();
  /** Bumped by every change: the session writes the call only when something changed. */
  version = 0;

  /**
   * `earlier`: the conversation a resumed stream continues (the call's transcript and tool calls
   * so far, written by the streams before it and by the platform), kept as it is: the call's
   * conversation stays whole when this stream writes it.
   */
  constructor(private readonly startMs: number, earlier?: { transcript: Transcript; toolCalls: CallToolCalls }) {
    if (!earlier) return;
    this.turns.push(...earlier.transcript.map((t) => ({ ...t })));
    this.tools.push(...earlier.toolCalls);
  }

  /** Seconds since the stream started, to a tenth. */
  seconds(atMs = Date.now()): number {
    return Math.max(0, Math.round((atMs - this.startMs) / 100) / 10);
  }

  say(role: 'agent' | 'user', text: string, atMs?: number): void {
    const clean = text.trim();
    if (!clean) return;
    this.turns.push({ role, text: clean, time_sec: this.seconds(atMs) });
    this.version++;
  }

  /** The agent's words for one model item (its audio started at `atMs`; `latency`: the reply's figures, when it answered the caller). */
  agentSaid(itemId: string, text: string, atMs?: number, latency?: ReplyLatency): void {
    const item = this.agentItems.get(itemId) ?? {};
    this.agentItems.set(itemId, item);
    item.full = text.trim();
    item.atMs = atMs;
    item.latency = latency;
    this.settle(item);
  }

  /** The caller cut the item off after `fraction` of its audio played; its turn keeps only what was heard. */
  interrupted(itemId: string, fraction: number): void {
    const item = this.agentItems.get(itemId) ?? {};
    this.agentItems.set(itemId, item);
    item.heard = Math.max(0, Math.min(1, fraction));
    this.settle(item);
  }

  private settle(item: AgentItem): void {
    if (item.full === undefined) return;
    const text = item.heard === undefined ? item.full : heardWords(item.full, item.heard);
    if (item.entry) {
      const at = this.turns.indexOf(item.entry);
      if (!text && at >= 0) this.turns.splice(at, 1); // nothing was heard: no turn
      else Object.assign(item.entry, { text }, item.heard === undefined ? {} : { interrupted: true });
      if (!text) item.entry = undefined;
    } else if (text) {
      item.entry = { role: 'agent', text, time_sec: this.seconds(item.atMs), ...(item.heard === undefined ? {} : { interrupted: true }), ...(item.latency ? { latency_ms: item.latency } : {}) };
      this.turns.push(item.entry);
    }
    this.version++;
  }

  tool(name: string, args: Record<string, unknown>, result: unknown, atMs?: number): void {
    this.tools.push({ name, arguments: args, result: result as never, time_sec: this.seconds(atMs) });
    this.version++;
  }

  transcript(): Transcript {
    return this.turns.map((t, i) => ({ t, i })).sort((a, b) => a.t.time_sec - b.t.time_sec || a.i - b.i).map(({ t }) => ({ ...t }));
  }

  toolCalls(): CallToolCalls {
    return [...this.tools];
  }
}
