import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { recordingKeys } from '../calls/recordings';
import { Call } from '../calls/schemas';
import { Chat } from '../chats/schemas';
import { ConversationAnalytics, ConversationAnalyticsQuery } from './schemas';

const analysisErrors = {
  409: 'The conversation has not ended yet',
  502: 'The analysis provider refused the request in a way retrying cannot cure (a wrong key, an unknown model, a refusal): `error.details` has `reason` and `provider_message`',
  503: 'The analysis provider failed or timed out and retrying may cure it (`Retry-After`); the stored analysis is unchanged',
} as const;

export const getConversationAnalytics = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/analytics/conversations', operationId: 'getConversationAnalytics', tag: 'Analytics', auth: true,
  summary: 'Conversations ended per day or ISO week (UTC, or the local days of an IANA `timezone`) and in total: calls, chats, ends by reason, successful, analyzed, minutes, tokens, cost and per boolean/enum analysis field the count per value; filters agent_id and channel (call, chat); from and to (dates or ISO timestamps, at most 366 days); timezone: an IANA zone (default UTC) whose local days and weeks are counted',
  entry: 'functions/analytics/conversations.ts', query: ConversationAnalyticsQuery,
  access: { table: 'R' },
});

export const reanalyzeCall = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/calls/{id}/analysis', operationId: 'reanalyzeCall', tag: 'Calls', auth: true,
  summary: 'Run an ended call\'s analysis again with its agent\'s current settings (analysis fields, success criteria, model, prompt); replaces the analysis, emits `call.analyzed` again and moves the analytics counts',
  entry: 'functions/calls/analyze.ts', params: IdParams, errors: analysisErrors, timeoutSeconds: 29,
  successMessage: 'Call analysed', access: { table: 'RW', analysis: true, queues: ['event-fanout'], bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns },
});

export const reanalyzeChat = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/chats/{id}/analysis', operationId: 'reanalyzeChat', tag: 'Chats', auth: true,
  summary: 'Run an ended chat\'s analysis again with its agent\'s current settings (analysis fields, success criteria, model, prompt); replaces the analysis, emits `chat.analyzed` again and moves the analytics counts',
  entry: 'functions/chats/analyze.ts', params: IdParams, errors: analysisErrors, timeoutSeconds: 29,
  successMessage: 'Chat analysed', access: { table: 'RW', analysis: true, queues: ['event-fanout'] },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  getConversationAnalytics.response = ConversationAnalytics;
  reanalyzeCall.response = Call;
  reanalyzeChat.response = Chat;
}
