import { defineOperation, type Access } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { objectKeys } from '../rag/object-keys';
import { ChatMessageBody, ChatTurn, ToolResultsBody } from '../chats/schemas';
import { StartWidgetChatBody, WidgetChat, WidgetChatParams, WidgetChatStarted } from './chat-schemas';
import { WidgetCallStarted } from '../calls/web-call-schemas';
import { CreateWidgetBody, UpdateWidgetBody, WidgetConfig, WidgetListQuery, WidgetSettings } from './schemas';

const tag = 'Widget settings';

export const createWidgetSettings = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/widget-settings', operationId: 'createWidgetSettings', tag, auth: true,
  summary: 'Create widget settings (`name` required; see docs/api.md for defaults)',
  entry: 'functions/widget-settings/create.ts', body: CreateWidgetBody,
  successMessage: 'Widget settings created successfully', access: { table: 'RW' },
});

export const listWidgetSettings = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/widget-settings', operationId: 'listWidgetSettings', tag, auth: true,
  summary: 'List the organization\'s widget settings (deactivated ones included)',
  entry: 'functions/widget-settings/list.ts', query: WidgetListQuery, list: true, access: { table: 'R' },
});

export const getWidgetSettings = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/widget-settings/{id}', operationId: 'getWidgetSettings', tag, auth: true,
  summary: 'Get widget settings (also once deactivated)', entry: 'functions/widget-settings/get.ts',
  params: IdParams, access: { table: 'R' },
});

export const updateWidgetSettings = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/widget-settings/{id}', operationId: 'updateWidgetSettings', tag, auth: true,
  summary: 'Update widget settings; only supplied fields change (`is_active: true` reactivates)',
  entry: 'functions/widget-settings/update.ts', params: IdParams, body: UpdateWidgetBody,
  successMessage: 'Widget settings updated successfully', access: { table: 'RW' },
});

export const deleteWidgetSettings = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/widget-settings/{id}', operationId: 'deleteWidgetSettings', tag, auth: true,
  summary: 'Deactivate widget settings: the agents tied to them are no longer reachable through the widget',
  entry: 'functions/widget-settings/deactivate.ts', params: IdParams,
  successMessage: 'Widget settings deactivated successfully', access: { table: 'RW' },
});

export const getWidgetConfig = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/widget/{id}/config', operationId: 'getWidgetConfig', tag: 'Widget', auth: false,
  summary: 'Public (no key): what the embeddable widget needs; 404 once deactivated or for an origin not in `allowed_origins`',
  entry: 'functions/widget/config.ts', params: IdParams, access: { table: 'R' },
});

export const preflightWidgetConfig = /* @__PURE__ */ defineOperation({
  method: 'OPTIONS', path: '/api/v1/widget/{id}/config', operationId: 'preflightWidgetConfig', tag: 'Widget', auth: false,
  summary: 'Public (no key): CORS preflight of the widget config, under the same origin rule',
  entry: 'functions/widget/preflight.ts', params: IdParams,
  successMessage: 'Preflight accepted', access: { table: 'R' },
});

// The widget's public chats (shared/domain/widgets/public-chats.ts): no API key; the page's origin
// is checked on every call, and a chat's calls carry its token (`Authorization: Bearer`).
const chatTag = 'Widget';
const tokenHeader = [{ name: 'Authorization', description: '`Bearer <token>`: the token `POST /widget/{id}/chats` answered for this chat', required: true }];
/** A turn of a widget chat touches what a chat turn touches (shared/domain/chats/operations.ts), and signs or verifies chat tokens. */
const turnAccess: Access = { table: 'RW', bucket: 'R', bucketPrefixes: objectKeys.grantPatterns, llm: true, secrets: true, tokens: true, queues: ['event-fanout', 'chat-analysis'] };
const chatErrors = {
  401: 'The token is missing, forged or expired',
  404: 'The widget does not exist, is deactivated (`details.reason` `widget_inactive`, readable by an allowed page), or does not admit the page\'s origin (a POST without `Origin` is refused the same way); or the token is another chat\'s',
} as const;
const turnErrors = {
  ...chatErrors,
  409: 'The chat has ended, is `requires_action` (or, for tool results, is not), or another turn of it is running',
  422: 'The chat\'s agent was deleted or is inactive',
  429: 'Over the chat\'s message rate or the widget\'s `daily_message_limit` (until the next UTC day); retry after `Retry-After` seconds',
  502: 'The model refused the request in a way retrying cannot cure (a wrong key, an unknown model, a rejected request): `error.details` has `reason` and `provider_message`; no `Retry-After`',
  503: 'The model failed or timed out and retrying may cure it (`Retry-After` says when); when its tools had run, the turn is kept (`details.kept`) and the same message continues it',
} as const;

