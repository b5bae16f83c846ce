import type { CallToolCalls, Transcript } from '../shared/domain/calls/schemas';

/**
 * The call's transcript and tool calls as they happen, each stamped with seconds since the stream
 * started. The caller's words arrive from transcription after the agent may already be answering,
 * so turns are ordered by when they were spoken, not by when their text arrived.
 */
export class TranscriptRecorder {
  private readonly turns: Transcript = [];
  private readonly tools: CallToolCalls = [];
  /** Bumped by every change: the session writes the call only when something changed. */
  version = 0;

  constructor(private readonly startMs: number) {}

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

  tool(name: string, args: Record<string, unknown>, result: unknown, atMs?: number): void {
    this.tools.push({ name, arguments: args, result: result as never, time_sec: this.seconds(atMs) });
    this.version++;
  }

  transcript(): Transcript {
    return this.turns.map((t, i) => ({ t, i })).sort((a, b) => a.t.time_sec - b.t.time_sec || a.i - b.i).map(({ t }) => t);
  }

  toolCalls(): CallToolCalls {
    return [...this.tools];
  }
}
