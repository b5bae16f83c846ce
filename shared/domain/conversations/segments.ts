/**
 * A conversation's segments (operations.md, "Agent-to-agent hand-off"; docs/api.md, "Hand-offs"):
 * which agent, at which version, handled it from when. One entry from the start, one more per
 * hand-off. A conversation never handed off stores none: its one segment is made from its starting
 * agent (`agent_id`, `agent_version`) and its start, so no create path writes anything new and
 * conversations from before hand-offs read the same. Pure: imported by the views of chats and
 * calls, which must stay light.
 */
export interface Segment {
  agent_id: string;
  /** The version the agent ran (null: its draft). */
  agent_version: number | null;
  started_at: string;
  /** The hand-off tool's `reason` (null for the first segment, or when the model gave none). */
  reason: string | null;
}

/** The members of a chat or call item the segments are read from. */
export interface SegmentSource {
  agent_id: string;
  agent_version?: number | null;
  started_at?: string | null;
  created_at: string;
  /** Stored once the conversation was handed off (the whole list, the first segment included). */
  segments?: Segment[] | null;
}

/** The conversation's segments: those stored, else its one starting segment. */
export function segmentsOf(item: SegmentSource): Segment[] {
  if (item.segments?.length) return item.segments;
  return [{ agent_id: item.agent_id, agent_version: typeof item.agent_version === 'number' ? item.agent_version : null, started_at: item.started_at || item.created_at, reason: null }];
}

/** The agent handling the conversation now: its last segment's. */
export function currentAgentOf(item: SegmentSource): { agent_id: string; agent_version: number | null } {
  const last = segmentsOf(item).at(-1)!;
  return { agent_id: last.agent_id, agent_version: last.agent_version };
}

/** The distinct agents that handled the conversation, in order (the chats list's `handled_by` filter reads them). */
export const handledAgentIds = (segments: Segment[]): string[] => [...new Set(segments.map((s) => s.agent_id))];

/** The analysis input's hand-off part: the segments of a conversation handed between agents (nothing for one agent). */
export function handoffAnalysis(item: SegmentSource): { segments?: Segment[] } {
  const segments = segmentsOf(item);
  return segments.length > 1 ? { segments } : {};
}

/**
 * A call's transcript with each agent line's `agent_id`: the one the line was stored with (simulated
 * calls know it), else the agent whose segment the line falls in, by its time (`time_sec` from
 * `startedAt`, the call's answer); the starting agent before any hand-off.
 */
export function withSpeakingAgents<T extends { role: string; time_sec: number; agent_id?: string }>(lines: T[], segments: Segment[], startedAt: string | null | undefined): (T & { agent_id?: string })[] {
  const first = segments[0]?.agent_id;
  if (!first) return lines;
  const base = startedAt ? Date.parse(startedAt) : NaN;
  const agentAt = (sec: number): string => {
    if (segments.length === 1 || Number.isNaN(base)) return segments.length === 1 ? first : segments.at(-1)!.agent_id;
    const at = base + sec * 1000;
    return [...segments].reverse().find((s) => Date.parse(s.started_at) <= at)?.agent_id ?? first;
  };
  return lines.map((l) => (l.role === 'agent' ? { ...l, agent_id: l.agent_id ?? agentAt(l.time_sec) } : l));
}