export const getWidgetEmbedScript = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/widget/embed.js', operationId: 'getWidgetEmbedScript', tag: chatTag, auth: false,
  summary: 'Public (no key): the embeddable widget\'s script (a `script` element with this `src`, `data-widget-id` and `async`); cacheable, with a strong `ETag` (304 on `If-None-Match`), gzip-encoded when accepted',
  entry: 'functions/widget/embed.ts', rawResponse: true, rawContentType: 'text/javascript', access: {},
  // The committed build of `npm run widget:build` (a unit test keeps it current), read from LAMBDA_TASK_ROOT; never built by the API.
  bundleFiles: [{ from: 'widget/dist/embed.js', to: 'embed.js' }],
  headers: [{ name: 'If-None-Match', description: 'The `ETag` of a copy the client holds: 304 when it is current', required: false }],
});

export const headWidgetEmbedScript = /* @__PURE__ */ defineOperation({
  method: 'HEAD', path: '/api/v1/widget/embed.js', operationId: 'headWidgetEmbedScript', tag: chatTag, auth: false,
  summary: 'Public (no key): the headers `GET /widget/embed.js` answers (`ETag`, `Content-Length`, caching; 304 on `If-None-Match`) and no body',
  entry: 'functions/widget/embed-head.ts', rawResponse: true, rawContentType: 'text/javascript', access: {},
  bundleFiles: [{ from: 'widget/dist/embed.js', to: 'embed.js' }],
  headers: [{ name: 'If-None-Match', description: 'The `ETag` of a copy the client holds: 304 when it is current', required: false }],
});

export const startWidgetChat = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/widget/{id}/chats', operationId: 'startWidgetChat', tag: chatTag, auth: false,
  summary: 'Public (no key): start a chat (`channel` `widget`) with the widget\'s agent; answers the chat and a `token` for it alone, valid 24 h. `dynamic_variables` only of the widget\'s `public_variables`, no `metadata` (400). Limits: 10 new chats a minute per client address, 600 per widget (429 with `Retry-After`)',
  entry: 'functions/widget/start-chat.ts', params: IdParams, body: StartWidgetChatBody, bodyOptional: true,
  successMessage: 'Chat started', access: { table: 'RW', tokens: true, queues: ['event-fanout'] },
  errors: { 404: chatErrors[404], 422: 'No active agent is tied to the widget', 429: 'Over 10 new chats a minute from this address, or 600 for the widget; retry after `Retry-After` seconds' },
});

export const sendWidgetChatMessage = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/widget/{id}/chats/{chat_id}/messages', operationId: 'sendWidgetChatMessage', tag: chatTag, auth: false,
  summary: 'Public (token): one visitor message, a turn as on `POST /chats/{id}/messages`; at most 20 turns a minute per chat and the widget\'s `daily_message_limit` a UTC day (429 with `Retry-After`)',
  entry: 'functions/widget/send-message.ts', params: WidgetChatParams, body: ChatMessageBody, headers: tokenHeader,
  successMessage: 'Message answered', access: turnAccess, errors: turnErrors, timeoutSeconds: 29, memoryMb: 1024, streams: true,
});

export const submitWidgetChatToolResults = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/widget/{id}/chats/{chat_id}/tool-results', operationId: 'submitWidgetChatToolResults', tag: chatTag, auth: false,
  summary: 'Public (token): the page answers the chat\'s pending `function` tool calls (the script calls `window.VoiceAgentWidget.onToolCall`); the turn goes on, counted toward the chat\'s 20 turns a minute (429 with `Retry-After`)',
  entry: 'functions/widget/tool-results.ts', params: WidgetChatParams, body: ToolResultsBody, headers: tokenHeader,
  successMessage: 'Tool results accepted', access: turnAccess, errors: turnErrors, timeoutSeconds: 29, memoryMb: 1024, streams: true,
});

export const getWidgetChat = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/widget/{id}/chats/{chat_id}', operationId: 'getWidgetChat', tag: chatTag, auth: false,
  summary: 'Public (token): the chat with what was said (user and agent messages)',
  entry: 'functions/widget/get-chat.ts', params: WidgetChatParams, headers: tokenHeader,
  access: { table: 'R', tokens: true }, errors: chatErrors,
});

