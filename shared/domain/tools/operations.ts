import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { CreateToolBody, Tool, ToolListQuery, ToolWithSecret, UpdateToolBody } from './schemas';

const tag = 'Tools';

export const createTool = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/tools', operationId: 'createTool', tag, auth: true,
  summary: 'Create a tool (`name` and `definition` required; `webhook` tools also need `url` and get a signing `secret`, shown once)',
  entry: 'functions/tools/create.ts', body: CreateToolBody,
  successMessage: 'Tool created successfully', access: { table: 'RW', secrets: true },
});

export const listTools = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/tools', operationId: 'listTools', tag, auth: true,
  summary: 'List the organization\'s tools',
  entry: 'functions/tools/list.ts', query: ToolListQuery, list: true, access: { table: 'R' },
});

export const getTool = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/tools/{id}', operationId: 'getTool', tag, auth: true,
  summary: 'Get one tool', entry: 'functions/tools/get.ts', params: IdParams, access: { table: 'R' },
});

export const updateTool = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/tools/{id}', operationId: 'updateTool', tag, auth: true,
  summary: 'Update a tool; only supplied fields change (`definition` is replaced as a whole)',
  entry: 'functions/tools/update.ts', params: IdParams, body: UpdateToolBody,
  successMessage: 'Tool updated successfully', access: { table: 'RW' },
});

export const deleteTool = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/tools/{id}', operationId: 'deleteTool', tag, auth: true,
  summary: 'Delete a tool permanently; agents that selected it lose it from `selected_tools`',
  entry: 'functions/tools/delete.ts', params: IdParams,
  successMessage: 'Tool deleted successfully', access: { table: 'RW' },
});

export const rotateToolSecret = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/tools/{id}/rotate-secret', operationId: 'rotateToolSecret', tag, auth: true,
  summary: 'A new signing secret for a webhook tool, answered once; the old one keeps signing beside it for 24 h',
  entry: 'functions/tools/rotate-secret.ts', params: IdParams,
  successMessage: 'Tool secret rotated', access: { table: 'RW', secrets: true },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createTool.response = ToolWithSecret;
  listTools.response = Tool;
  getTool.response = Tool;
  updateTool.response = Tool;
  rotateToolSecret.response = ToolWithSecret;
}
