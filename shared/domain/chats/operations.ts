import { defineOperation, type Access } from '../../http/operation';
import { objectKeys } from '../rag/object-keys';
import { IdParams } from '../common/schemas';
import { Chat, ChatListQuery, ChatMessageBody, ChatSummary, ChatTurn, StartChatBody, ToolResultsBody } from './schemas';

const tag = 'Chats';

/**
 * What a chat turn touches: the table, the knowledge-base index and passages (grounding), the
 * model, sealed tool secrets (webhook tools sign their requests), and the event and analysis
 * queues. A turn may take the whole 25 s budget (TURN_BUDGET_MS), inside API Gateway's 30 s.
 */
const turnAccess: Access = { table: 'RW', bucket: 'R', bucketPrefixes: objectKeys.grantPatterns, llm: true, secrets: true, queues: ['event-fanout', 'chat-analysis'] };
const turnErrors = {
  409: 'The chat has ended, is `requires_action` (or, for tool results, is not), or another turn of it is running (refused before it runs anything)',
  422: 'The chat\'s agent was deleted or is inactive',
  502: 'The model refused the request in a way retrying cannot cure (a wrong key, an unknown model, a rejected request): `error.details` has `reason` and `provider_message`; no `Retry-After`',
  503: 'The model failed or timed out and retrying may cure it (`Retry-After` says when); when its tools had run, the turn is kept (`details.kept`) and the same message continues it',
} as const;

export const startChat = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/chats', operationId: 'startChat', tag, auth: true,
  summary: 'Start a chat with an active agent (its filled `begin_message` opens it when `start_speaker` is `agent`)',
  entry: 'functions/chats/start.ts', body: StartChatBody,
  successMessage: 'Chat started', access: { table: 'RW', queues: ['event-fanout'] },
});

export const sendChatMessage = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/chats/{id}/messages', operationId: 'sendChatMessage', tag, auth: true,
  summary: 'Send one user message: the agent answers (grounded in its knowledge base, calling its tools); answers what the turn added',
  entry: 'functions/chats/send-message.ts', params: IdParams, body: ChatMessageBody,
  successMessage: 'Message answered', access: turnAccess, errors: turnErrors, timeoutSeconds: 29, memoryMb: 1024, streams: true,
});

export const submitChatToolResults = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/chats/{id}/tool-results', operationId: 'submitChatToolResults', tag, auth: true,
  summary: 'Answer every pending `function` tool call of a `requires_action` chat; the turn goes on',
  entry: 'functions/chats/tool-results.ts', params: IdParams, body: ToolResultsBody,
  successMessage: 'Tool results accepted', access: turnAccess, errors: turnErrors, timeoutSeconds: 29, memoryMb: 1024, streams: true,
});

export const endChat = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/chats/{id}/end', operationId: 'endChat', tag, auth: true,
  summary: 'End a chat (`user_ended`); an ended chat is answered unchanged',
  entry: 'functions/chats/end.ts', params: IdParams,
  successMessage: 'Chat ended', access: { table: 'RW', queues: ['event-fanout', 'chat-analysis'] },
});

export const getChat = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/chats/{id}', operationId: 'getChat', tag, auth: true,
  summary: 'Get a chat with every message', entry: 'functions/chats/get.ts', params: IdParams, access: { table: 'R' },
});

export const listChats = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/chats', operationId: 'listChats', tag, auth: true,
  summary: 'List chats, newest first (without messages); filters `agent_id`, `contact_id`, `status`, `channel`, `from`, `to`',
  entry: 'functions/chats/list.ts', query: ChatListQuery, list: true, access: { table: 'R' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  startChat.response = Chat;
  sendChatMessage.response = ChatTurn;
  submitChatToolResults.response = ChatTurn;
  endChat.response = Chat;
  getChat.response = Chat;
  listChats.response = ChatSummary;
}
