import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { Agent, AgentListQuery, AgentStatusBody, CreateAgentBody, UpdateAgentBody } from './schemas';

const tag = 'Agents';

export const createAgent = defineOperation({
  method: 'POST', path: '/api/v1/agents', operationId: 'createAgent', tag, auth: true,
  summary: 'Create an agent (`name` required; see docs/api.md for defaults)',
  entry: 'functions/agents/create.ts', body: CreateAgentBody, response: Agent,
  successMessage: 'Agent created successfully', access: { table: 'RW' },
});

export const listAgents = defineOperation({
  method: 'GET', path: '/api/v1/agents', operationId: 'listAgents', tag, auth: true,
  summary: 'List the organization\'s agents, optionally by status',
  entry: 'functions/agents/list.ts', query: AgentListQuery, response: Agent, list: true, access: { table: 'R' },
});

export const getAgent = defineOperation({
  method: 'GET', path: '/api/v1/agents/{id}', operationId: 'getAgent', tag, auth: true,
  summary: 'Get one agent', entry: 'functions/agents/get.ts', params: IdParams, response: Agent, access: { table: 'R' },
});

export const updateAgent = defineOperation({
  method: 'PATCH', path: '/api/v1/agents/{id}', operationId: 'updateAgent', tag, auth: true,
  summary: 'Update an agent; only supplied fields change',
  entry: 'functions/agents/update.ts', params: IdParams, body: UpdateAgentBody, response: Agent,
  successMessage: 'Agent updated successfully', access: { table: 'RW' },
});

export const updateAgentStatus = defineOperation({
  method: 'PATCH', path: '/api/v1/agents/{id}/status', operationId: 'updateAgentStatus', tag, auth: true,
  summary: 'Change an agent\'s status', entry: 'functions/agents/update-status.ts',
  params: IdParams, body: AgentStatusBody, response: Agent,
  successMessage: 'Agent status updated successfully', access: { table: 'RW' },
});

export const deleteAgent = defineOperation({
  method: 'DELETE', path: '/api/v1/agents/{id}', operationId: 'deleteAgent', tag, auth: true,
  summary: 'Delete an agent permanently', entry: 'functions/agents/delete.ts', params: IdParams,
  successMessage: 'Agent deleted successfully', access: { table: 'RW' },
});