export const endWidgetChat = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/widget/{id}/chats/{chat_id}/end', operationId: 'endWidgetChat', tag: chatTag, auth: false,
  summary: 'Public (token): end the chat (`user_ended`); an ended chat is answered unchanged',
  entry: 'functions/widget/end-chat.ts', params: WidgetChatParams, headers: tokenHeader,
  successMessage: 'Chat ended', access: { table: 'RW', tokens: true, queues: ['event-fanout', 'chat-analysis'] }, errors: chatErrors,
});

export const startWidgetCall = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/widget/{id}/calls', operationId: 'startWidgetCall', tag: chatTag, auth: false,
  summary: 'Public (no key): start a web call with the widget\'s agent (its `voice_enabled` must be true): the call\'s id, the voice runtime\'s WebSocket `url` and a one-use `token` valid 60 s (docs/api.md, "Web calls"). Origin, deactivation and the new-chat limits as `POST /widget/{id}/chats`',
  entry: 'functions/widget/start-call.ts', params: IdParams, body: StartWidgetChatBody, bodyOptional: true,
  successMessage: 'Call started', access: { table: 'RW', tokens: true },
  errors: { 404: 'The widget does not exist, is deactivated (`widget_inactive`), takes no calls (`voice_disabled`), or does not admit the page\'s origin', 422: 'No active agent is tied to the widget', 429: 'Over 10 new chats or calls a minute from this address, or 600 for the widget; or the organization\'s live calls are at its concurrency limit (`CONCURRENCY_LIMIT`, `error.details` `limit` and `in_progress`): nothing is created; retry after `Retry-After` seconds', 503: 'No speech model is configured: `error.details.setting` names REALTIME_API_KEY (`settings` adds REALTIME_BASE_URL for another server)' },
});

/** The CORS preflights of the chat paths: one small function per path, as API Gateway routes them. */
const preflight = (operationId: string, path: string, entry: string, params: typeof IdParams | typeof WidgetChatParams, streams = false) => defineOperation({
  method: 'OPTIONS', path, operationId, tag: chatTag, auth: false,
  summary: 'Public (no key): CORS preflight, under the widget\'s origin rule',
  entry, params, successMessage: 'Preflight accepted', access: { table: 'R' },
  // The turns' preflights are served by the streaming REST API too (lib/streaming-api.ts), as their turns are.
  ...(streams ? { streams: true } : {}),
});

export const preflightWidgetCalls = /* @__PURE__ */ preflight('preflightWidgetCalls', '/api/v1/widget/{id}/calls', 'functions/widget/preflight-calls.ts', IdParams);
export const preflightWidgetChats = /* @__PURE__ */ preflight('preflightWidgetChats', '/api/v1/widget/{id}/chats', 'functions/widget/preflight-chats.ts', IdParams);
export const preflightWidgetChat = /* @__PURE__ */ preflight('preflightWidgetChat', '/api/v1/widget/{id}/chats/{chat_id}', 'functions/widget/preflight-chat.ts', WidgetChatParams);
export const preflightWidgetChatMessages = /* @__PURE__ */ preflight('preflightWidgetChatMessages', '/api/v1/widget/{id}/chats/{chat_id}/messages', 'functions/widget/preflight-chat-messages.ts', WidgetChatParams, true);
export const preflightWidgetChatToolResults = /* @__PURE__ */ preflight('preflightWidgetChatToolResults', '/api/v1/widget/{id}/chats/{chat_id}/tool-results', 'functions/widget/preflight-chat-tool-results.ts', WidgetChatParams, true);
export const preflightWidgetChatEnd = /* @__PURE__ */ preflight('preflightWidgetChatEnd', '/api/v1/widget/{id}/chats/{chat_id}/end', 'functions/widget/preflight-chat-end.ts', WidgetChatParams);

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createWidgetSettings.response = WidgetSettings;
  listWidgetSettings.response = WidgetSettings;
  getWidgetSettings.response = WidgetSettings;
  updateWidgetSettings.response = WidgetSettings;
  getWidgetConfig.response = WidgetConfig;
  startWidgetChat.response = WidgetChatStarted;
  sendWidgetChatMessage.response = ChatTurn;
  submitWidgetChatToolResults.response = ChatTurn;
  getWidgetChat.response = WidgetChat;
  endWidgetChat.response = WidgetChat;
  startWidgetCall.response = WidgetCallStarted;
}
