import { defineOperation, type Access } from '../../http/operation';
import { objectKeys } from '../rag/object-keys';
import { ChatCompletionBody, ModelParams } from './schemas';

const tag = 'OpenAI-compatible';

/** What a completion touches: as a chat turn (grounding, the model, webhook tools' secrets), and the usage counters. */
const completionAccess: Access = { table: 'RW', bucket: 'R', bucketPrefixes: objectKeys.grantPatterns, llm: true, secrets: true };

export const openAiChatCompletions = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/openai/v1/chat/completions', operationId: 'openAiChatCompletions', tag, auth: true,
  summary: 'OpenAI Chat Completions with an agent as the model (`model` = agent id); `stream: true` answers `chat.completion.chunk` events; errors are OpenAI-shaped',
  entry: 'functions/openai/chat-completions.ts', body: ChatCompletionBody, rawResponse: true, rawContentType: 'application/json',
  openAiCompatible: true, streams: true, access: completionAccess, timeoutSeconds: 29, memoryMb: 1024,
  errors: {
    404: 'No active agent (or version of it) of that `model` (`code` `model_not_found`)',
    502: 'The agent\'s model refused the request in a way retrying cannot cure',
    503: 'The agent\'s model did not answer; retry later (`Retry-After`)',
  },
});

export const openAiListModels = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/openai/v1/models', operationId: 'openAiListModels', tag, auth: true,
  summary: 'The organization\'s active agents as OpenAI models, with `<id>@draft` and `<id>@<version>` for each published version (`{ object: "list", data: [{ id, object: "model", created, owned_by }] }`)',
  entry: 'functions/openai/models.ts', rawResponse: true, rawContentType: 'application/json', openAiCompatible: true, access: { table: 'R' },
});

export const openAiRetrieveModel = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/openai/v1/models/{model}', operationId: 'openAiRetrieveModel', tag, auth: true,
  summary: 'One model (`<agent id>`, `<agent id>@<version>` or `<agent id>@draft`) as OpenAI\'s `GET /models/{model}` answers it (`{ id, object: "model", created, owned_by }`)',
  entry: 'functions/openai/models-get.ts', params: ModelParams, rawResponse: true, rawContentType: 'application/json', openAiCompatible: true, access: { table: 'R' },
});
