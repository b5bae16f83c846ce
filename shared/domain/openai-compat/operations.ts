import { defineOperation, type Access } from '../../http/operation';
import { objectKeys } from '../rag/object-keys';
import { ChatCompletionBody } from './schemas';

const tag = 'OpenAI-compatible';

/** What a completion touches: as a chat turn (grounding, the model, webhook tools' secrets), and the usage counters. */
const completionAccess: Access = { table: 'RW', bucket: 'R', bucketPrefixes: objectKeys.grantPatterns, llm: true, secrets: true };

export const openAiChatCompletions = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/openai/v1/chat/completions', operationId: 'openAiChatCompletions', tag, auth: true,
  summary: 'OpenAI Chat Completions with an agent as the model (`model` = agent id); `stream: true` answers `chat.completion.chunk` events; errors are OpenAI-shaped',
  entry: 'functions/openai/chat-completions.ts', body: ChatCompletionBody, rawResponse: true, rawContentType: 'application/json',
  openAiCompatible: true, streams: true, access: completionAccess, timeoutSeconds: 29, memoryMb: 1024,
});

export const openAiListModels = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/openai/v1/models', operationId: 'openAiListModels', tag, auth: true,
  summary: 'The organization\'s active agents as OpenAI models (`{ object: "list", data: [{ id, object: "model", created, owned_by }] }`)',
  entry: 'functions/openai/models.ts', rawResponse: true, rawContentType: 'application/json', openAiCompatible: true, access: { table: 'R' },
});
