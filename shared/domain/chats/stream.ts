import { clockNow } from '../../clock';
import { eventStream, type StreamBody } from '../common/stream-body';
import type { ConversationMessage, TurnStream } from '../conversations/engine';
import type { ChatMessage, ChatTurn } from './schemas';
import { messageView, type MessageItem } from './store';

/**
 * A chat turn told as it happens (docs/api.md, "Streaming a turn"): the events of
 * `Accept: text/event-stream`, in the order they are produced.
 * - `message.delta` `{ message_id, delta }`: a piece of the agent's reply text;
 * - `tool_call`, `tool_result`: the message, once the model called a tool / the tool answered;
 * - `message.completed`: the agent's message, whole (its `content` is the deltas joined);
 * - `turn.completed`: the `data` of the plain answer (every message the turn added);
 * - `error`: the error envelope, when the turn fails after it started (always the last event).
 */
export type ChatTurnEvent =
  | { event: 'message.delta'; data: { message_id: string; delta: string } }
  | { event: 'tool_call' | 'tool_result' | 'message.completed'; data: ChatMessage }
  | { event: 'turn.completed'; data: ChatTurn }
  | { event: 'error'; data: unknown };

/** Who listens to a streaming turn: `started` once the turn has claimed the chat (every refusal comes before it), then each event but the last two. */
export interface ChatTurnListener {
  started(): void;
  event(e: ChatTurnEvent): void;
}

/** The engine's stream for a chat turn: each message gets the time it was told (and is stored with it). */
export function engineStream(listener: ChatTurnListener): TurnStream {
  return {
    onDelta: (delta, messageId) => listener.event({ event: 'message.delta', data: { message_id: messageId, delta } }),
    onMessage: (m: ConversationMessage) => {
      m.created_at ??= clockNow().toISOString();
      const view = messageView({ ...m, id: m.id!, created_at: m.created_at } as unknown as MessageItem);
      listener.event({ event: m.role === 'tool_call' ? 'tool_call' : m.role === 'tool_result' ? 'tool_result' : 'message.completed', data: view });
    },
  };
}

/**
 * A chat turn as server-sent events (`Accept: text/event-stream`): `run` is the turn given a
 * listener; refusals before the turn claims the chat stay plain answers (the promise rejects).
 * `view` shapes what the caller sees (the widget: no tool traffic); `successMessage` is the plain
 * answer's, for an idempotent replay.
 */
export function streamChatTurn(
  run: (listener: ChatTurnListener) => Promise<ChatTurn>,
  options: { successMessage: string; requestId?: string; view?: (turn: ChatTurn) => ChatTurn; showTools?: boolean },
): Promise<StreamBody> {
  const showTools = options.showTools ?? true;
  return eventStream(
    (start, send) =>
      run({
        started: start,
        event: (e) => {
          if (!showTools && (e.event === 'tool_call' || e.event === 'tool_result')) return;
          send(e.event, e.data);
        },
      }),
    { completed: (turn) => ({ event: 'turn.completed', data: options.view ? options.view(turn) : turn }), successMessage: options.successMessage, requestId: options.requestId },
  );
}
